// Command bench measures Folio's storage paths and prints Markdown tables.
//
//	go run ./bench                  # the default subset, under 3 minutes on 2 cores
//	go run ./bench -quick           # every suite once at small sizes, under 30 s
//	go run ./bench -full            # the whole matrix
//	go run ./bench -suite read-paths -json out.json -svg readpaths.svg
//
// # Model
//
// Each suite builds its data in a fresh directory under -dir, runs every
// configuration of its matrix several times (-runs), and reports each
// figure as the median of the runs with their min and max; a figure of a
// single run, and one whose runs disagree by more than the noise of its
// column, are marked. The report names the machine once (CPU, cores,
// memory, Go version, kernel, and the filesystem of the data directory,
// from statfs) and every row the page-cache state its runs were verified
// to be in (mincore). When the read-paths suite ran, the report ends with
// the answer to "mmap or sendfile?" computed from its figures.
//
// The read-paths suite compares Folio's two read paths on the same segment
// file: in-process (mmap views against pread into a reused buffer) and to a
// consumer in another process over loopback TCP (positional sendfile
// against write from the mapping against pread plus write). The consumer
// process is this binary, re-executed with a flag the usage text does not
// list; it drains its connections and reports its own getrusage, so the
// sender's CPU time and the reader's are measured apart. A third table
// reads one record at a time at random offsets in the process (mmap view
// against pread), warm and cold, with what each path made the kernel read
// from the disk.
//
// The other suites go through the partition log (package log): append
// measures records/s and MB/s per flush policy beside a plain file written
// in the same run, and FlushSync under 1, 8 and 64 concurrent producers;
// latency measures produce-to-consume percentiles at fixed offered rates
// through Append, Wait and Read; recovery times Open of a many-segment log
// after a clean close and after a simulated crash; partitions measures
// aggregate throughput of 1 to 1,000 logs sharing one ResourceCaps and the
// descriptors and mappings they hold.
//
// The wire suites go through the Kafka endpoint (package transport), served
// by a server child process (this binary again) that reports its own
// getrusage, heap, resident set and goroutines: fetch compares a minimal
// kmsg fetcher and a kgo consumer against a raw sendfile loop per read path;
// wire-produce compares a kgo producer with the in-process Producer, with
// franz-go's kfake as a reference; wire-latency measures produce-to-fetch
// latency with a long-polling kgo consumer; conns measures the server's CPU
// and memory with 1,000 idle connections and 1,000 parked fetches, and its
// shutdown with all of them connected.
//
// Every figure is checked against what was written (record counts, value
// sums, CRC-32C of what crossed the socket, the bytes recovery cut), so a
// path that returns wrong bytes fails the suite instead of looking fast.
//
// bench/README.md explains each suite, what it controls and how to read
// the output.
//
// # Caveats
//
//   - Cold-cache runs drop the file's pages with fdatasync and
//     POSIX_FADV_DONTNEED and check with mincore; they need Linux and a disk
//     filesystem. In a virtual machine the host may still cache the disk.
//   - CPU time is getrusage(RUSAGE_SELF) around windows in which the process
//     does nothing else: the garbage collector is held off and the progress
//     line is written only between runs.
//   - Figures from a shared or busy machine vary; the min–max range of the
//     runs shows by how much.
package main

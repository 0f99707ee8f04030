package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/foliolog/folio/readpath"
	"github.com/foliolog/folio/record"
)

// readPathsPlan is the matrix of the read-paths suite.
type readPathsPlan struct {
	// DataBytes is the size of each segment file, read whole by every
	// consumer in every run.
	DataBytes   int64
	RecordSizes []int
	BatchBytes  []int
	FetchBytes  []int
	Consumers   []int
	// ChildBuf is the reading child's read(2) buffer per connection.
	ChildBuf int
	// PointReads and ColdPointReads are the reads of one point-read run
	// with a warm and a cold cache; the cold runs read the first
	// ColdPointReads of the same offsets.
	PointReads, ColdPointReads int
}

func readPathsPlanFor(cfg *config) readPathsPlan {
	p := readPathsPlan{
		RecordSizes: []int{100, 1 << 10, 16 << 10},
		// Kafka producers' default batch.size and consumers' default
		// max.partition.fetch.bytes.
		BatchBytes: []int{16 << 10},
		FetchBytes: []int{1 << 20},
		ChildBuf:   256 << 10,
	}
	procs := runtime.GOMAXPROCS(0)
	// Point reads: enough warm ones for a steady rate (about a tenth of
	// a second a run on the development machine), and cold ones that stay
	// a quarter of the default file's batches or less, so that pread
	// finds most of their batches uncached (pointCount bounds them by the
	// batches of each dataset too).
	var point, cold int64
	switch cfg.Mode {
	case modeQuick:
		p.DataBytes = cfg.scaled(4<<20, 64<<10)
		p.Consumers = []int{1, 2}
		point, cold = 2_000, 200
	case modeFull:
		p.DataBytes = cfg.scaled(512<<20, 64<<10)
		p.BatchBytes = []int{16 << 10, 1 << 20}
		p.FetchBytes = []int{64 << 10, 1 << 20, 8 << 20}
		p.Consumers = uniqueSorted([]int{1, procs, 4 * procs})
		point, cold = 100_000, 5_000
	default:
		p.DataBytes = cfg.scaled(64<<20, 64<<10)
		p.FetchBytes = []int{64 << 10, 1 << 20}
		p.Consumers = []int{1, 4}
		point, cold = 20_000, 1_000
	}
	p.PointReads, p.ColdPointReads = int(cfg.scaled(point, 100)), int(cfg.scaled(cold, 20))
	return p
}

func uniqueSorted(v []int) []int {
	v = slices.Clone(v)
	slices.Sort(v)
	return slices.Compact(v)
}

// A read path under test. In-process consumers use the first two, the
// child over TCP the last three.
type pathKind int

const (
	pathMmapView   pathKind = iota // in-process: Bytes of an mmap view
	pathPread                      // in-process: Bytes of a sendfile-kind view: pread into a reused buffer
	pathSendfile                   // TCP: positional sendfile
	pathMmapWrite                  // TCP: write(2) from the mapping
	pathPreadWrite                 // TCP: pread into a buffer, then write(2)
)

var pathNames = map[pathKind]string{
	pathMmapView:   "mmap view",
	pathPread:      "pread",
	pathSendfile:   "sendfile",
	pathMmapWrite:  "mmap + write",
	pathPreadWrite: "pread + write",
}

func (p pathKind) String() string { return pathNames[p] }

// sourceKind is the readpath Source a path reads through.
func (p pathKind) sourceKind() readpath.Kind {
	if p == pathMmapView || p == pathMmapWrite {
		return readpath.Mmap
	}
	return readpath.Sendfile
}

// readRun is what one run measured.
type readRun struct {
	Resident float64 // fraction of the file resident before the run
	Bytes    int64   // bytes every consumer together moved
	Records  int64   // records the in-process consumers decoded
	Elapsed  time.Duration
	Sender   usage // this process across the window
	Reader   usage // the child across its window (TCP only)
	Reads    int64 // read(2) calls of the child that returned data (TCP only)
}

// allPaths is the order paths run in, and rows appear in, per configuration.
var allPaths = []pathKind{pathMmapView, pathPread, pathSendfile, pathMmapWrite, pathPreadWrite}

func runReadPaths(ctx context.Context, e *env) (tables []*table, err error) {
	plan := readPathsPlanFor(e.cfg)
	caches := []cacheState{warmCache}
	var notes []string
	if coldSupported(e.dir) {
		caches = append(caches, coldCache)
	} else {
		notes = append(notes, "Cold-cache rows are missing: this platform offers no unprivileged page-cache eviction (posix_fadvise) or residency check (mincore).")
	}
	if e.machine.Virtual {
		notes = append(notes, "This is a virtual machine: a cold run is cold in this guest's page cache (mincore says so), but the host may still cache the disk, so cold figures may be faster than real disk reads.")
	}
	if volatileFS(e.machine.Filesystem) {
		notes = append(notes, "The data directory is on "+e.machine.Filesystem+", which cannot evict its pages: cold runs stay resident (see the cache column); use -dir on a disk filesystem.")
	}

	inproc := &table{
		Suite:  suiteReadPaths,
		Title:  "in-process consumer: mmap views versus pread into a reused buffer",
		Params: []string{"path", "record", "batch", "fetch", "consumers"},
		Columns: []column{
			{"throughput", "MB/s"}, {"records", "M/s"}, {"CPU", "ns/B"},
			{"minor faults", "per MiB"}, {"major faults", "per MiB"},
		},
	}
	tcp := &table{
		Suite:  suiteReadPaths,
		Title:  "consumer in a child process over loopback TCP",
		Params: []string{"path", "record", "batch", "fetch", "consumers"},
		Columns: []column{
			{"throughput", "MB/s"}, {"sender CPU", "ns/B"}, {"reader CPU", "ns/B"},
			{"sender minor faults", "per MiB"}, {"sender major faults", "per MiB"},
			{"reader bytes per read", "KiB"},
		},
	}
	point := newPointTable()
	tables = []*table{inproc, tcp, point}

	child, err := startReaderChild(ctx)
	if err != nil {
		return nil, err
	}
	defer func() {
		// A child that does not quit cleanly may have misreported too.
		if cerr := child.close(); cerr != nil && err == nil {
			err = cerr
		}
	}()

	total := len(plan.RecordSizes) * len(plan.BatchBytes) * (len(plan.FetchBytes)*len(plan.Consumers)*len(allPaths) + len(pointPaths)) * len(caches)
	n := 0
	var sockNote string
	for _, rs := range plan.RecordSizes {
		for _, bb := range plan.BatchBytes {
			dsDir := filepath.Join(e.dir, fmt.Sprintf("r%d-b%d", rs, bb))
			if err := os.Mkdir(dsDir, 0o755); err != nil {
				return tables, fmt.Errorf("bench: %w", err)
			}
			e.step(suiteReadPaths, "writing %s of %s records in %s batches", formatBytes(plan.DataBytes), formatBytes(int64(rs)), formatBytes(int64(bb)))
			ds, err := writeDataset(dsDir, batchPlan{RecSize: rs, BatchBytes: bb, Total: plan.DataBytes})
			if err != nil {
				return tables, err
			}
			// One untimed pass per TCP path proves the child receives the
			// file's exact bytes before any of its runs is timed.
			for _, p := range []pathKind{pathSendfile, pathMmapWrite, pathPreadWrite} {
				note, err := verifyTCP(child, ds, p, plan)
				if err != nil {
					return tables, err
				}
				sockNote = note
			}
			for _, fb := range plan.FetchBytes {
				fp := fetchPlan(ds.Batches, fb)
				if err := checkFetchPlan(ds, fp, fb); err != nil {
					return tables, err
				}
				// One untimed run per path at the highest concurrency fills
				// the buffer pools (a pread buffer per consumer and fetch
				// size) and the child's buffers, so no timed run pays for
				// first-time allocation.
				maxCons := slices.Max(plan.Consumers)
				for _, p := range allPaths {
					e.step(suiteReadPaths, "warm-up: %s, %s records, fetch %s, %d consumer(s)", p, formatBytes(int64(rs)), formatBytes(int64(fb)), maxCons)
					if p == pathMmapView || p == pathPread {
						_, err = inprocRun(ds, p, fp, maxCons, warmCache)
					} else {
						_, err = tcpRun(child, ds, p, fp, maxCons, warmCache, plan.ChildBuf)
					}
					if err != nil {
						return tables, fmt.Errorf("warm-up %s: %w", p, err)
					}
				}
				for _, cons := range plan.Consumers {
					for _, c := range caches {
						params := []string{"", formatBytes(int64(rs)), formatBytes(int64(bb)), formatBytes(int64(fb)), strconv.Itoa(cons)}
						for _, p := range allPaths {
							n++
							if err := ctx.Err(); err != nil {
								return tables, err
							}
							runs := make([]readRun, 0, e.cfg.Runs)
							for r := range e.cfg.Runs {
								e.step(suiteReadPaths, "[%d/%d] %s, %s records, fetch %s, %d consumer(s), %s, run %d/%d",
									n, total, p, params[1], params[3], cons, c, r+1, e.cfg.Runs)
								var rr readRun
								if p == pathMmapView || p == pathPread {
									rr, err = inprocRun(ds, p, fp, cons, c)
								} else {
									rr, err = tcpRun(child, ds, p, fp, cons, c, plan.ChildBuf)
								}
								if err != nil {
									return tables, fmt.Errorf("%s, %s records, %d consumers, %s: %w", p, params[1], cons, c, err)
								}
								runs = append(runs, rr)
							}
							params[0] = p.String()
							if err := addReadRow(inproc, tcp, p, params, c, runs); err != nil {
								return tables, err
							}
						}
					}
				}
			}
			if err := runPointReads(ctx, e, point, ds, plan, caches, formatBytes(int64(rs)), formatBytes(int64(bb)), &n, total); err != nil {
				return tables, err
			}
			if err := os.RemoveAll(dsDir); err != nil {
				return tables, fmt.Errorf("bench: remove dataset: %w", err)
			}
		}
	}
	dataNote := fmt.Sprintf("Each consumer reads the whole %s segment file once per run, in fetches of whole batches up to the fetch size (at least one batch), from a readpath Source opened for the run, so every mmap run maps afresh; the offset-index lookup is left out (it is the same for every path). Faults are per MiB moved. Before the timed runs of each fetch size, every path ran once untimed at the highest concurrency, so pooled buffers exist and no timed run pays for first-time allocation.", formatBytes(plan.DataBytes))
	inproc.Notes = append([]string{dataNote,
		"The consumer decodes every record (record.RecordIter, CRC check skipped: the bytes were checked on append) and sums every value byte; mmap views are touched inside readpath.Guard. CPU is getrusage(RUSAGE_SELF) across the run with the garbage collector held off.",
	}, notes...)
	tcp.Notes = append([]string{dataNote,
		fmt.Sprintf("The reader is this program re-executed as a child process: one connection per consumer over 127.0.0.1, each drained with read(2) into a %s buffer and discarded; bytes per read shows how the kernel delivered the stream. Sender CPU is getrusage(RUSAGE_SELF) of this process across the sending window only (connections set up, cache prepared and garbage collected before it); reader CPU is the child's own getrusage across its draining. Throughput runs until the child has read every byte. Before any timed run each path sent the file once to a checksumming reader and matched its CRC-32C.", formatBytes(int64(plan.ChildBuf))),
		"Go's TCP_NODELAY default is on; " + sockNote + ".",
		"mmap + write is one write(2) per fetch from the mapping; pread + write reads each fetch into a pooled buffer first; sendfile is positional sendfile(2) inside RawConn.Write.",
		"On loopback the receiver copies straight out of the sender's buffers. After write(2) those bytes were just copied by the sender's CPU and sit in its caches; after sendfile(2) they are page-cache pages no CPU has touched, so the copy sendfile saves the sender shows up, partly, as reader CPU. Over a real network the NIC reads those pages and the reader is another machine: count the sender column there.",
	}, notes...)
	ra, _ := readAheadKiB(e.dir)
	point.Notes = append(pointNotes(plan, ra), notes...)
	return tables, nil
}

func addReadRow(inproc, tcp *table, p pathKind, params []string, c cacheState, runs []readRun) error {
	var res []float64
	cols := map[string][]float64{}
	for _, r := range runs {
		res = append(res, r.Resident)
		mib := float64(r.Bytes) / (1 << 20)
		cols["mbps"] = append(cols["mbps"], mbps(r.Bytes, r.Elapsed))
		cols["recs"] = append(cols["recs"], perSecond(r.Records, r.Elapsed)/1e6)
		cols["cpu"] = append(cols["cpu"], r.Sender.nsPerByte(r.Bytes))
		cols["rcpu"] = append(cols["rcpu"], r.Reader.nsPerByte(r.Bytes))
		cols["minflt"] = append(cols["minflt"], float64(r.Sender.MinFlt)/mib)
		cols["majflt"] = append(cols["majflt"], float64(r.Sender.MajFlt)/mib)
		perRead := nan()
		if r.Reads > 0 {
			perRead = float64(r.Bytes) / float64(r.Reads) / 1024
		}
		cols["perread"] = append(cols["perread"], perRead)
	}
	cache := describeCache(c, res)
	if p == pathMmapView || p == pathPread {
		return inproc.add(params, cache, [][]float64{cols["mbps"], cols["recs"], cols["cpu"], cols["minflt"], cols["majflt"]})
	}
	return tcp.add(params, cache, [][]float64{cols["mbps"], cols["cpu"], cols["rcpu"], cols["minflt"], cols["majflt"], cols["perread"]})
}

// openSource opens the dataset for one run with the path's read path kind.
func openSource(ds *dataset, p pathKind) (readpath.Source, error) {
	f, err := os.Open(ds.Path)
	if err != nil {
		return nil, fmt.Errorf("bench: open dataset: %w", err)
	}
	src, err := readpath.Open(p.sourceKind(), readpath.OSFile(f), ds.Size)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("bench: readpath source: %w", err)
	}
	return src, nil
}

// inprocRun is one run of in-process consumers over the dataset.
func inprocRun(ds *dataset, p pathKind, plan []fetch, consumers int, c cacheState) (readRun, error) {
	type out struct {
		records int64
		sum     uint64
		err     error
	}
	outs := make([]out, consumers)
	rr, err := measuredRun(ds, p, c, func(src readpath.Source) error {
		var wg sync.WaitGroup
		for i := range consumers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				outs[i].records, outs[i].sum, outs[i].err = consumeAll(src, p, plan)
			}()
		}
		wg.Wait()
		return nil
	})
	if err != nil {
		return rr, err
	}
	for i, o := range outs {
		if o.err != nil {
			return rr, fmt.Errorf("consumer %d: %w", i, o.err)
		}
		if o.records != ds.Records || o.sum != ds.ValueSum {
			return rr, fmt.Errorf("%w: consumer %d decoded %d records (sum %x), the file holds %d (sum %x)",
				ErrMismatch, i, o.records, o.sum, ds.Records, ds.ValueSum)
		}
		rr.Records += o.records
	}
	rr.Bytes = int64(consumers) * ds.Size
	return rr, nil
}

// measuredRun is the frame of one in-process run: the page cache put in
// state c, a Source of the dataset opened for path p (so every mmap run
// maps afresh), then body timed with this process's CPU and faults
// counted across it and the garbage collector held off. It fills the
// run's Resident, Elapsed and Sender; body's error ends the run.
func measuredRun(ds *dataset, p pathKind, c cacheState, body func(src readpath.Source) error) (readRun, error) {
	var rr readRun
	res, err := prepareCache(c, []string{ds.Path})
	if err != nil {
		return rr, err
	}
	rr.Resident = res
	src, err := openSource(ds, p)
	if err != nil {
		return rr, err
	}
	defer src.Close()
	restore := quiesce()
	defer restore()
	u0, err := selfUsage()
	if err != nil {
		return rr, err
	}
	t0 := time.Now()
	if err := body(src); err != nil {
		return rr, err
	}
	rr.Elapsed = time.Since(t0)
	u1, err := selfUsage()
	if err != nil {
		return rr, err
	}
	rr.Sender = u1.sub(u0)
	return rr, nil
}

var skipCRC = &record.DecodeOptions{SkipCRC: true}

// consumeAll reads the dataset fetch by fetch as an in-process consumer.
func consumeAll(src readpath.Source, p pathKind, plan []fetch) (records int64, sum uint64, err error) {
	for _, f := range plan {
		v, err := src.View(f.Pos, f.Len)
		if err != nil {
			return records, sum, err
		}
		b, err := v.Bytes()
		if err != nil {
			v.Release()
			return records, sum, err
		}
		consume := func() error {
			n, s, err := decodeFetch(b, f.Pos)
			records += n
			sum += s
			return err
		}
		if p == pathMmapView {
			// Mapped bytes fault if the file shrank under them: Guard turns
			// that into an error, as Folio's own readers do.
			err = readpath.Guard(consume)
		} else {
			err = consume()
		}
		v.Release()
		if err != nil {
			return records, sum, err
		}
	}
	return records, sum, nil
}

// decodeFetch walks the batches of one fetch and every record in them.
func decodeFetch(b []byte, pos int64) (records int64, sum uint64, err error) {
	for len(b) > 0 {
		size, err := record.CheckHeader(b)
		if err != nil {
			return records, sum, fmt.Errorf("%w: batch at %d: %v", ErrMismatch, pos, err)
		}
		if size > len(b) {
			return records, sum, fmt.Errorf("%w: batch at %d: %d bytes, fetch holds %d", ErrMismatch, pos, size, len(b))
		}
		it := record.Batch(b[:size]).Records(skipCRC)
		for it.Next() {
			r := it.Record()
			sum += touch(r.Value())
			records++
		}
		err = it.Err()
		it.Close()
		if err != nil {
			return records, sum, fmt.Errorf("%w: batch at %d: %v", ErrMismatch, pos, err)
		}
		b = b[size:]
		pos += int64(size)
	}
	return records, sum, nil
}

// sendAll sends the dataset fetch by fetch to one connection through path
// p and then half-closes it, which is how the child knows it is done.
func sendAll(src readpath.Source, p pathKind, plan []fetch, conn *net.TCPConn) error {
	for _, f := range plan {
		v, err := src.View(f.Pos, f.Len)
		if err != nil {
			return err
		}
		if p == pathPreadWrite {
			var b []byte
			if b, err = v.Bytes(); err == nil {
				_, err = conn.Write(b)
			}
		} else {
			_, err = v.WriteTo(conn)
		}
		v.Release()
		if err != nil {
			return fmt.Errorf("fetch at %d: %w", f.Pos, err)
		}
	}
	return conn.CloseWrite()
}

// tcpRun is one run of child consumers over loopback TCP.
func tcpRun(child *readerChild, ds *dataset, p pathKind, plan []fetch, consumers int, c cacheState, buf int) (readRun, error) {
	var rr readRun
	res, err := prepareCache(c, []string{ds.Path})
	if err != nil {
		return rr, err
	}
	rr.Resident = res
	src, err := openSource(ds, p)
	if err != nil {
		return rr, err
	}
	defer src.Close()
	conns, err := child.open(consumers, buf, false)
	if err != nil {
		return rr, err
	}
	defer func() {
		for _, cn := range conns {
			cn.Close()
		}
	}()
	errs := make([]error, consumers)
	restore := quiesce()
	u0, err := selfUsage()
	if err != nil {
		restore()
		return rr, err
	}
	t0 := time.Now()
	var wg sync.WaitGroup
	for i := range consumers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if errs[i] = sendAll(src, p, plan, conns[i]); errs[i] != nil {
				// Unblock the child's read of this connection.
				conns[i].Close()
			}
		}()
	}
	wg.Wait()
	u1, uerr := selfUsage()
	rep, werr := child.wait()
	rr.Elapsed = time.Since(t0)
	restore()
	if err := errors.Join(append(errs, uerr, werr)...); err != nil {
		return rr, err
	}
	rr.Sender = u1.sub(u0)
	rr.Reader = rep.Usage
	for i, n := range rep.Bytes {
		if n != ds.Size {
			return rr, fmt.Errorf("%w: connection %d received %d bytes, the file holds %d", ErrMismatch, i, n, ds.Size)
		}
		rr.Reads += rep.Reads[i]
	}
	rr.Bytes = int64(consumers) * ds.Size
	return rr, nil
}

// verifyTCP sends the dataset once through p to a checksumming child and
// checks the CRC-32C. It returns the socket buffer sizes it saw.
func verifyTCP(child *readerChild, ds *dataset, p pathKind, plan readPathsPlan) (string, error) {
	src, err := openSource(ds, p)
	if err != nil {
		return "", err
	}
	defer src.Close()
	conns, err := child.open(1, plan.ChildBuf, true)
	if err != nil {
		return "", err
	}
	defer conns[0].Close()
	snd, rcv, berr := socketBuffers(conns[0])
	note := fmt.Sprintf("the sender's socket starts with SO_SNDBUF %d B and SO_RCVBUF %d B, left to the kernel's autotuning", snd, rcv)
	if berr != nil {
		note = "socket buffer sizes unavailable: " + berr.Error()
	}
	serr := sendAll(src, p, fetchPlan(ds.Batches, plan.FetchBytes[0]), conns[0])
	if serr != nil {
		conns[0].Close()
	}
	rep, werr := child.wait()
	if err := errors.Join(serr, werr); err != nil {
		return note, fmt.Errorf("verify %s: %w", p, err)
	}
	if rep.Bytes[0] != ds.Size || rep.CRC[0] != ds.CRC {
		return note, fmt.Errorf("%w: %s delivered %d bytes with CRC-32C %08x, the file has %d bytes, %08x",
			ErrMismatch, p, rep.Bytes[0], rep.CRC[0], ds.Size, ds.CRC)
	}
	return note, nil
}

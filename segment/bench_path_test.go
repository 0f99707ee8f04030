package segment

// Benchmarks for the log's targets, at segment level: a random one-batch
// Read (the log's one record at a random offset), sequential 1 MiB reads
// (the log's whole-log iteration), Append beside a plain write in the same
// run, and Recover over many small segments. Every read benchmark reads a
// segment it has just written, so the page cache is warm.

import (
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/foliolog/folio/readpath"
	"github.com/foliolog/folio/record"
	"github.com/foliolog/folio/vfs"
)

// logBatch is the log benchmarks' batch: n records with 100-byte values
// and short keys, uncompressed (about 11 KiB for n = 100).
func logBatch(b testing.TB, n int) record.Batch {
	bld, err := record.NewBuilder(nil)
	if err != nil {
		b.Fatal(err)
	}
	val := make([]byte, 100)
	for i := range val {
		val[i] = byte(i)
	}
	for i := range n {
		if err := bld.Append(record.Record{Key: fmt.Appendf(nil, "key-%04d", i), Value: val, Timestamp: 1_700_000_000_000 + int64(i)}); err != nil {
			b.Fatal(err)
		}
	}
	batch, err := bld.Build(nil)
	if err != nil {
		b.Fatal(err)
	}
	return batch
}

// writeBenchSegment fills a new segment in dir with copies of batch up to
// about size bytes, seals it unless active, and returns it (open, with the
// options given) and its next offset.
func writeBenchSegment(b *testing.B, dir string, batch record.Batch, size int64, opts *Options, active bool) (*Segment, int64) {
	b.Helper()
	s, err := Create(vfs.Default, dir, 0, opts)
	if err != nil {
		b.Fatal(err)
	}
	next := int64(0)
	for written := int64(0); written+int64(len(batch)) <= size; written += int64(len(batch)) {
		batch.SetBaseOffset(next)
		if _, err := s.Append(batch); err != nil {
			b.Fatal(err)
		}
		next = batch.LastOffset() + 1
	}
	if active {
		return s, next
	}
	if err := s.Seal(); err != nil {
		b.Fatal(err)
	}
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	s, err = Open(vfs.Default, dir, 0, opts)
	if err != nil {
		b.Fatal(err)
	}
	return s, next
}

var readKinds = []readpath.Kind{readpath.Mmap, readpath.Sendfile}

// BenchmarkReadRandom: Read(offset, 1, -1) of one batch at a random offset
// of a 64 MiB segment of 100-record batches, and Release; the log adds its
// own lookups (about 0.2 µs) to make its random one-record read. With the
// default IndexIntervalBytes every batch is indexed, so a read is an index
// lookup, the check of the entry's batch header, and the header after it
// (Read's byte budget). Reported: ns/op and reads/s, for each read path,
// on the active segment and on a sealed one.
func BenchmarkReadRandom(b *testing.B) {
	const segBytes = 64 << 20
	batch := logBatch(b, 100)
	for _, state := range []string{"active", "sealed"} {
		for _, kind := range readKinds {
			b.Run(state+"/"+kind.String(), func(b *testing.B) {
				s, next := writeBenchSegment(b, b.TempDir(), batch, segBytes, &Options{ReadPath: kind}, state == "active")
				defer s.Close()
				rng := rand.New(rand.NewSource(1))
				offs := make([]int64, 1<<16)
				for i := range offs {
					offs[i] = rng.Int63n(next)
				}
				b.ResetTimer()
				for i := range b.N {
					v, err := s.Read(offs[i%len(offs)], 1, -1)
					if err != nil {
						b.Fatal(err)
					}
					if v.Len() != len(batch) {
						b.Fatalf("read %d bytes, want one %d-byte batch", v.Len(), len(batch))
					}
					v.Release()
				}
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "reads/s")
			})
		}
	}
}

// BenchmarkReadSequential: the whole of a sealed 64 MiB segment in Reads
// of up to 1 MiB, front to back (each op is one Read and Release; the
// offsets to start at were found once beforehand), for batches of 100
// records (about 90 batches per read) and of 1 record (about 6,000 batch
// headers walked per read). Reported: MB/s, ns/op and records/s, the
// log's iteration target being >= 20 million 100-byte records/s with the
// records decoded on top.
func BenchmarkReadSequential(b *testing.B) {
	const (
		segBytes  = 64 << 20
		readBytes = 1 << 20
	)
	for _, perBatch := range []int{100, 1} {
		batch := logBatch(b, perBatch)
		for _, kind := range readKinds {
			b.Run(fmt.Sprintf("%drec/%s", perBatch, kind), func(b *testing.B) {
				s, next := writeBenchSegment(b, b.TempDir(), batch, segBytes, &Options{ReadPath: kind}, false)
				defer s.Close()
				type read struct {
					off     int64
					records int
				}
				var reads []read
				var total int64
				for off := int64(0); off < next; {
					v, err := s.Read(off, readBytes, -1)
					if err != nil {
						b.Fatal(err)
					}
					n := v.Len() / len(batch)
					reads = append(reads, read{off, n * perBatch})
					total += int64(v.Len())
					off += int64(n * perBatch)
					v.Release()
				}
				b.SetBytes(total / int64(len(reads)))
				records := 0
				b.ResetTimer()
				for i := range b.N {
					r := reads[i%len(reads)]
					v, err := s.Read(r.off, readBytes, -1)
					if err != nil {
						b.Fatal(err)
					}
					v.Release()
					records += r.records
				}
				b.ReportMetric(float64(records)/b.Elapsed().Seconds(), "records/s")
			})
		}
	}
}

// BenchmarkAppendVsWrite: Segment.Append against a plain pwrite of the same
// bytes to an *os.File, in alternating rounds of 256 operations in one run,
// so that both meet the same page cache and writeback (on a shared machine
// those move more than either costs). No fsync; each side starts a new
// 64 MiB file when it fills one. Reported: each side's MB/s and
// segment/plain, the ratio of their throughputs (the log's target is >= 0.8
// for 100 records of 100 bytes, the 100rec case).
func BenchmarkAppendVsWrite(b *testing.B) {
	const span = 64 << 20
	cases := []struct {
		name  string
		batch record.Batch
	}{
		{"1KiB", benchBatchSized(b, 1<<10)},
		{"100rec", logBatch(b, 100)},
		{"16KiB", benchBatchSized(b, 16<<10)},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			batch := c.batch
			dir := b.TempDir()
			opts := &Options{MaxSegmentBytes: span}
			seg, err := Create(vfs.Default, dir, 0, opts)
			if err != nil {
				b.Fatal(err)
			}
			defer func() { seg.Close() }()
			next := int64(0)
			appendOne := func() {
				batch.SetBaseOffset(next)
				if _, err := seg.Append(batch); err != nil {
					if !errors.Is(err, ErrSegmentFull) {
						b.Fatal(err)
					}
					if err := seg.Delete(); err != nil {
						b.Fatal(err)
					}
					if seg, err = Create(vfs.Default, dir, next, opts); err != nil {
						b.Fatal(err)
					}
					if _, err := seg.Append(batch); err != nil {
						b.Fatal(err)
					}
				}
				next = batch.LastOffset() + 1
			}
			f, err := os.Create(filepath.Join(b.TempDir(), "plain.log"))
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			pos := int64(0)
			writeOne := func() {
				if pos+int64(len(batch)) > span {
					if err := f.Truncate(0); err != nil {
						b.Fatal(err)
					}
					pos = 0
				}
				if _, err := f.WriteAt(batch, pos); err != nil {
					b.Fatal(err)
				}
				pos += int64(len(batch))
			}
			const round = 256
			var tSeg, tPlain time.Duration
			timed := func(n int, op func(), acc *time.Duration) {
				start := time.Now()
				for range n {
					op()
				}
				*acc += time.Since(start)
			}
			b.SetBytes(int64(len(batch)))
			b.ResetTimer()
			for done, r := 0, 0; done < b.N; r++ {
				n := min(round, b.N-done)
				if r%2 == 0 {
					timed(n, writeOne, &tPlain)
					timed(n, appendOne, &tSeg)
				} else {
					timed(n, appendOne, &tSeg)
					timed(n, writeOne, &tPlain)
				}
				done += n
			}
			b.StopTimer()
			mb := float64(len(batch)) * float64(b.N) / 1e6
			b.ReportMetric(mb/tPlain.Seconds(), "plain-MB/s")
			b.ReportMetric(mb/tSeg.Seconds(), "segment-MB/s")
			b.ReportMetric(tPlain.Seconds()/tSeg.Seconds(), "segment/plain")
		})
	}
}

// benchBatchSized is benchBatch for any testing.TB.
func benchBatchSized(t testing.TB, size int) record.Batch {
	rng := rand.New(rand.NewSource(1))
	n := max(1, size/120)
	deltas := make([]int32, n)
	tss := make([]int64, n)
	for i := range n {
		deltas[i] = int32(i)
		tss[i] = 1_700_000_000_000 + int64(i)
	}
	return buildBatch(t, 0, deltas, tss, 100, rng)
}

// recoverSegments is how many segments BenchmarkRecover recovers per op;
// FOLIO_BENCH_RECOVER_SEGMENTS overrides it (the log's case is 1,000).
func recoverSegments() int {
	if s := os.Getenv("FOLIO_BENCH_RECOVER_SEGMENTS"); s != "" {
		if n, err := strconv.Atoi(s); err == nil && n > 0 {
			return n
		}
	}
	return 200
}

// BenchmarkRecover: Open + Recover + Close of many 1 MiB segments of
// 100-record batches, one after another, as the log's unclean start does
// for every segment at or above its recovery point (warm cache, on the
// test's temporary directory, fsyncs included). "intact": the segments
// were sealed, so their indexes are already what recovery rebuilds (the
// log's usual case); "stale": each index lost its last entries, so
// recovery must write them. Reported: MB/s of .log scanned, and
// ms/segment.
func BenchmarkRecover(b *testing.B) {
	const segBytes = 1 << 20
	batch := logBatch(b, 100)
	n := recoverSegments()
	for _, state := range []string{"intact", "stale"} {
		b.Run(state, func(b *testing.B) {
			dir := b.TempDir()
			var bases []int64
			var total int64
			next := int64(0)
			for range n {
				s, err := Create(vfs.Default, dir, next, nil)
				if err != nil {
					b.Fatal(err)
				}
				bases = append(bases, next)
				for w := int64(0); w+int64(len(batch)) <= segBytes; w += int64(len(batch)) {
					batch.SetBaseOffset(next)
					if _, err := s.Append(batch); err != nil {
						b.Fatal(err)
					}
					next = batch.LastOffset() + 1
					total += int64(len(batch))
				}
				if err := s.Seal(); err != nil {
					b.Fatal(err)
				}
				if err := s.Close(); err != nil {
					b.Fatal(err)
				}
			}
			damage := func() {
				for _, base := range bases {
					for _, p := range []string{IndexPath(dir, base), TimeIndexPath(dir, base)} {
						fi, err := os.Stat(p)
						if err != nil {
							b.Fatal(err)
						}
						if err := os.Truncate(p, fi.Size()/2/24*24); err != nil {
							b.Fatal(err)
						}
					}
				}
			}
			b.SetBytes(total)
			b.ResetTimer()
			for range b.N {
				if state == "stale" {
					b.StopTimer()
					damage()
					b.StartTimer()
				}
				for _, base := range bases {
					s, err := Open(vfs.Default, dir, base, nil)
					if err != nil {
						b.Fatal(err)
					}
					res, err := s.Recover()
					if err != nil || res.BytesCut != 0 {
						b.Fatalf("recover %d: %+v, %v", base, res, err)
					}
					if err := s.Close(); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/1e3/float64(b.N*n), "ms/segment")
		})
	}
}

package log

// Benchmarks for the targets in the package's task. Sizes default small
// enough for a laptop run; set FOLIO_BENCH_LOG_BYTES (e.g. 1073741824) for
// the 1 GiB runs. Cache state: every read benchmark reads a log it has just
// written or read, so the page cache is warm; none drops caches.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/foliolog/folio/internal/benchfs"
	"github.com/foliolog/folio/readpath"
	"github.com/foliolog/folio/record"
	"github.com/foliolog/folio/vfs"
)

// benchLogBytes is the size of the logs the reopen and iteration
// benchmarks build.
func benchLogBytes() int64 {
	if s := os.Getenv("FOLIO_BENCH_LOG_BYTES"); s != "" {
		if n, err := strconv.ParseInt(s, 10, 64); err == nil && n > 0 {
			return n
		}
	}
	return 256 << 20
}

// benchBatch builds a batch of n records with values of size bytes.
func benchBatch(b testing.TB, n, size int) record.Batch {
	bld, err := record.NewBuilder(nil)
	if err != nil {
		b.Fatal(err)
	}
	val := make([]byte, size)
	for i := range val {
		val[i] = byte(i)
	}
	for i := 0; i < n; i++ {
		if err := bld.Append(record.Record{Key: []byte(fmt.Sprintf("key-%04d", i)), Value: val, Timestamp: 1_700_000_000_000}); err != nil {
			b.Fatal(err)
		}
	}
	batch, err := bld.Build(nil)
	if err != nil {
		b.Fatal(err)
	}
	return batch
}

// pairs remembers the ns/op of sub-benchmarks so that a last sub-benchmark
// can report their ratio. The final run of a sub-benchmark (the one with the
// largest b.N) overwrites the earlier ones.
var pairs sync.Map

func remember(b *testing.B, key string) {
	if b.N > 0 {
		pairs.Store(key, float64(b.Elapsed().Nanoseconds())/float64(b.N))
	}
}

// sideBySide runs plain and logOp in alternating rounds of round
// operations each (b.N operations of each in all), so that both meet the
// same page cache, dirty-page writeback and disk, which on a shared machine
// move more than either costs. It reports each one's MB/s and the ratio
// log/plain of their throughput.
func sideBySide(b *testing.B, bytesPerOp int64, round int, plain, logOp func(i int)) {
	var tPlain, tLog time.Duration
	b.ResetTimer()
	for done, r := 0, 0; done < b.N; r++ {
		n := min(round, b.N-done)
		run := func(op func(int), acc *time.Duration) {
			start := time.Now()
			for i := done; i < done+n; i++ {
				op(i)
			}
			*acc += time.Since(start)
		}
		if r%2 == 0 {
			run(plain, &tPlain)
			run(logOp, &tLog)
		} else {
			run(logOp, &tLog)
			run(plain, &tPlain)
		}
		done += n
	}
	b.StopTimer()
	mb := float64(bytesPerOp) * float64(b.N) / 1e6
	b.ReportMetric(mb/tPlain.Seconds(), "plain-MB/s")
	b.ReportMetric(mb/tLog.Seconds(), "log-MB/s")
	b.ReportMetric(tPlain.Seconds()/tLog.Seconds(), "log/plain")
}

// reportRatio adds a sub-benchmark that reports the throughput ratio of two
// remembered sub-benchmarks (num over den).
func reportRatio(b *testing.B, num, den, unit string) {
	b.Run("ratio", func(b *testing.B) {
		n, ok1 := pairs.Load(num)
		d, ok2 := pairs.Load(den)
		if !ok1 || !ok2 {
			b.Skip("run the whole benchmark for the ratio")
		}
		b.ReportMetric(d.(float64)/n.(float64), unit)
	})
}

// rotatingFile is the plain sequential writer the log is compared with: it
// writes to a file and, every limit bytes, fsyncs it (as the log seals a
// segment it rolls past), starts a new one and deletes the one before (as
// retention does), so that both sides send the same bytes to the disk.
type rotatingFile struct {
	dir   string
	limit int64
	f     vfs.File
	n     int64
	seq   int
}

func (r *rotatingFile) write(b testing.TB, p []byte) {
	if r.f == nil || r.n+int64(len(p)) > r.limit {
		if r.f != nil {
			r.sync(b)
			_ = r.f.Close()
			if r.seq > 0 {
				_ = os.Remove(filepath.Join(r.dir, fmt.Sprintf("plain-%d", r.seq-1)))
			}
			r.seq++
		}
		f, err := vfs.Default.OpenFile(filepath.Join(r.dir, fmt.Sprintf("plain-%d", r.seq)), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
		if err != nil {
			b.Fatal(err)
		}
		r.f, r.n = f, 0
	}
	if _, err := r.f.WriteAt(p, r.n); err != nil {
		b.Fatal(err)
	}
	r.n += int64(len(p))
}

func (r *rotatingFile) sync(b testing.TB) {
	if err := r.f.Sync(); err != nil {
		b.Fatal(err)
	}
}

func (r *rotatingFile) close() {
	if r.f != nil {
		_ = r.f.Close()
	}
}

// BenchmarkAppendFlushNone: 100-byte records in batches of 100 under
// FlushNone, against a plain sequential write of the same bytes to a file
// (fsynced, rotated and deleted every 64 MiB, as the log seals, rolls and
// retention deletes), in alternating rounds. Target: log/plain >= 0.8.
// FOLIO_BENCH_DIR puts both in another directory (e.g. /dev/shm, to see
// the CPU cost without the disk).
func BenchmarkAppendFlushNone(b *testing.B) {
	batch := benchBatch(b, 100, 100)
	const segBytes = 64 << 20
	w := &rotatingFile{dir: benchDir(b), limit: segBytes}
	defer w.close()
	l, err := Open(nil, benchDir(b), &Options{SegmentBytes: segBytes, FlushPolicy: FlushNone, RetentionBytes: segBytes, RetentionCheckInterval: -1}, State{})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	bufs := make([]record.Batch, 16)
	for i := range bufs {
		bufs[i] = slices.Clone(batch)
	}
	rolls := int64(0)
	sideBySide(b, int64(len(batch)), 2000,
		func(int) { w.write(b, batch) },
		func(i int) {
			if _, _, err := l.Append(bufs[i%len(bufs)]); err != nil {
				b.Fatal(err)
			}
			if r := l.Stats().Rolls; r != rolls {
				// Keep the disk bounded as the plain writer does.
				rolls = r
				if _, err := l.EnforceRetention(time.Now()); err != nil {
					b.Fatal(err)
				}
			}
		})
}

// BenchmarkAppendDurable: 1 KiB records, one per append, fsynced every 100
// records (FlushEveryN(100)), against a plain loop that writes the same
// records and fsyncs every 100 (fdatasync, as the log's vfs does), in
// alternating rounds. Target: log/plain >= 0.9.
func BenchmarkAppendDurable(b *testing.B) {
	batch := benchBatch(b, 1, 1024)
	const segBytes = 64 << 20
	w := &rotatingFile{dir: b.TempDir(), limit: segBytes}
	defer w.close()
	l, err := Open(nil, b.TempDir(), &Options{SegmentBytes: segBytes, FlushPolicy: FlushEveryN(100), RetentionBytes: segBytes, RetentionCheckInterval: -1}, State{})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	buf := slices.Clone(batch)
	sideBySide(b, int64(len(batch)), 1000,
		func(i int) {
			w.write(b, batch)
			if (i+1)%100 == 0 {
				w.sync(b)
			}
		},
		func(int) {
			if _, _, err := l.Append(buf); err != nil {
				b.Fatal(err)
			}
		})
	b.ReportMetric(float64(b.N)/float64(max(l.Stats().Syncs, 1)), "records/fsync")
}

// BenchmarkFlushSyncConcurrency: FlushSync, appends of one record each, by
// one appender and by 64 concurrent ones. Target: 64 appenders reach at
// least 20x the records/s of one (group commit).
//
// FOLIO_BENCH_FSYNC_DELAY (a duration, e.g. 1ms) makes every fsync of a
// .log take that much longer, waiting without using a CPU: a device whose
// cache flush is slow, where an fsync's time is the device's and not the
// kernel's CPU (on the development VM an fsync of 125-130 µs is mostly
// kernel CPU, which bounds what 64 appenders on 2 cores can reach).
func BenchmarkFlushSyncConcurrency(b *testing.B) {
	batch := benchBatch(b, 1, 100)
	fs, err := benchfs.FromEnv(nil)
	if err != nil {
		b.Fatal(err)
	}
	for _, appenders := range []int{1, 64} {
		name := fmt.Sprintf("appenders=%d", appenders)
		b.Run(name, func(b *testing.B) {
			l, err := Open(fs, b.TempDir(), &Options{FlushPolicy: FlushSync}, State{})
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			var next atomic.Int64
			var wg sync.WaitGroup
			b.ResetTimer()
			for g := 0; g < appenders; g++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					buf := slices.Clone(batch)
					for next.Add(1) <= int64(b.N) {
						if _, _, err := l.Append(buf); err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			b.StopTimer()
			remember(b, "sync/"+name)
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
			b.ReportMetric(float64(b.N)/float64(max(l.Stats().Syncs, 1)), "records/fsync")
		})
	}
	reportRatio(b, "sync/appenders=64", "sync/appenders=1", "speedup")
}

// benchDir returns a fresh directory for a benchmark: under
// FOLIO_BENCH_DIR if set, else b.TempDir().
func benchDir(b *testing.B) string {
	root := os.Getenv("FOLIO_BENCH_DIR")
	if root == "" {
		return b.TempDir()
	}
	dir, err := os.MkdirTemp(root, "folio-log-bench")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

// buildBenchLog writes a log of about size bytes of 100-byte records in
// batches of 100 into dir, in segments of segBytes, and closes it.
func buildBenchLog(b testing.TB, dir string, size, segBytes int64) State {
	b.Helper()
	l, err := Open(nil, dir, &Options{SegmentBytes: segBytes, FlushPolicy: FlushNone, RetentionCheckInterval: -1}, State{})
	if err != nil {
		b.Fatal(err)
	}
	batch := benchBatch(b, 100, 100)
	for written := int64(0); written < size; written += int64(len(batch)) {
		if _, _, err := l.Append(batch); err != nil {
			b.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		b.Fatal(err)
	}
	return l.Checkpoint()
}

// BenchmarkReopen: Open after a clean shutdown of a log in 1,000 segments
// (target < 20 ms), and the recovery scan after an unclean one, warm cache
// (target >= 1 GB/s, reported as MB/s): for the same log in 1,000 segments
// and in 32 MiB segments, which shows the per-segment cost of recovery
// (rebuilding two index files) apart from the scan.
func BenchmarkReopen(b *testing.B) {
	size := benchLogBytes()
	dir := b.TempDir()
	st := buildBenchLog(b, dir, size, max(size/1000, 64<<10))
	b.Run("clean", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			l, err := Open(nil, dir, nil, st)
			if err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			if i == 0 {
				b.ReportMetric(float64(l.Stats().Segments), "segments")
			}
			if err := l.Close(); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
		b.ReportMetric(float64(b.Elapsed().Microseconds())/1e3/float64(b.N), "ms/open")
	})
	unclean := func(dir string, st State) func(b *testing.B) {
		return func(b *testing.B) {
			b.SetBytes(size)
			for i := 0; i < b.N; i++ {
				l, err := Open(nil, dir, nil, State{LogStartOffset: st.LogStartOffset})
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				if r := l.Recovery(); r.BytesScanned < size*9/10 {
					b.Fatalf("scanned %d bytes of %d", r.BytesScanned, size)
				}
				if i == 0 {
					b.ReportMetric(float64(l.Stats().Segments), "segments")
				}
				if err := l.Close(); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
		}
	}
	b.Run("unclean", unclean(dir, st))
	big := b.TempDir()
	bigSt := buildBenchLog(b, big, size, 32<<20)
	b.Run("unclean-32MiB-segments", unclean(big, bigSt))
}

// BenchmarkWaitWake: the latency from the start of an append under
// FlushNone to the moment a reader blocked in Wait runs again. Targets:
// median < 10 µs, p99 < 100 µs (reported as p50-µs and p99-µs).
func BenchmarkWaitWake(b *testing.B) {
	l, err := Open(nil, b.TempDir(), &Options{FlushPolicy: FlushNone}, State{})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	batch := benchBatch(b, 1, 100)
	woke := make(chan time.Time)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for off := int64(0); ; off++ {
			if err := l.Wait(ctx, off); err != nil {
				return
			}
			woke <- time.Now()
		}
	}()
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		// Let the reader block first: only then is this a wake-up.
		for l.hwWake.waiters.Load() == 0 {
		}
		start := time.Now()
		if _, _, err := l.Append(batch); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, (<-woke).Sub(start))
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds())/1e3, "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds())/1e3, "p99-µs")
}

// BenchmarkIterate: one goroutine reads a whole log of 100-byte records in
// batches of 100 through the mmap path and visits every record's key and
// value (warm cache). Target: >= 20 million records/s.
//
// "all" reads as Folio's consumer does, and as Kafka's does by default
// (check.crcs=true): record.Parse splits the view and checks each batch's
// CRC once, then the records are decoded without checking it again.
// "all-nocrc" splits on the length field alone and skips the CRC, for the
// cost of the check (about one pass of CRC-32C over the bytes).
// "random-locate" is the read of one record at a random offset (target:
// >= 1 million/s): the log finds the batch holding it and hands out the
// view. "random-record" adds decoding the batch up to that record, which
// is about half a batch of records on average.
//
// Besides the wall-clock rates each reports the rate per second of process
// CPU time (…/cpu-s, where the platform reports it) and cpu/wall: on a
// shared machine a run that waited for a core shows a cpu/wall well below
// 1 and a wall-clock rate that says more about the load than the log.
// The log is built in b.TempDir(): TMPDIR=/dev/shm keeps the 1 GiB build
// (FOLIO_BENCH_LOG_BYTES=1073741824) off a disk that others are timing.
func BenchmarkIterate(b *testing.B) {
	size := benchLogBytes()
	dir := b.TempDir()
	st := buildBenchLog(b, dir, size, 1<<30)
	l, err := Open(nil, dir, &Options{ReadPath: readpath.Mmap}, st)
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	end := l.HighWatermark()
	opts := &record.DecodeOptions{SkipCRC: true}
	var sink int
	// visit decodes one batch and visits each record's key and value.
	visit := func(batch record.Batch) (int, error) {
		it := batch.Records(opts)
		defer it.Close()
		n, touched := 0, 0
		for it.Next() {
			r := it.Record()
			touched += len(r.Key()) + len(r.Value())
			n++
		}
		sink += touched
		return n, it.Err()
	}
	// readAll reads the log front to back in 1 MiB reads; split takes the
	// next batch off the front of a view's bytes.
	readAll := func(b *testing.B, split func([]byte) (record.Batch, []byte, error)) int {
		records := 0
		for off := int64(0); off < end; {
			v, err := l.Read(off, 1<<20)
			if err != nil {
				b.Fatal(err)
			}
			err = readpath.Guard(func() error {
				buf, err := v.Bytes()
				if err != nil {
					return err
				}
				for len(buf) > 0 {
					batch, rest, err := split(buf)
					if err != nil {
						return err
					}
					n, err := visit(batch)
					if err != nil {
						return err
					}
					records += n
					off = batch.LastOffset() + 1
					buf = rest
				}
				return nil
			})
			v.Release()
			if err != nil {
				b.Fatal(err)
			}
		}
		return records
	}
	b.Run("all", func(b *testing.B) {
		b.SetBytes(size)
		cpu := startCPU()
		records := 0
		for i := 0; i < b.N; i++ {
			records += readAll(b, record.Parse)
		}
		cpu.report(b, float64(records), "records")
	})
	b.Run("all-nocrc", func(b *testing.B) {
		b.SetBytes(size)
		cpu := startCPU()
		records := 0
		for i := 0; i < b.N; i++ {
			records += readAll(b, func(buf []byte) (record.Batch, []byte, error) {
				size, err := record.CheckHeader(buf)
				if err != nil {
					return nil, nil, err
				}
				if size > len(buf) {
					return nil, nil, fmt.Errorf("batch of %d bytes in a view of %d", size, len(buf))
				}
				return record.Batch(buf[:size]), buf[size:], nil
			})
		}
		cpu.report(b, float64(records), "records")
	})
	// The offsets are drawn beforehand, so the random number generator
	// is not part of the read.
	offsets := make([]int64, 1<<16)
	rng := newRand(1)
	for i := range offsets {
		offsets[i] = rng.Int64N(end)
	}
	b.Run("random-locate", func(b *testing.B) {
		cpu := startCPU()
		for i := 0; i < b.N; i++ {
			v, err := l.Read(offsets[i%len(offsets)], 1)
			if err != nil {
				b.Fatal(err)
			}
			v.Release()
		}
		cpu.report(b, float64(b.N), "reads")
	})
	b.Run("random-record", func(b *testing.B) {
		cpu := startCPU()
		for i := 0; i < b.N; i++ {
			off := offsets[i%len(offsets)]
			v, err := l.Read(off, 1)
			if err != nil {
				b.Fatal(err)
			}
			err = readpath.Guard(func() error {
				buf, err := v.Bytes()
				if err != nil {
					return err
				}
				it := record.Batch(buf).Records(opts)
				defer it.Close()
				for it.Next() {
					if r := it.Record(); r.Offset() == off {
						sink += len(r.Value())
						return nil
					}
				}
				return fmt.Errorf("offset %d not in its batch: %v", off, it.Err())
			})
			v.Release()
			if err != nil {
				b.Fatal(err)
			}
		}
		cpu.report(b, float64(b.N), "reads")
	})
	_ = sink
}

// cpuMeter measures the process CPU time of one run of a benchmark
// function (one b.N), for rates that do not count the time a loaded
// machine kept the benchmark off a core.
type cpuMeter struct {
	start time.Duration
	ok    bool
}

func startCPU() cpuMeter {
	t, ok := processCPU()
	return cpuMeter{start: t, ok: ok}
}

// report adds n/s (wall clock) and, where CPU time is known, n/cpu-s and
// cpu/wall, for n units of work done since startCPU.
func (m cpuMeter) report(b *testing.B, n float64, unit string) {
	wall := b.Elapsed().Seconds()
	b.ReportMetric(n/wall, unit+"/s")
	t, ok := processCPU()
	if !m.ok || !ok || t <= m.start {
		return
	}
	cpu := (t - m.start).Seconds()
	b.ReportMetric(n/cpu, unit+"/cpu-s")
	b.ReportMetric(cpu/wall, "cpu/wall")
}

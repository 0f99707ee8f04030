package folio

import (
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/foliolog/folio/internal/benchfs"
)

// Benchmarks of the public API. Numbers depend on the machine and its disk
// (FlushSync measures fsync); the page cache is warm. Run with e.g.
//
//	go test -run '^$' -bench . -benchtime 2000000x
func BenchmarkProduceAsync(b *testing.B) {
	for _, flush := range []FlushPolicy{FlushNone, FlushSync} {
		b.Run(flush.String(), func(b *testing.B) {
			benchProduceAsync(b, flush)
		})
	}
}

// benchProduceAsync: one goroutine produces b.N records of 100-byte values
// with ProduceAsync to 8 partitions and waits for every acknowledgement.
func benchProduceAsync(b *testing.B, flush FlushPolicy) {
	br := openT(b, b.TempDir(), &Options{CheckpointInterval: -1})
	createTopicT(b, br, "bench", TopicConfig{Partitions: 8, Flush: flush})
	p := producerT(b, br, &ProducerOptions{Linger: benchLinger})
	val := make([]byte, 100)
	recs := make([]Record, b.N)
	for i := range recs {
		recs[i] = Record{Topic: "bench", Value: val}
	}
	var failed failures
	cb := failed.callback
	ctx := context.Background()
	b.SetBytes(int64(len(val)))
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for i := range recs {
		p.ProduceAsync(ctx, &recs[i], cb)
	}
	if err := p.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	if err := failed.get(); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "records/s")
	b.ReportMetric(float64(br.Stats().ProduceBlocked), "blocked")
}

// BenchmarkProduce: one goroutine produces b.N records of 100-byte values
// with Produce, one at a time (each waits for its acknowledgement, as
// peerbench's W6 producer does), to a one-partition FlushNone topic: the
// cost of the synchronous path, allocations included.
func BenchmarkProduce(b *testing.B) {
	br := openT(b, b.TempDir(), &Options{CheckpointInterval: -1})
	createTopicT(b, br, "bench", TopicConfig{Partitions: 1, Flush: FlushNone})
	p := producerT(b, br, &ProducerOptions{Linger: benchLinger})
	rec := Record{Topic: "bench", Value: make([]byte, 100)}
	ctx := context.Background()
	b.SetBytes(int64(len(rec.Value)))
	b.ReportAllocs()
	b.ResetTimer()
	u := startUsage()
	for range b.N {
		if _, _, err := p.Produce(ctx, &rec); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	u.report(b, b.N)
}

// BenchmarkEndToEndLatency: records produced at latencyRate (20,000/s) by
// a paced goroutine with ProduceAsync and Linger 0 to a one-partition
// topic, read by a consumer waiting in Poll. A record's latency is from its
// produce call to the return of the Poll that hands it over; p50 and p99
// are over b.N records, after latencyWarmup that are not counted. The
// "chan" case is the floor the machine's scheduler sets: the same paced
// goroutine handing each timestamp to a goroutine waiting on a plain
// channel. Under FlushSync the median of the partition's fsyncs during
// the measured records is reported with the ratio p99/fsync-p50, and the
// median of a plain write + fsync loop in the same directory afterwards.
// The pacer catches up when it falls behind (several records back to back,
// so the rate holds); late-% is the share of ticks where it had to.
func BenchmarkEndToEndLatency(b *testing.B) {
	b.Run("chan", benchChanLatency)
	for _, flush := range []FlushPolicy{FlushNone, FlushSync} {
		b.Run(flush.String(), func(b *testing.B) {
			benchLatency(b, flush)
		})
	}
}

// benchLinger is the producer benchmarks' Linger: none (append at once),
// the setting these benchmarks measured before Linger's default was 5 ms.
var benchLinger = -time.Nanosecond

const (
	latencyRate   = 20_000
	latencyWarmup = 2_000
)

// latencyEpoch is the origin of the timestamps records carry: durations
// since it read the monotonic clock.
var latencyEpoch = time.Now()

// pace calls send n times at latencyRate, with the time of each call, and
// returns how many ticks after the first latencyWarmup calls found it
// behind.
func pace(b *testing.B, n int, send func(i int, at time.Duration)) (late int) {
	pc, err := newPacer(time.Second / latencyRate)
	if err != nil {
		b.Fatal(err)
	}
	defer pc.close()
	for i := 0; i < n; {
		k, err := pc.wait()
		if err != nil {
			b.Fatal(err)
		}
		if k > 1 && i >= latencyWarmup {
			late++
		}
		for ; k > 0 && i < n; k-- {
			if i == latencyWarmup {
				b.ResetTimer() // ns/op: the time per measured record
			}
			send(i, time.Since(latencyEpoch))
			i++
		}
	}
	return late
}

// reportLatency reports the percentiles of lat (sorted in place), the
// achieved rate and the share of late ticks.
func reportLatency(b *testing.B, lat []time.Duration, elapsed time.Duration, late, n int) (p50, p99 time.Duration) {
	slices.Sort(lat)
	p50, p99 = lat[len(lat)/2], lat[len(lat)*99/100]
	b.ReportMetric(us(p50), "p50-µs")
	b.ReportMetric(us(p99), "p99-µs")
	b.ReportMetric(us(lat[len(lat)-1]), "max-µs")
	b.ReportMetric(float64(n)/elapsed.Seconds(), "records/s")
	b.ReportMetric(100*float64(late)/float64(n), "late-%")
	return p50, p99
}

// us is d in microseconds, for ReportMetric.
func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

func benchChanLatency(b *testing.B) {
	type stamp struct {
		i  int
		at time.Duration
	}
	n := latencyWarmup + b.N
	ch := make(chan stamp, n)
	lat := make([]time.Duration, 0, b.N)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for s := range ch {
			now := time.Since(latencyEpoch)
			if s.i >= latencyWarmup {
				lat = append(lat, now-s.at)
			}
		}
	}()
	var start time.Time
	late := pace(b, n, func(i int, at time.Duration) {
		if i == latencyWarmup {
			start = time.Now()
		}
		ch <- stamp{i, at}
	})
	close(ch)
	<-done
	b.StopTimer()
	reportLatency(b, lat, time.Since(start), late, b.N)
}

func benchLatency(b *testing.B, flush FlushPolicy) {
	dir := b.TempDir()
	syncs := &fsyncRecorder{}
	fs, err := benchfs.FromEnv(nil) // a slower device's fsyncs, when asked
	if err != nil {
		b.Fatal(err)
	}
	br := openT(b, dir, &Options{CheckpointInterval: -1, Metrics: syncs, FS: fs})
	createTopicT(b, br, "lat", TopicConfig{Partitions: 1, Flush: flush})
	p := producerT(b, br, &ProducerOptions{Linger: -1}) // append at once
	c := consumerT(b, br, nil)
	if err := c.Assign(Assignment{Topic: "lat", Start: AtEarliest()}); err != nil {
		b.Fatal(err)
	}
	n := latencyWarmup + b.N
	lat := make([]time.Duration, 0, b.N)
	done := make(chan error, 1)
	go func() {
		ctx := context.Background()
		for got := 0; got < n; {
			recs, err := c.Poll(ctx)
			if err != nil {
				done <- err
				return
			}
			now := time.Since(latencyEpoch)
			for _, r := range recs {
				if r.Offset >= latencyWarmup {
					lat = append(lat, now-time.Duration(binary.BigEndian.Uint64(r.Value)))
				}
			}
			got += len(recs)
		}
		done <- nil
	}()
	ctx := context.Background()
	var start time.Time
	late := pace(b, n, func(i int, at time.Duration) {
		if i == latencyWarmup {
			start = time.Now()
			syncs.start()
		}
		v := make([]byte, 100)
		binary.BigEndian.PutUint64(v, uint64(at))
		p.ProduceAsync(ctx, &Record{Topic: "lat", Value: v}, nil)
	})
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	_, p99 := reportLatency(b, lat, elapsed, late, b.N)
	if flush == FlushSync {
		fsync50, fsync99, fsyncMax := syncs.percentiles()
		if fsync50 == 0 {
			b.Fatal("no fsync reported during the measured records")
		}
		b.ReportMetric(us(fsync50), "fsync-p50-µs")
		b.ReportMetric(us(fsync99), "fsync-p99-µs")
		b.ReportMetric(us(fsyncMax), "fsync-max-µs")
		b.ReportMetric(float64(p99)/float64(fsync50), "p99/fsync-p50")
		b.ReportMetric(us(fsyncMedian(b, dir)), "plain-fsync-p50-µs")
	}
}

// fsyncRecorder keeps the durations of the fsyncs reported after start.
type fsyncRecorder struct {
	NoMetrics
	mu  sync.Mutex // guards the fields below
	on  bool
	tks []time.Duration
}

func (r *fsyncRecorder) start() {
	r.mu.Lock()
	r.on = true
	r.mu.Unlock()
}

func (r *fsyncRecorder) Fsynced(_ string, _ int32, took time.Duration) {
	r.mu.Lock()
	if r.on {
		r.tks = append(r.tks, took)
	}
	r.mu.Unlock()
}

// percentiles returns the median, p99 and maximum of the durations kept.
func (r *fsyncRecorder) percentiles() (p50, p99, most time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.tks) == 0 {
		return 0, 0, 0
	}
	s := slices.Clone(r.tks)
	slices.Sort(s)
	return s[len(s)/2], s[len(s)*99/100], s[len(s)-1]
}

// fsyncMedian measures a plain 100-byte append plus fsync in dir.
func fsyncMedian(b *testing.B, dir string) time.Duration {
	f, err := os.OpenFile(filepath.Join(dir, "fsync-probe"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 100)
	var ds []time.Duration
	for range 200 {
		t0 := time.Now()
		if _, err := f.Write(buf); err != nil {
			b.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			b.Fatal(err)
		}
		ds = append(ds, time.Since(t0))
	}
	slices.Sort(ds)
	return ds[len(ds)/2]
}

// BenchmarkConsume: one consumer reads b.N records of 100-byte values from
// 8 partitions (mmap read path, warm cache), copying them.
func BenchmarkConsume(b *testing.B) {
	for _, zero := range []bool{false, true} {
		name := "copy"
		if zero {
			name = "zerocopy"
		}
		b.Run(name, func(b *testing.B) {
			br := openT(b, b.TempDir(), &Options{CheckpointInterval: -1})
			createTopicT(b, br, "c", TopicConfig{Partitions: 8, Flush: FlushNone})
			p := producerT(b, br, nil)
			val := make([]byte, 100)
			for range b.N {
				p.ProduceAsync(context.Background(), &Record{Topic: "c", Value: val}, nil)
			}
			if err := p.Flush(context.Background()); err != nil {
				b.Fatal(err)
			}
			c := consumerT(b, br, &ConsumerOptions{ZeroCopy: zero})
			for part := range int32(8) {
				_ = c.Assign(Assignment{Topic: "c", Partition: part})
			}
			b.SetBytes(100)
			b.ReportAllocs()
			b.ResetTimer()
			start := time.Now()
			for n := 0; n < b.N; {
				recs, err := c.Poll(context.Background())
				if err != nil {
					b.Fatal(err)
				}
				n += len(recs)
			}
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "records/s")
		})
	}
}

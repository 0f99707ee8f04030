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

	"github.com/foliolog/folio/topic"
)

// Benchmarks of the public API. Numbers depend on the machine and its disk
// (FlushSync measures fsync); the page cache is warm. Run with e.g.
//
//	go test -run '^$' -bench . -benchtime 2000000x
func BenchmarkProduceAsync(b *testing.B) {
	for _, flush := range []topic.FlushPolicy{FlushNone, FlushSync} {
		b.Run(flush.String(), func(b *testing.B) {
			benchProduceAsync(b, flush)
		})
	}
}

// benchProduceAsync: one goroutine produces b.N records of 100-byte values
// with ProduceAsync to 8 partitions and waits for every acknowledgement.
func benchProduceAsync(b *testing.B, flush topic.FlushPolicy) {
	br := openT(b, b.TempDir(), &Options{CheckpointInterval: -1})
	createTopicT(b, br, "bench", TopicConfig{Partitions: 8, Flush: flush})
	p := producerT(b, br, &ProducerOptions{Linger: benchLinger})
	val := make([]byte, 100)
	recs := make([]Record, b.N)
	for i := range recs {
		recs[i] = Record{Topic: "bench", Value: val}
	}
	var failed error
	var failMu sync.Mutex // guards failed
	cb := func(_ *Record, err error) {
		if err != nil {
			failMu.Lock()
			failed = err
			failMu.Unlock()
		}
	}
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
	if failed != nil {
		b.Fatal(failed)
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "records/s")
	b.ReportMetric(float64(br.Stats().ProduceBlocked), "blocked")
}

// BenchmarkEndToEndLatency: a producer at 20,000 records/s with Linger 0
// and a consumer waiting in Poll; the latency is from the produce call to
// the record in the consumer's hands. Under FlushSync the median latency of
// a plain write + fsync in the same directory is measured in the same run,
// and the ratio p99 / fsync median reported.
func BenchmarkEndToEndLatency(b *testing.B) {
	for _, flush := range []topic.FlushPolicy{FlushNone, FlushSync} {
		b.Run(flush.String(), func(b *testing.B) {
			benchLatency(b, flush)
		})
	}
}

const latencyRate = 20_000

var benchLinger, _ = time.ParseDuration("0s")

func benchLatency(b *testing.B, flush topic.FlushPolicy) {
	dir := b.TempDir()
	br := openT(b, dir, &Options{CheckpointInterval: -1})
	createTopicT(b, br, "lat", TopicConfig{Partitions: 1, Flush: flush})
	p := producerT(b, br, &ProducerOptions{Linger: 0})
	c := consumerT(b, br, nil)
	if err := c.Assign(Assignment{Topic: "lat", Start: AtLatest()}); err != nil {
		b.Fatal(err)
	}
	epoch := time.Now()
	lat := make([]time.Duration, 0, b.N)
	done := make(chan error, 1)
	go func() {
		ctx := context.Background()
		for len(lat) < b.N {
			recs, err := c.Poll(ctx)
			if err != nil {
				done <- err
				return
			}
			now := time.Since(epoch)
			for _, r := range recs {
				lat = append(lat, now-time.Duration(binary.BigEndian.Uint64(r.Value)))
			}
		}
		done <- nil
	}()
	interval := time.Second / latencyRate
	ctx := context.Background()
	b.ResetTimer()
	start := time.Now()
	for i := range b.N {
		if d := time.Until(start.Add(time.Duration(i) * interval)); d > 0 {
			time.Sleep(d)
		}
		v := make([]byte, 100)
		binary.BigEndian.PutUint64(v, uint64(time.Since(epoch)))
		p.ProduceAsync(ctx, &Record{Topic: "lat", Value: v}, nil)
	}
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	slices.Sort(lat)
	p50, p99 := lat[len(lat)/2], lat[len(lat)*99/100]
	b.ReportMetric(float64(p50.Microseconds()), "p50-µs")
	b.ReportMetric(float64(p99.Microseconds()), "p99-µs")
	if flush.Mode == topic.FlushSync {
		// The median of the log's own fsyncs in this run (the group
		// commits the acknowledgements waited for), and of a plain
		// write + fsync loop in the same directory right after.
		logSync := br.Stats().Partitions[0].Fsync.P50
		plain := fsyncMedian(b, dir)
		b.ReportMetric(float64(logSync.Microseconds()), "fsync-p50-µs")
		b.ReportMetric(float64(plain.Microseconds()), "plain-fsync-p50-µs")
		b.ReportMetric(float64(p99)/float64(logSync), "p99/fsync")
	}
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

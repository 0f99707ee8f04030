package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/foliolog/folio"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The wire-latency suite offers records at a fixed rate from a kgo
// producer to folio serve's server (the fetch suite's child) while a
// long-polling kgo consumer reads them, and measures produce-to-consume
// latency; beside it, the in-process Producer and Consumer on the same
// workload. Each value carries the producer's monotonic send time.

func runWireLatency(ctx context.Context, e *env) ([]*table, error) {
	rate, dur := 20000, 2*time.Second
	switch e.cfg.Mode {
	case modeQuick:
		dur = 300 * time.Millisecond
	case modeFull:
		dur = 10 * time.Second
	}
	t := &table{
		Suite:   suiteWireLatency,
		Title:   "produce-to-consume latency at 20,000 records/s: kgo over loopback to folio serve (child process), and in-process",
		Params:  []string{"path", "flush policy", "offered (records/s)"},
		Columns: []column{{"p50", "µs"}, {"p99", "µs"}, {"max", "µs"}, {"samples", "per run"}},
	}
	dir := filepath.Join(e.dir, "wire-latency")
	b, err := folio.Open(dir, nil)
	if err != nil {
		return nil, err
	}
	if _, err := b.CreateTopic("lat", folio.TopicConfig{Partitions: 1, Flush: folio.FlushNone}); err != nil {
		b.Close()
		return nil, err
	}
	if err := b.Close(); err != nil {
		return nil, err
	}
	srv, err := startServer(ctx, serverFolio, dir)
	if err != nil {
		return nil, err
	}
	defer srv.stop()
	for _, path := range []string{"kgo over loopback", "in-process"} {
		cols := make([][]float64, len(t.Columns))
		for r := range e.cfg.Runs {
			e.step(suiteWireLatency, "%s, run %d/%d", path, r+1, e.cfg.Runs)
			var lat []float64
			if path == "in-process" {
				lat, err = localLatency(ctx, filepath.Join(e.dir, "local-lat-"+strconv.Itoa(r)), rate, dur)
			} else {
				lat, err = wireLatency(ctx, srv.addr, rate, dur)
			}
			if err != nil {
				return []*table{t}, fmt.Errorf("%s: %w", path, err)
			}
			slices.Sort(lat)
			cols[0] = append(cols[0], percentile(lat, 0.5))
			cols[1] = append(cols[1], percentile(lat, 0.99))
			cols[2] = append(cols[2], percentile(lat, 1))
			cols[3] = append(cols[3], float64(len(lat)))
		}
		if err := t.add([]string{path, "none", strconv.Itoa(rate)}, "page cache", cols); err != nil {
			return []*table{t}, err
		}
	}
	t.Notes = []string{
		fmt.Sprintf("Records are due every 1/rate for %v per run; the producer (kgo: linger 0, not its default 10 ms, acks=all, idempotent; in-process: the Producer with Linger 0) sends each when due with its send time in the value, and one consumer (kgo: long-polling fetches; in-process: Consumer.Poll) notes when it holds it. One partition, FlushNone.", dur),
	}
	return []*table{t}, nil
}

var monoBase = time.Now()

// warmUp is the value of the records wireLatency produces until its
// consumer has found its position: shorter than a stamp.
var warmUp = []byte{'w'}

func stamp(b []byte) []byte { return binary.BigEndian.AppendUint64(b, uint64(time.Since(monoBase))) }

func since(v []byte) float64 {
	if len(v) < 8 {
		return -1
	}
	return float64(time.Since(monoBase)-time.Duration(binary.BigEndian.Uint64(v))) / float64(time.Microsecond)
}

// pace calls send every 1/rate for dur.
func pace(ctx context.Context, rate int, dur time.Duration, send func()) int {
	period := time.Second / time.Duration(rate)
	start := time.Now()
	n := 0
	for time.Since(start) < dur && ctx.Err() == nil {
		due := start.Add(time.Duration(n) * period)
		if d := time.Until(due); d > 0 {
			time.Sleep(d) // pacing an open-loop load, not synchronising
		}
		send()
		n++
	}
	return n
}

func wireLatency(ctx context.Context, addr string, rate int, dur time.Duration) ([]float64, error) {
	cons, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics("lat"), kgo.ConsumeResetOffset(kgo.NewOffset().AtEnd()), kgo.FetchMaxWait(time.Second))
	if err != nil {
		return nil, err
	}
	defer cons.Close()
	prod, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("lat"), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(0))
	if err != nil {
		return nil, err
	}
	defer prod.Close()
	if err := prod.Ping(ctx); err != nil {
		return nil, err
	}
	// The consumer starts at the end: let it find its position first. A
	// record produced before it has (its ListOffsets may come after the
	// append) lies behind that position and is never fetched, so until
	// it fetches one, another warm-up record is produced after each
	// fetch that returned none. Warm-up records are one byte long, which
	// the measurement below passes over: one fetched late is no latency.
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for warm := 0; warm == 0 && cctx.Err() == nil; {
		if err := prod.ProduceSync(ctx, &kgo.Record{Value: warmUp}).FirstErr(); err != nil {
			return nil, err
		}
		pctx, pcancel := context.WithTimeout(cctx, 200*time.Millisecond)
		warm = cons.PollFetches(pctx).NumRecords()
		pcancel()
	}
	if err := cctx.Err(); err != nil {
		return nil, fmt.Errorf("the consumer fetched no warm-up record: %w", err)
	}
	got := make(chan []float64, 1)
	go func() {
		var lat []float64
		for done := false; !done && cctx.Err() == nil; {
			cons.PollFetches(cctx).EachRecord(func(r *kgo.Record) {
				switch {
				case len(r.Value) == 0: // the end marker
					done = true
				case len(r.Value) == len(warmUp): // fetched after the warm-up ended
				case !done:
					lat = append(lat, since(r.Value))
				}
			})
		}
		got <- lat
	}()
	n := pace(ctx, rate, dur, func() { prod.Produce(ctx, &kgo.Record{Value: stamp(nil)}, nil) })
	if err := prod.Flush(ctx); err != nil {
		return nil, err
	}
	if err := prod.ProduceSync(ctx, &kgo.Record{Value: []byte{}}).FirstErr(); err != nil {
		return nil, err
	}
	lat := <-got
	if len(lat) < n {
		return nil, fmt.Errorf("consumed %d of %d records", len(lat), n)
	}
	return lat, nil
}

func localLatency(ctx context.Context, dir string, rate int, dur time.Duration) ([]float64, error) {
	b, err := folio.Open(dir, nil)
	if err != nil {
		return nil, err
	}
	defer b.Close()
	if _, err := b.CreateTopic("lat", folio.TopicConfig{Partitions: 1, Flush: folio.FlushNone}); err != nil {
		return nil, err
	}
	p, err := b.NewProducer(&folio.ProducerOptions{Linger: -1}) // linger 0, as kgo's above
	if err != nil {
		return nil, err
	}
	defer p.Close()
	c, err := b.NewConsumer(nil)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	if err := c.Assign(folio.Assignment{Topic: "lat", Partition: 0, Start: folio.AtEarliest()}); err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, dur+30*time.Second)
	defer cancel()
	got := make(chan []float64, 1)
	go func() {
		var lat []float64
		for done := false; !done; {
			recs, err := c.Poll(cctx)
			if err != nil {
				break
			}
			for _, r := range recs {
				if len(r.Value) == 0 { // the end marker
					done = true
				} else if !done {
					lat = append(lat, since(r.Value))
				}
			}
		}
		got <- lat
	}()
	n := pace(ctx, rate, dur, func() { p.ProduceAsync(ctx, &folio.Record{Topic: "lat", Value: stamp(nil)}, nil) })
	if err := p.Flush(ctx); err != nil {
		return nil, err
	}
	if _, _, err := p.Produce(ctx, &folio.Record{Topic: "lat", Value: []byte{}}); err != nil {
		return nil, err
	}
	lat := <-got
	if len(lat) < n {
		return nil, fmt.Errorf("consumed %d of %d records", len(lat), n)
	}
	return lat, nil
}

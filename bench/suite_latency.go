package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/foliolog/folio/log"
	"github.com/foliolog/folio/readpath"
	"github.com/foliolog/folio/record"
)

// latencyPlan is the matrix of the latency suite.
type latencyPlan struct {
	Rates     []int // records per second, offered open-loop
	Duration  time.Duration
	Policies  []policyCase
	RecSize   int
	Producers int
}

func latencyPlanFor(cfg *config) latencyPlan {
	p := latencyPlan{Policies: appendPolicies(cfg.Mode), RecSize: 100, Producers: 64}
	switch cfg.Mode {
	case modeQuick:
		p.Rates = []int{1000}
		p.Duration = time.Duration(float64(200*time.Millisecond) * min(cfg.Scale, 1))
	case modeFull:
		p.Rates = []int{1000, 10000, 50000}
		p.Duration = 3 * time.Second
	default:
		p.Rates = []int{1000, 10000}
		p.Duration = 600 * time.Millisecond
	}
	p.Duration = max(p.Duration, 20*time.Millisecond)
	return p
}

func runLatency(ctx context.Context, e *env) ([]*table, error) {
	plan := latencyPlanFor(e.cfg)
	t := &table{
		Suite:  suiteLatency,
		Title:  "produce-to-consume latency at fixed rates, in-process, per flush policy",
		Params: []string{"flush policy", "offered (records/s)", "record"},
		Columns: []column{
			{"p50", "µs"}, {"p99", "µs"}, {"p99.9", "µs"}, {"max", "µs"},
			{"send lag p99", "µs"}, {"achieved", "records/s"}, {"samples", "per run"},
		},
	}
	for _, pc := range plan.Policies {
		for _, rate := range plan.Rates {
			cols := make([][]float64, len(t.Columns))
			for r := range e.cfg.Runs {
				if err := ctx.Err(); err != nil {
					return []*table{t}, err
				}
				e.step(suiteLatency, "policy %s, %d records/s, run %d/%d", pc.Name, rate, r+1, e.cfg.Runs)
				res, err := latencyRun(ctx, e.dir, pc.Policy, rate, plan)
				if err != nil {
					return []*table{t}, fmt.Errorf("policy %s at %d/s: %w", pc.Name, rate, err)
				}
				slices.Sort(res.e2e)
				slices.Sort(res.lag)
				for i, q := range []float64{0.5, 0.99, 0.999, 1} {
					cols[i] = append(cols[i], percentile(res.e2e, q))
				}
				cols[4] = append(cols[4], percentile(res.lag, 0.99))
				cols[5] = append(cols[5], perSecond(int64(len(res.e2e)), res.elapsed))
				cols[6] = append(cols[6], float64(len(res.e2e)))
			}
			if err := t.add([]string{pc.Name, strconv.Itoa(rate), formatBytes(int64(plan.RecSize))}, "written and read in the page cache", cols); err != nil {
				return []*table{t}, err
			}
		}
	}
	t.Notes = []string{
		fmt.Sprintf("Records are due at fixed intervals (1/rate) for %v per run; a dispatcher hands each due record to the first free one of %d producer goroutines, which stamps the time and appends it as a one-record batch. One consumer goroutine blocks in Log.Wait and reads with Log.Read (mmap read path). Latency runs from the producer's stamp to the consumer holding the record.", plan.Duration, plan.Producers),
		"Send lag is how late the producer stamped a record after it was due: timer granularity, and producers all blocked (under sync and every(n), appends wait for fsyncs). Records still undispatched when the run's time is up are not sent, so an overloaded policy shows as achieved < offered and a large send lag rather than an endless run.",
		"Readers see records below the high watermark: the durable end under sync, the log end under the other policies, so only sync makes the reader wait for an fsync.",
		"p99.9 of a run with fewer than 1000 samples is its maximum. Figures are medians over runs of each run's percentile.",
	}
	return []*table{t}, nil
}

type latencyResult struct {
	e2e     []float64 // produce-to-consume, µs, one per record
	lag     []float64 // due to stamped, µs, one per record
	elapsed time.Duration
}

// latencyRun offers rate records per second for plan.Duration.
func latencyRun(ctx context.Context, dir string, policy log.FlushPolicy, rate int, plan latencyPlan) (latencyResult, error) {
	var res latencyResult
	l, d, err := newAppendLog(dir, policy)
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(d)
	period := time.Second / time.Duration(rate)
	// Leave the consumer time to block in Wait before the first record.
	start := time.Now().Add(5 * time.Millisecond)
	end := start.Add(plan.Duration)

	ctx, cancel := context.WithTimeout(ctx, plan.Duration+time.Minute)
	defer cancel()
	// Unbuffered: a record waits for a free producer, and that wait is
	// its send lag.
	jobs := make(chan int)
	sent := make(chan int, 1) // how many records the dispatcher handed out
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // dispatcher
		defer wg.Done()
		defer close(jobs)
		i := 0
		defer func() { sent <- i }()
		for ; ; i++ {
			due := start.Add(time.Duration(i) * period)
			if !due.Before(end) || time.Now().After(end) {
				// Time is up: records not yet handed out are not sent.
				return
			}
			if wait := time.Until(due); wait > 0 {
				select {
				case <-time.After(wait):
				case <-ctx.Done():
					return
				}
			}
			select {
			case jobs <- i:
			case <-ctx.Done():
				return
			}
		}
	}()
	perrs := make([]error, plan.Producers)
	for p := range plan.Producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			perrs[p] = produce(l, jobs, plan.RecSize, start, period)
			if perrs[p] != nil {
				cancel()
			}
		}()
	}
	res, cerr := consumeLatencies(ctx, l, sent, start, period)
	if cerr != nil {
		cancel()
	}
	wg.Wait()
	closeErr := l.Close()
	if err := errors.Join(append(perrs, cerr, closeErr)...); err != nil {
		return res, err
	}
	return res, nil
}

// Layout of a latency record's value: its index, then the time the
// producer appended it, in nanoseconds since the run's start.
const (
	valIndex = 0
	valSent  = 8
	valMin   = 16
)

// produce appends each record index it receives as a one-record batch.
func produce(l *log.Log, jobs <-chan int, recSize int, start time.Time, period time.Duration) error {
	b, err := record.NewBuilder(nil)
	if err != nil {
		return err
	}
	v := make([]byte, max(recSize, valMin))
	var buf []byte
	for i := range jobs {
		b.Reset()
		now := time.Now()
		binary.LittleEndian.PutUint64(v[valIndex:], uint64(i))
		binary.LittleEndian.PutUint64(v[valSent:], uint64(now.Sub(start)))
		if err := b.Append(record.Record{Value: v, Timestamp: now.UnixMilli()}); err != nil {
			return err
		}
		if buf, err = b.Build(buf); err != nil {
			return err
		}
		if _, _, err := l.Append(record.Batch(buf)); err != nil {
			return err
		}
	}
	return nil
}

// consumeLatencies reads records from offset 0 as they become visible
// until it has every record the dispatcher sent (the count arrives on
// sent when the dispatcher stops).
func consumeLatencies(ctx context.Context, l *log.Log, sent <-chan int, start time.Time, period time.Duration) (latencyResult, error) {
	var res latencyResult
	seen := map[int]bool{}
	want := -1
	var next int64
	var lastAt time.Time
	for want < 0 || len(seen) < want {
		if want < 0 {
			select {
			case n := <-sent:
				want = n
				continue
			default:
			}
		}
		// Wait with a short deadline while the total is unknown, so the
		// end of the run is noticed even when nothing more arrives.
		wctx := ctx
		var wcancel context.CancelFunc = func() {}
		if want < 0 {
			wctx, wcancel = context.WithTimeout(ctx, 20*time.Millisecond)
		}
		err := l.Wait(wctx, next)
		wcancel()
		if want < 0 && errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			continue
		}
		if err != nil {
			return res, fmt.Errorf("wait for offset %d (%d records seen): %w", next, len(seen), err)
		}
		v, err := l.Read(next, 1<<20)
		if errors.Is(err, log.ErrNoData) {
			continue
		}
		if err != nil {
			return res, fmt.Errorf("read offset %d: %w", next, err)
		}
		now := time.Now()
		lastAt = now
		b, err := v.Bytes()
		if err == nil {
			err = readpath.Guard(func() error {
				for len(b) > 0 {
					batch, rest, err := record.Parse(b)
					if err != nil {
						return err
					}
					it := batch.Records(skipCRC)
					for it.Next() {
						r := it.Record()
						if r.Offset() < next {
							continue // a batch is never split: skip what was consumed
						}
						val := r.Value()
						if len(val) < valMin {
							it.Close()
							return fmt.Errorf("%w: record %d has a %d-byte value", ErrMismatch, r.Offset(), len(val))
						}
						i := int(binary.LittleEndian.Uint64(val[valIndex:]))
						if i < 0 || seen[i] {
							it.Close()
							return fmt.Errorf("%w: record %d carries index %d, seen before", ErrMismatch, r.Offset(), i)
						}
						seen[i] = true
						at := start.Add(time.Duration(binary.LittleEndian.Uint64(val[valSent:])))
						res.e2e = append(res.e2e, float64(now.Sub(at).Nanoseconds())/1e3)
						res.lag = append(res.lag, float64(at.Sub(start).Nanoseconds()-int64(i)*int64(period))/1e3)
						next = r.Offset() + 1
					}
					err = it.Err()
					it.Close()
					if err != nil {
						return err
					}
					b = rest
				}
				return nil
			})
		}
		v.Release()
		if err != nil {
			return res, fmt.Errorf("consume at offset %d: %w", next, err)
		}
	}
	res.elapsed = lastAt.Sub(start)
	return res, nil
}

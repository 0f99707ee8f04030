package folio

// Issue 15's produce target: replicated produce over loopback (three
// brokers, acks=all) against the same run's single broker with acks=1.

import (
	"context"
	"fmt"
	"runtime/pprof"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/foliolog/folio/log"
	"github.com/foliolog/folio/replica"
	"github.com/foliolog/folio/topic"
)

// Producers appending at once, and the shape of each batch: 16 records of
// 1 KiB (issue 15's record size).
const (
	rpProducers   = 8
	rpBatchRecs   = 16
	rpRecordBytes = 1024
)

// BenchmarkReplicatedProduce appends 16 x 1 KiB batches through the
// leader's partition (AppendBatch, the produce path below the wire) from 8
// producers at once, topic FlushNone:
//   - single/acks=1: one broker, the partition's only replica;
//   - replicated/acks=all: three brokers on loopback, min.insync.replicas
//     2, both followers fetching over the Kafka endpoint; each append
//     returns once the high watermark passed it.
//
// Each reports bytes/s, the process's CPU per batch (cpu-ns/op), and the
// per-batch append-to-acknowledgement latency percentiles (p50-us,
// p99-us). The target (issue 15) is a
// replicated/single throughput ratio of at least 0.4 in the same run, and
// the added p99 of acks=all over acks=1 is reported in the README.
func BenchmarkReplicatedProduce(b *testing.B) {
	cfg := topic.Config{Flush: log.FlushNone}
	b.Run("single/acks=1", func(b *testing.B) {
		meta := rnMeta(b, 1)
		leader := startRNBroker(b, 1, cfg)
		leader.lead(b, meta, 1)
		rpRun(replica.WithAcks(context.Background(), replica.AckLeader), b, leader)
	})
	b.Run("replicated/acks=all", func(b *testing.B) {
		meta := rnMeta(b, 1, 2, 3)
		brokers := make([]*rnBroker, 3)
		for i := range brokers {
			id := int32(i + 1)
			rpLabeled(id, func() { brokers[i] = startRNBroker(b, id, cfg) })
		}
		brokers[0].lead(b, meta, 2)
		for _, f := range brokers[1:] {
			rpLabeled(f.id, func() {
				fl := f.follower(b, meta, brokers...)
				b.Cleanup(func() { fl.Close() })
			})
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		rpRun(replica.WithAcks(ctx, replica.AckAll), b, brokers[0])
	})
}

// rpLabeled runs f with the pprof label broker=id, which the goroutines f
// starts (the endpoint's connections, the log's background work, a
// follower's fetch loop and its client) inherit, so that a CPU profile of
// the benchmark splits by broker: go tool pprof -tags. The producers'
// goroutines carry broker=producers: their appends are the leader's work.
func rpLabeled(id any, f func()) {
	pprof.Do(context.Background(), pprof.Labels("broker", fmt.Sprint(id)), func(context.Context) { f() })
}

// rpRun spreads b.N batches over rpProducers goroutines appending to
// leader with ctx's acks, and reports the latency percentiles.
func rpRun(ctx context.Context, b *testing.B, leader *rnBroker) {
	batch := rnBatch(b, "produce", rpBatchRecs, rpRecordBytes)
	// One acknowledged append first: followers connected, ISR settled.
	if _, err := leader.p.AppendBatch(ctx, batch); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(rpBatchRecs * rpRecordBytes))
	lat := make([][]time.Duration, rpProducers)
	var (
		mu   sync.Mutex
		next int
		fail error
	)
	take := func() bool {
		mu.Lock()
		defer mu.Unlock()
		if fail != nil || next >= b.N {
			return false
		}
		next++
		return true
	}
	b.ResetTimer()
	u := startUsage()
	var wg sync.WaitGroup
	for w := range rpProducers {
		wg.Go(func() {
			pprof.SetGoroutineLabels(pprof.WithLabels(context.Background(), pprof.Labels("broker", "producers")))
			for take() {
				start := time.Now()
				if _, err := leader.p.AppendBatch(ctx, batch); err != nil {
					mu.Lock()
					fail = err
					mu.Unlock()
					return
				}
				lat[w] = append(lat[w], time.Since(start))
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	// CPU per batch of the whole process (every broker, follower and
	// producer): on a machine with fewer cores than the brokers keep busy,
	// the throughput ratio is bounded by the ratio of these.
	u.report(b, b.N)
	if fail != nil {
		b.Fatal(fail)
	}
	all := slices.Concat(lat...)
	slices.Sort(all)
	pct := func(p float64) float64 {
		return float64(all[min(len(all)-1, int(p*float64(len(all))))].Microseconds())
	}
	b.ReportMetric(pct(0.50), "p50-us")
	b.ReportMetric(pct(0.99), "p99-us")
}

package folio

import (
	"context"
	"encoding/binary"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
)

// TestProducerCloseWhileProducing races Close against goroutines producing
// with ProduceAsync. Every call's callback must run exactly once by the
// time Close returns, with an offset or ErrClosed, and the log must hold
// exactly the acknowledged records at their offsets: a record buffered
// past Close's final kick would be neither appended nor refused.
func TestProducerCloseWhileProducing(t *testing.T) {
	for round := range 20 {
		b := openT(t, t.TempDir(), nil)
		createTopicT(t, b, "race", TopicConfig{Partitions: 2, Flush: FlushNone})
		p := producerT(t, b, &ProducerOptions{BatchBytes: 2048})
		const workers, perWorker = 4, 2000
		type outcome struct {
			calls atomic.Int32
			err   error
			part  int32
			off   int64
		}
		outs := make([][]outcome, workers)
		recs := make([][]Record, workers)
		var started, wg sync.WaitGroup
		started.Add(workers)
		for w := range workers {
			outs[w] = make([]outcome, perWorker)
			recs[w] = make([]Record, perWorker)
			wg.Add(1)
			go func() {
				defer wg.Done()
				started.Done()
				for i := range perWorker {
					v := make([]byte, 16)
					binary.BigEndian.PutUint64(v, uint64(w))
					binary.BigEndian.PutUint64(v[8:], uint64(i))
					recs[w][i] = Record{Topic: "race", Value: v}
					o := &outs[w][i]
					p.ProduceAsync(context.Background(), &recs[w][i], func(r *Record, err error) {
						o.err, o.part, o.off = err, r.Partition, r.Offset
						o.calls.Add(1)
					})
				}
			}()
		}
		started.Wait()
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
		wg.Wait() // calls after Close settle in the call
		acked := map[[2]int64][]byte{}
		closed := 0
		for w := range workers {
			for i := range perWorker {
				o := &outs[w][i]
				if n := o.calls.Load(); n != 1 {
					t.Fatalf("round %d: record %d/%d: callback ran %d times", round, w, i, n)
				}
				switch {
				case o.err == nil:
					acked[[2]int64{int64(o.part), o.off}] = recs[w][i].Value
				case errors.Is(o.err, ErrClosed):
					closed++
				default:
					t.Fatalf("round %d: record %d/%d: %v", round, w, i, o.err)
				}
			}
		}
		stored := 0
		for part := range int32(2) {
			l, err := partLog(b, "race", part)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range logRecords(t, l) {
				want, ok := acked[[2]int64{int64(part), r.offset}]
				if !ok || string(want) != string(r.value) {
					t.Fatalf("round %d: partition %d offset %d holds %x, acknowledged %x (%v)", round, part, r.offset, r.value, want, ok)
				}
				stored++
			}
		}
		if stored != len(acked) {
			t.Fatalf("round %d: %d records acknowledged, %d in the log", round, len(acked), stored)
		}
		t.Logf("round %d: %d acknowledged, %d refused by Close", round, len(acked), closed)
	}
}

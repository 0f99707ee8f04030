package folio

import (
	"context"
	"fmt"
	"testing"
)

// TestProducerSendersPark: after a Flush the partitions' senders wait for
// their next records instead of exiting, at most maxParked of them per
// Producer; a parked sender appends the next records (they are
// acknowledged, in order), and Close ends every wait (goleak, in TestMain,
// fails the package on a sender left behind).
func TestProducerSendersPark(t *testing.T) {
	const parts = maxParked + 16
	b := openT(t, t.TempDir(), nil)
	createTopicT(t, b, "t", TopicConfig{Partitions: parts, Flush: FlushNone})
	p := producerT(t, b, &ProducerOptions{ManualPartitioning: true})
	ctx := context.Background()
	produceAll := func(round int) {
		t.Helper()
		recs := make([]Record, parts)
		errs := make([]error, parts)
		for i := range recs {
			recs[i] = Record{Topic: "t", Partition: int32(i), Value: []byte(fmt.Sprint(round))}
			p.ProduceAsync(ctx, &recs[i], func(_ *Record, err error) { errs[i] = err })
		}
		if err := p.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		for i := range recs {
			if errs[i] != nil || recs[i].Offset != int64(round) {
				t.Fatalf("round %d, partition %d: offset %d, error %v", round, i, recs[i].Offset, errs[i])
			}
		}
	}
	produceAll(0)
	// Senders park once they find nothing left; Flush returns when the
	// callbacks ran, which is before that, so wait for the count to settle
	// by producing again: every round must be acknowledged whether its
	// partition's sender was parked or not.
	for round := 1; round < 5; round++ {
		if n := p.parked.Load(); n > maxParked {
			t.Fatalf("%d senders parked, cap %d", n, maxParked)
		}
		produceAll(round)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if n := p.parked.Load(); n != 0 {
		t.Fatalf("%d senders still parked after Close", n)
	}
}

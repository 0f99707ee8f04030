package folio

import (
	"context"
	"testing"
)

// TestProducerOnePartitionThenGrown checks the producer's one-partition
// route (no sticky partitioner consulted): unkeyed records of a
// one-partition topic all go to partition 0, and once the topic grows the
// sticky partitioner, never consulted before, spreads them again.
func TestProducerOnePartitionThenGrown(t *testing.T) {
	b := openT(t, t.TempDir(), nil)
	createTopicT(t, b, "one", TopicConfig{Partitions: 1, Flush: FlushNone})
	// Small batches, so that the sticky partition moves every few records.
	p := producerT(t, b, &ProducerOptions{BatchBytes: 1024})
	ctx := context.Background()
	produce := func(n int) map[int32]int {
		t.Helper()
		recs := make([]Record, n)
		var failed failures
		for i := range recs {
			recs[i] = Record{Topic: "one", Value: make([]byte, 100)}
			p.ProduceAsync(ctx, &recs[i], failed.callback)
		}
		if err := p.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		if err := failed.get(); err != nil {
			t.Fatal(err)
		}
		per := map[int32]int{}
		for _, r := range recs {
			per[r.Partition]++
		}
		return per
	}
	if per := produce(500); len(per) != 1 || per[0] != 500 {
		t.Fatalf("one partition: records per partition %v, want all 500 on 0", per)
	}
	if _, err := b.AddPartitions("one", 4); err != nil {
		t.Fatal(err)
	}
	per := produce(500)
	if len(per) < 2 {
		t.Fatalf("grown to 4 partitions: records per partition %v, want them spread", per)
	}
	for part := range per {
		if part < 0 || part >= 4 {
			t.Fatalf("record on partition %d of 4", part)
		}
	}
}

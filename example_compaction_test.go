package folio_test

import (
	"context"
	"fmt"
	"os"

	"github.com/foliolog/folio"
)

// Example_compaction keeps the latest value of each key of a compacted
// topic. The Broker's cleaner compacts on its own once half a partition is
// dirty; Broker.Compact cleans a partition now. The records keep
// their offsets, so a consumer from the earliest offset sees gaps, and the
// active segment (here the last record) is never cleaned.
func Example_compaction() {
	dir, err := os.MkdirTemp("", "folio-compaction-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)

	b, err := folio.Open(dir, nil)
	if err != nil {
		panic(err)
	}
	defer b.Close()
	// Small segments, so that the updates land in sealed segments.
	cfg := folio.TopicConfig{Cleanup: folio.CleanupCompact, SegmentBytes: 200}
	if _, err := b.CreateTopic("prices", cfg); err != nil {
		panic(err)
	}
	ctx := context.Background()
	p, err := b.NewProducer(nil)
	if err != nil {
		panic(err)
	}
	for _, kv := range [][2]string{{"apple", "1.10"}, {"pear", "0.90"}, {"apple", "1.20"}, {"plum", "2.00"}, {"pear", ""}, {"apple", "1.25"}, {"fig", "3.00"}} {
		r := &folio.Record{Topic: "prices", Key: []byte(kv[0])}
		if kv[1] != "" {
			r.Value = []byte(kv[1]) // no value: a tombstone, which deletes the key
		}
		if _, _, err := p.Produce(ctx, r); err != nil {
			panic(err)
		}
	}
	// The Broker's cleaner would get to it once enough is dirty; clean now.
	if _, err := b.Compact(ctx, "prices", 0); err != nil {
		panic(err)
	}

	c, err := b.NewConsumer(nil)
	if err != nil {
		panic(err)
	}
	if err := c.Assign(folio.Assignment{Topic: "prices", Partition: 0, Start: folio.AtEarliest()}); err != nil {
		panic(err)
	}
	// Read up to the high watermark. (Lag is measured from the
	// consumer's position, which a Poll moves past all the records it
	// returned, before Records has yielded them one by one.)
	part, err := b.Partition("prices", 0)
	if err != nil {
		panic(err)
	}
	end := part.HighWatermark()
	for r, err := range c.Records(ctx) {
		if err != nil {
			panic(err)
		}
		if r.Value == nil {
			fmt.Printf("%d %s deleted\n", r.Offset, r.Key)
		} else {
			fmt.Printf("%d %s=%s\n", r.Offset, r.Key, r.Value)
		}
		if r.Offset+1 >= end {
			break
		}
	}
	// Output:
	// 3 plum=2.00
	// 4 pear deleted
	// 5 apple=1.25
	// 6 fig=3.00
}

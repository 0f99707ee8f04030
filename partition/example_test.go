package partition_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/foliolog/folio/log"
	"github.com/foliolog/folio/partition"
	"github.com/foliolog/folio/readpath"
	"github.com/foliolog/folio/record"
	"github.com/foliolog/folio/topic"
	"github.com/foliolog/folio/vfs"
)

// Example appends a batch from an idempotent producer, as a Kafka Produce
// request carries it, retries it, and reads it back up to the high
// watermark.
func Example() {
	dir, err := os.MkdirTemp("", "folio-partition-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)

	in := topic.Info{Name: "orders", Config: topic.Config{TimestampType: topic.CreateTime}}
	p, err := partition.Open(vfs.Default, filepath.Join(dir, "orders-0"), in, 0, log.State{}, nil)
	if err != nil {
		panic(err)
	}
	defer p.Close()

	bld, err := record.NewBuilder(nil)
	if err != nil {
		panic(err)
	}
	bld.ProducerID, bld.ProducerEpoch, bld.BaseSequence = 1000, 0, 0
	for _, v := range []string{"espresso", "latte"} {
		if err := bld.Append(record.Record{Key: []byte("table-4"), Value: []byte(v), Timestamp: 1_700_000_000_000}); err != nil {
			panic(err)
		}
	}
	batch, err := bld.Build(nil)
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	for range 2 { // the second time is a producer's retry
		res, err := p.AppendBatch(ctx, append([]byte(nil), batch...))
		if err != nil {
			panic(err)
		}
		fmt.Printf("offsets %d-%d, duplicate %v, log append time %d\n", res.BaseOffset, res.LastOffset, res.Duplicate, res.LogAppendTime)
	}

	v, err := p.Read(0, 1<<20, log.BoundHighWatermark)
	if err != nil {
		panic(err)
	}
	defer v.Release()
	err = readpath.Guard(func() error {
		buf, err := v.Bytes()
		if err != nil {
			return err
		}
		bt, _, err := record.Parse(buf)
		if err != nil {
			return err
		}
		it := bt.Records(nil)
		defer it.Close()
		for it.Next() {
			fmt.Printf("%d %s=%s\n", it.Record().Offset(), it.Record().Key(), it.Record().Value())
		}
		return it.Err()
	})
	if err != nil {
		panic(err)
	}
	// Output:
	// offsets 0-1, duplicate false, log append time -1
	// offsets 0-1, duplicate true, log append time -1
	// 0 table-4=espresso
	// 1 table-4=latte
}

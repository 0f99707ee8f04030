package record_test

import (
	"fmt"

	"github.com/foliolog/folio/record"
)

func Example() {
	b, err := record.NewBuilder(&record.BuilderOptions{Codec: record.CodecZstd})
	if err != nil {
		panic(err)
	}
	b.BaseOffset = 40
	_ = b.Append(record.Record{Key: []byte("user-1"), Value: []byte("signed up"), Timestamp: 1_700_000_000_000})
	_ = b.Append(record.Record{Key: []byte("user-1"), Value: nil, Timestamp: 1_700_000_000_500,
		Headers: []record.Header{{Key: "reason", Value: []byte("gdpr")}}})
	batch, err := b.Build(nil)
	if err != nil {
		panic(err)
	}

	// A segment file or fetch response is batches back to back; Parse
	// splits and validates them without copying.
	stream := append(append([]byte{}, batch...), batch...)
	for len(stream) > 0 {
		var bt record.Batch
		if bt, stream, err = record.Parse(stream); err != nil {
			panic(err)
		}
		fmt.Printf("batch %d-%d, %s, %d records\n", bt.BaseOffset(), bt.LastOffset(), bt.Codec(), bt.NumRecords())
		it := bt.Records(nil)
		for it.Next() {
			r := it.Record()
			reason, _ := r.HeaderValue("reason")
			fmt.Printf("  %d %s value=%q tombstone=%v reason=%q\n", r.Offset(), r.Key(), r.Value(), r.ValueIsNull(), reason)
		}
		if err := it.Err(); err != nil {
			panic(err)
		}
		it.Close()
	}
	// Output:
	// batch 40-41, zstd, 2 records
	//   40 user-1 value="signed up" tombstone=false reason=""
	//   41 user-1 value="" tombstone=true reason="gdpr"
	// batch 40-41, zstd, 2 records
	//   40 user-1 value="signed up" tombstone=false reason=""
	//   41 user-1 value="" tombstone=true reason="gdpr"
}

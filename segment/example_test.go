package segment_test

import (
	"fmt"
	"os"

	"github.com/foliolog/folio/internal/vfs"
	"github.com/foliolog/folio/record"
	"github.com/foliolog/folio/segment"
)

// A segment's life: create it, append batches whose offsets the log
// assigned, read from an offset, look up by time, seal it, and open it
// again later without scanning it.
func ExampleCreate() {
	dir, err := os.MkdirTemp("", "segment-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)

	s, err := segment.Create(vfs.Default, dir, 100, nil)
	if err != nil {
		panic(err)
	}
	b, _ := record.NewBuilder(nil)
	for i := range 3 {
		b.Reset()
		b.BaseOffset = 100 + int64(2*i) // two records per batch
		b.Append(record.Record{Value: []byte("hello"), Timestamp: 5000 + int64(i)})
		b.Append(record.Record{Value: []byte("world"), Timestamp: 5000 + int64(i)})
		batch, _ := b.Build(nil)
		pos, err := s.Append(batch)
		if err != nil {
			panic(err)
		}
		fmt.Println("appended offsets", batch.BaseOffset(), "to", batch.LastOffset(), "at position", pos)
	}

	// Offset 103 is in the second batch; a read returns whole batches.
	v, err := s.Read(103, 1<<20, -1)
	if err != nil {
		panic(err)
	}
	data, _ := v.Bytes()
	fmt.Println("read from position", v.Pos(), "first batch starts at offset", record.Batch(data).BaseOffset())
	v.Release()

	off, ok, _ := s.OffsetForTime(5001)
	fmt.Println("first batch at or after t=5001:", off, ok)

	if err := s.Seal(); err != nil {
		panic(err)
	}
	s.Close()

	r, _ := segment.Open(vfs.Default, dir, 100, nil)
	defer r.Close()
	next, _ := r.NextOffset()
	fmt.Println("reopened: next offset", next, "index rebuilds", r.IndexRebuilds())
	// Output:
	// appended offsets 100 to 101 at position 0
	// appended offsets 102 to 103 at position 85
	// appended offsets 104 to 105 at position 170
	// read from position 85 first batch starts at offset 102
	// first batch at or after t=5001: 102 true
	// reopened: next offset 106 index rebuilds 0
}

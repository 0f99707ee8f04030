package segment_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/foliolog/folio/index"
	"github.com/foliolog/folio/record"
	"github.com/foliolog/folio/segment"
	"github.com/foliolog/folio/vfs"
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

// Checking a segment's files without changing them, as `folio verify` does
// beside a live writer: here a bit flipped in the last batch's records.
func ExampleVerify() {
	dir, err := os.MkdirTemp("", "segment-verify-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)

	s, err := segment.Create(vfs.Default, dir, 0, &segment.Options{IndexIntervalBytes: 1})
	if err != nil {
		panic(err)
	}
	b, _ := record.NewBuilder(nil)
	for i := range 4 {
		b.Reset()
		b.BaseOffset = int64(i)
		b.Append(record.Record{Value: []byte("payload"), Timestamp: 1000 + int64(i)})
		batch, _ := b.Build(nil)
		if _, err := s.Append(batch); err != nil {
			panic(err)
		}
	}
	if err := s.Seal(); err != nil {
		panic(err)
	}
	s.Close()

	report, err := segment.Verify(vfs.Default, dir, 0)
	if err != nil {
		panic(err)
	}
	fmt.Println("intact:", report.OK(), "batches", report.Batches, "index entries", report.OffsetEntries, report.TimeEntries)

	data, err := os.ReadFile(segment.LogPath(dir, 0))
	if err != nil {
		panic(err)
	}
	data[len(data)-1] ^= 1
	if err := os.WriteFile(segment.LogPath(dir, 0), data, 0o644); err != nil {
		panic(err)
	}
	report, err = segment.Verify(vfs.Default, dir, 0)
	if err != nil {
		panic(err)
	}
	fmt.Println("damaged: valid prefix", report.ValidBytes, "of", report.LogBytes, "bytes,", report.Batches, "batches")
	for _, p := range report.Problems {
		fmt.Printf("%s entry %d at %d: corrupt log %v, corrupt index %v\n",
			filepath.Ext(p.Path), p.Entry, p.Position, errors.Is(p, segment.ErrCorrupt), errors.Is(p, index.ErrCorrupt))
	}
	// Output:
	// intact: true batches 4 index entries 3 3
	// damaged: valid prefix 225 of 300 bytes, 3 batches
	// .log entry -1 at 225: corrupt log true, corrupt index false
	// .index entry 2 at 16: corrupt log false, corrupt index true
	// .timeindex entry 2 at 24: corrupt log false, corrupt index true
}

package main

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/foliolog/folio"
	"github.com/foliolog/folio/record"
	"github.com/foliolog/folio/segment"
	"github.com/foliolog/folio/topic"
)

func TestReadIndexFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "x.index")
	var data []byte
	for i := 1; i <= 3; i++ {
		data = binary.BigEndian.AppendUint32(data, uint32(10*i))
		data = binary.BigEndian.AppendUint32(data, uint32(1000*i))
	}
	data = append(data, make([]byte, 8*5)...) // space allocated ahead
	data = append(data, 7, 7, 7)              // half an entry: ignored
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	entries, err := readOffsetIndex(p, 100)
	if err != nil || len(entries) != 3 {
		t.Fatalf("entries %v, %v", entries, err)
	}
	if entries[2] != (offsetEntry{Offset: 130, Pos: 3000}) {
		t.Errorf("entry 2 = %+v", entries[2])
	}
	for _, c := range []struct {
		offset int64
		want   int64
		ok     bool
	}{{109, 0, false}, {110, 110, true}, {125, 120, true}, {500, 130, true}} {
		e, ok := lookupOffset(entries, c.offset)
		if ok != c.ok || (ok && e.Offset != c.want) {
			t.Errorf("lookup %d = %+v, %v", c.offset, e, ok)
		}
	}
	if entries, err := readOffsetIndex(filepath.Join(dir, "none.index"), 0); err != nil || entries != nil {
		t.Errorf("a missing index: %v, %v", entries, err)
	}
}

// TestPositionUsesIndex: a reader placed deep in a segment starts from the
// offset index's entry, not from the segment's first byte, and one whose
// index lies falls back to a scan and still reads the right records.
func TestPositionUsesIndex(t *testing.T) {
	dir := t.TempDir()
	fill(t, dir, "ix", folio.TopicConfig{SegmentBytes: 1 << 20, Flush: folio.FlushNone}, 400, func(i int) string { return strings.Repeat("i", 200) })
	d, err := openDataDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	in, err := d.topic("ix")
	if err != nil {
		t.Fatal(err)
	}
	read := func(offset int64) (startPos int64, first int64) {
		t.Helper()
		pr := &partReader{pv: d.partView(in, 0)}
		if err := pr.positionAt(offset); err != nil {
			t.Fatal(err)
		}
		defer pr.close()
		startPos = pr.lf.Pos()
		first = -1
		err := pr.poll(pollBytes, func(b record.Batch, from int64) (int64, bool, error) {
			it := b.Records(nil)
			defer it.Close()
			for it.Next() {
				if r := it.Record(); r.Offset() >= from && first < 0 {
					first = r.Offset()
				}
			}
			return b.LastOffset() + 1, true, it.Err()
		})
		if err != nil {
			t.Fatal(err)
		}
		return startPos, first
	}
	pos, first := read(300)
	if first != 300 || pos == 0 {
		t.Errorf("from 300: first record %d, reading from position %d (want the index's)", first, pos)
	}
	// Make every entry point one batch further: the entries no longer
	// match the log, and the reader must not trust them.
	idx := segment.IndexPath(filepath.Join(dir, topic.DirName("ix", 0)), 0)
	data, err := os.ReadFile(idx)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+8 <= len(data); i += 8 {
		if rel := binary.BigEndian.Uint32(data[i:]); rel != 0 || binary.BigEndian.Uint32(data[i+4:]) != 0 {
			binary.BigEndian.PutUint32(data[i:], rel+1)
		}
	}
	if err := os.WriteFile(idx, data, 0o644); err != nil {
		t.Fatal(err)
	}
	pos, first = read(300)
	if first != 300 || pos != 0 {
		t.Errorf("with a lying index, from 300: first record %d from position %d (want a scan from 0)", first, pos)
	}
}

// TestLaterSegmentDoesNotTrustAListing: a listing taken while a writer
// rolls can miss a segment yet show a later one; moving on must not skip
// the missed one. Here the reader's listing is stale in just that way.
func TestLaterSegmentDoesNotTrustAListing(t *testing.T) {
	dir := t.TempDir()
	writeSegment(t, dir, 0, buildBatch(t, 0, 10, 5))
	writeSegment(t, dir, 10, buildBatch(t, 10, 10, 5))
	writeSegment(t, dir, 20, buildBatch(t, 20, 10, 5))
	pv := &partView{dir: dir, topic: "t", ckptStart: -1, maxBatch: defaultMaxBatch}
	pr := &partReader{pv: pv}
	if err := pr.positionAt(0); err != nil {
		t.Fatal(err)
	}
	defer pr.close()
	pr.bases = []int64{0, 20} // as a racing listing might have left it
	var got []int64
	for !pr.atEnd {
		err := pr.poll(pollBytes, func(b record.Batch, from int64) (int64, bool, error) {
			got = append(got, b.BaseOffset())
			return b.LastOffset() + 1, false, nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if !equalInt64s(got, []int64{0, 10, 20}) {
		t.Errorf("batches read %v, want 0, 10, 20", got)
	}
	// A gap (compaction, a moved start) is crossed through a listing.
	dir2 := t.TempDir()
	writeSegment(t, dir2, 0, buildBatch(t, 0, 10, 5))
	writeSegment(t, dir2, 50, buildBatch(t, 50, 10, 5))
	pr2 := &partReader{pv: &partView{dir: dir2, topic: "t", ckptStart: -1, maxBatch: defaultMaxBatch}}
	if err := pr2.positionAt(0); err != nil {
		t.Fatal(err)
	}
	defer pr2.close()
	got = nil
	for !pr2.atEnd {
		if err := pr2.poll(pollBytes, func(b record.Batch, from int64) (int64, bool, error) {
			got = append(got, b.BaseOffset())
			return b.LastOffset() + 1, false, nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	if !equalInt64s(got, []int64{0, 50}) {
		t.Errorf("batches read across a gap %v, want 0, 50", got)
	}
}

package segment

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/foliolog/folio/record"
)

// Recovery's record-count rule on its own: a batch whose CRC is right but
// whose header claims more records than it has offsets
// (recordCount > lastOffsetDelta+1) ends the valid prefix, even with valid
// batches after it; fewer records than offsets, as compaction leaves, is
// valid. The CRC covers the count, so only a writer that computed the CRC
// over a bad header makes such a batch, which is why no bit flip reaches
// this check.
func TestRecoverCutsBatchWithMoreRecordsThanOffsets(t *testing.T) {
	rng := testRand(t)
	const base = 40
	opts := &Options{IndexIntervalBytes: 256}
	c, m := crashSegment(t, rng, base, 12, opts)

	next := m.next()
	// Two records at deltas 0 and 5: fewer records than offsets, kept.
	sparse := buildBatch(t, next, []int32{0, 5}, []int64{1, 2}, 20, rng)
	if sparse.NumRecords() != 2 || sparse.LastOffsetDelta() != 5 {
		t.Fatalf("sparse batch: %d records, lastOffsetDelta %d", sparse.NumRecords(), sparse.LastOffsetDelta())
	}
	// Two records, lastOffsetDelta rewritten to 0 and the CRC recomputed:
	// one offset for two records.
	tooMany := bytes.Clone(buildBatch(t, sparse.LastOffset()+1, []int32{0, 1}, []int64{3, 4}, 20, rng))
	tooMany[23], tooMany[24], tooMany[25], tooMany[26] = 0, 0, 0, 0
	fixCRC(tooMany)
	if err := record.Batch(tooMany).Validate(); err != nil {
		t.Fatalf("the crafted batch must pass every check but the count: %v", err)
	}
	after := buildBatch(t, record.Batch(tooMany).LastOffset()+1, []int32{0}, []int64{5}, 20, rng)

	cc := c
	cc.log = append(append(append(bytes.Clone(c.log), sparse...), tooMany...), after...)
	res := recoverAndCheck(t, cc, base, opts, true)
	keep := int64(len(c.log) + len(sparse))
	if res.ValidBytes != keep || res.Batches != len(m.batches)+1 || res.BytesCut != int64(len(tooMany)+len(after)) {
		t.Fatalf("Recover = %+v; want the prefix through the sparse batch (%d bytes, %d batches) and %d bytes cut",
			res, keep, len(m.batches)+1, len(tooMany)+len(after))
	}
	if res.LastOffset != sparse.LastOffset() {
		t.Fatalf("LastOffset %d, want the sparse batch's %d", res.LastOffset, sparse.LastOffset())
	}
}

// The default MaxBatchBytes is Kafka's message.max.bytes, 1 MiB + 12: a
// batch of exactly that size is appended, one byte more is ErrBatchTooLarge
// and changes nothing.
func TestDefaultMaxBatchBytes(t *testing.T) {
	rng := testRand(t)
	dir := segDir(t)
	s := mustCreate(t, dir, 0, nil)
	sized := func(base int64, size int) record.Batch {
		t.Helper()
		v := size - 100
		for range 8 {
			b := buildBatch(t, base, []int32{0}, []int64{1}, v, rng)
			if len(b) == size {
				return b
			}
			v += size - len(b)
		}
		t.Fatalf("no one-record batch of exactly %d bytes", size)
		return nil
	}
	over := sized(0, DefaultMaxBatchBytes+1)
	if _, err := s.Append(over); !errors.Is(err, ErrBatchTooLarge) {
		t.Fatalf("Append of %d bytes with default options: %v, want ErrBatchTooLarge", len(over), err)
	}
	if size, err := s.Size(); err != nil || size != 0 {
		t.Fatalf("refused append left size %d, %v", size, err)
	}
	at := sized(0, DefaultMaxBatchBytes)
	if _, err := s.Append(at); err != nil {
		t.Fatalf("Append of exactly DefaultMaxBatchBytes (%d): %v", len(at), err)
	}
	m := &model{}
	m.add(at)
	checkAgainst(t, s, m)
}

// A .log longer than a segment can index (positions are 4 signed bytes, so
// at most 2 GiB - 1) is refused with ErrCorrupt when the segment loads or
// activates, and nothing panics; Recover cuts it to its valid prefix. (Such
// a file cannot hold 2 GiB of valid batches that Append accepted, so the
// size check at load is an early answer for what a scan would also find.)
// The file is sparse, so the test costs no disk.
func TestOversizedLogRefused(t *testing.T) {
	dir := segDir(t)
	path := LogPath(dir, 0)
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(MaxSegmentBytesLimit + 1); err != nil {
		f.Close()
		t.Skipf("cannot make a sparse %d-byte file here: %v", int64(MaxSegmentBytesLimit+1), err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	s := mustOpen(t, dir, 0, nil)
	if _, err := s.NextOffset(); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("loading a %d-byte .log: %v, want ErrCorrupt", int64(MaxSegmentBytesLimit+1), err)
	}
	if err := s.Activate(); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("activating a %d-byte .log: %v, want ErrCorrupt", int64(MaxSegmentBytesLimit+1), err)
	}
	res, err := s.Recover()
	if err != nil {
		t.Fatalf("Recover: %v", err)
	}
	if res.ValidBytes != 0 || res.BytesCut != MaxSegmentBytesLimit+1 || !errors.Is(res.Cause, ErrCorrupt) {
		t.Fatalf("Recover = %+v", res)
	}
	if n, err := s.NextOffset(); err != nil || n != 0 {
		t.Fatalf("after Recover: NextOffset %d, %v", n, err)
	}
}

// Every bad Options field is refused with an error that names it.
func TestOptionsErrorsNameTheField(t *testing.T) {
	for _, tc := range []struct {
		opts  Options
		field string
	}{
		{Options{IndexIntervalBytes: -1}, "Options.IndexIntervalBytes"},
		{Options{MaxIndexBytes: 8}, "Options.MaxIndexBytes"},
		{Options{MaxBatchBytes: 60}, "Options.MaxBatchBytes"},
		{Options{MaxSegmentBytes: MaxSegmentBytesLimit + 1}, "Options.MaxSegmentBytes"},
		{Options{MaxSegmentBytes: 10}, "Options.MaxSegmentBytes"},
		{Options{MaxBatchBytes: 1 << 20, MaxSegmentBytes: 1 << 19}, "Options.MaxBatchBytes"},
		{Options{ReadPath: 9}, "Options.ReadPath"},
	} {
		_, err := Create(testFS, segDir(t), 0, &tc.opts)
		if err == nil || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("Options %+v: %v, want an error naming %s", tc.opts, err, tc.field)
		}
		if _, err := Open(testFS, segDir(t), 0, &tc.opts); err == nil || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("Open with Options %+v: %v, want an error naming %s", tc.opts, err, tc.field)
		}
	}
}

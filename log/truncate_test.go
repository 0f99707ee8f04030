package log

import (
	"bytes"
	"errors"
	"testing"

	"github.com/foliolog/folio/readpath"
	"github.com/foliolog/folio/vfs/faultfs"
)

func TestTruncateTo(t *testing.T) {
	cases := []struct {
		name    string
		to      int64
		wantEnd int64
	}{
		{"inside a sealed segment", 25, 24}, // the batch 24..27 goes whole
		{"at a batch boundary in a sealed segment", 24, 24},
		{"inside the active segment", 237, 236},
		{"at the first offset", 0, 0},
		{"at the end", 240, 240},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			o := &Options{SegmentBytes: 2048, FlushPolicy: FlushSync, IndexIntervalBytes: 300}
			l := openT(t, nil, dir, o, State{})
			want := appendN(t, l, "t", 60, 4, 60)
			segsBefore := l.Stats().Segments
			if err := l.TruncateTo(c.to); err != nil {
				t.Fatal(err)
			}
			if l.LogEndOffset() != c.wantEnd || l.HighWatermark() != c.wantEnd || l.DurableEndOffset() > c.wantEnd {
				t.Fatalf("end %d hw %d durable %d, want %d", l.LogEndOffset(), l.HighWatermark(), l.DurableEndOffset(), c.wantEnd)
			}
			sameRecs(t, readAll(t, l, 0), want[:c.wantEnd])
			if c.to < 240 && l.Stats().Segments >= segsBefore && c.to < 200 {
				t.Fatalf("%d segments after truncating to %d, had %d", l.Stats().Segments, c.to, segsBefore)
			}
			// Appends continue from the new end, in the reactivated segment.
			first, _, err := l.Append(makeBatch(t, "u", 0, 2, 60, 1))
			if err != nil || first != c.wantEnd {
				t.Fatalf("append after truncate: %d %v", first, err)
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			l2 := openT(t, nil, dir, o, l.Checkpoint())
			got := readAll(t, l2, 0)
			sameRecs(t, got[:c.wantEnd], want[:c.wantEnd])
			if len(got) != int(c.wantEnd)+2 || got[c.wantEnd].value != string(payload("u", 0, 60)) {
				t.Fatalf("after reopen: %d records", len(got))
			}
		})
	}
}

// TestTruncateAtSegmentBase: truncating exactly at a segment's base offset
// deletes that segment and every later one, and the previous segment
// becomes the active one with everything it held.
func TestTruncateAtSegmentBase(t *testing.T) {
	l := openT(t, nil, t.TempDir(), &Options{SegmentBytes: 2048, FlushPolicy: FlushNone}, State{})
	want := appendN(t, l, "s", 60, 4, 60)
	bases := segBases(l)
	if len(bases) < 4 {
		t.Fatalf("%d segments", len(bases))
	}
	if err := l.TruncateTo(bases[2]); err != nil {
		t.Fatal(err)
	}
	if l.LogStartOffset() != 0 || l.LogEndOffset() != bases[2] || l.Stats().Segments != 2 {
		t.Fatalf("start %d end %d segments %d, want [0, %d) in 2 segments", l.LogStartOffset(), l.LogEndOffset(), l.Stats().Segments, bases[2])
	}
	sameRecs(t, readAll(t, l, 0), want[:bases[2]])
	if first, _, err := l.Append(makeBatch(t, "n", 0, 1, 10, 1)); err != nil || first != bases[2] {
		t.Fatalf("append: %d %v", first, err)
	}
}

func TestTruncateBelowStartRestarts(t *testing.T) {
	l := openT(t, nil, t.TempDir(), &Options{SegmentBytes: 2048, FlushPolicy: FlushNone}, State{})
	appendN(t, l, "t", 30, 4, 60)
	if _, err := l.DeleteRecordsBefore(50); err != nil {
		t.Fatal(err)
	}
	if err := l.TruncateTo(40); err != nil {
		t.Fatal(err)
	}
	if l.LogStartOffset() != 40 || l.LogEndOffset() != 40 || l.Stats().Segments != 1 {
		t.Fatalf("start %d end %d segments %d, want an empty log at 40", l.LogStartOffset(), l.LogEndOffset(), l.Stats().Segments)
	}
	if first, _, err := l.Append(makeBatch(t, "n", 0, 1, 10, 1)); err != nil || first != 40 {
		t.Fatalf("append: %d %v", first, err)
	}
}

// TestTruncateUnderView: a reader holding a view of bytes that TruncateTo
// removes keeps reading them (the segment never shrinks a file under a
// mapping), and the log moves on.
func TestTruncateUnderView(t *testing.T) {
	for _, kind := range []readpath.Kind{readpath.Mmap, readpath.Sendfile} {
		t.Run(kind.String(), func(t *testing.T) {
			l := openT(t, nil, t.TempDir(), &Options{SegmentBytes: 4096, ReadPath: kind, FlushPolicy: FlushNone}, State{})
			want := appendN(t, l, "v", 40, 2, 100)
			v, err := l.Read(20, 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			defer v.Release()
			var before []byte
			if err := readpath.Guard(func() error {
				b, err := v.Bytes()
				before = bytes.Clone(b)
				return err
			}); err != nil {
				t.Fatal(err)
			}
			if err := l.TruncateTo(10); err != nil {
				t.Fatal(err)
			}
			appendN(t, l, "w", 10, 2, 100) // overwrite the range on disk
			var after bytes.Buffer
			if _, err := v.WriteTo(&after); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(after.Bytes(), before) {
				t.Fatal("a held view changed after truncation")
			}
			_, recs, err := decodeView(v, 20)
			if err != nil || len(recs) == 0 || recs[0] != want[20] {
				t.Fatalf("held view: %v %+v", err, recs)
			}
			got := readAll(t, l, 0)
			sameRecs(t, got[:10], want[:10])
			if got[10].value != string(payload("w", 0, 100)) {
				t.Fatalf("record 10 after truncate and append: %+v", got[10])
			}
		})
	}
}

// TestTruncateSurvivesPowerCut: once TruncateTo returns, the removed records
// do not come back after a power cut.
func TestTruncateSurvivesPowerCut(t *testing.T) {
	fsys := faultfs.New()
	dir := t.TempDir()
	o := &Options{SegmentBytes: 2048, FlushPolicy: FlushSync, noBackground: true}
	l, err := Open(fsys, dir, o, State{})
	if err != nil {
		t.Fatal(err)
	}
	want := appendN(t, l, "p", 40, 4, 60)
	st := l.Checkpoint()
	if err := l.TruncateTo(70); err != nil {
		t.Fatal(err)
	}
	if err := fsys.PowerCut(); err != nil {
		t.Fatal(err)
	}
	l.kill()
	l2 := openT(t, fsys, dir, o, st) // the checkpoint from before the truncation
	sameRecs(t, readAll(t, l2, 0), want[:68])
}

// TestTruncateFailsWaitingAppenders: an appender whose records a truncation
// removed before they were acknowledged learns they are gone.
func TestTruncateFailsWaitingAppenders(t *testing.T) {
	l := openT(t, nil, t.TempDir(), &Options{FlushPolicy: FlushSync}, State{})
	appendN(t, l, "a", 3, 1, 10)
	// Simulate an appender between its write and its fsync: registered,
	// with the generation of its write.
	l.appendMu.Lock()
	target, gen := l.next, l.truncGen.Load()
	l.syncWaiters++
	l.appendMu.Unlock()
	if err := l.TruncateTo(1); err != nil {
		t.Fatal(err)
	}
	if err := l.syncTo(target, gen); !errors.Is(err, ErrTruncated) {
		t.Fatalf("waiter for truncated records: %v", err)
	}
	// One whose records survive a truncation after them is acknowledged.
	appendN(t, l, "b", 3, 1, 10)
	l.appendMu.Lock()
	target, gen = l.next, l.truncGen.Load()
	l.appendMu.Unlock()
	appendN(t, l, "c", 3, 1, 10)
	if err := l.TruncateTo(target); err != nil {
		t.Fatal(err)
	}
	if l.truncGen.Load() == gen {
		t.Fatal("the truncation did not count")
	}
	if err := l.syncTo(target, gen); err != nil {
		t.Fatalf("waiter for surviving records: %v", err)
	}
	l.appendMu.Lock()
	l.syncWaiters--
	l.appendMu.Unlock()
}

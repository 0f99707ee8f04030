package log

import (
	"errors"
	"testing"

	"github.com/google/btree"
)

// TestFloorEntry checks the readers' segment lookup on the snapshot's
// sorted list against its definition: the last segment starting at or
// below the offset, else the first; and the segment after a given one.
func TestFloorEntry(t *testing.T) {
	for _, bases := range [][]int64{nil, {0}, {5}, {0, 10, 20}, {3, 4, 100, 1000, 1001}} {
		tree := btree.NewG[*segEntry](16, lessEntry)
		for _, b := range bases {
			tree.ReplaceOrInsert(&segEntry{base: b})
		}
		sn := newSnapshot(tree.Clone(), 0)
		// The table's bases are ascending, so the answers come from them
		// directly, not from the snapshot's own list.
		for off := int64(-1); off <= 1003; off++ {
			want := int64(-1)
			for _, b := range bases {
				if b <= off || want < 0 {
					want = b
				}
			}
			got := floorEntry(sn, off)
			switch {
			case got == nil && want >= 0, got != nil && got.base != want:
				t.Fatalf("bases %v: floorEntry(%d) = %v, want base %d", bases, off, got, want)
			}
		}
		for i, b := range bases {
			e := floorEntry(sn, b)
			next := nextEntry(sn, e)
			switch {
			case i+1 == len(bases) && next != nil:
				t.Fatalf("bases %v: nextEntry(%d) = %d, want none", bases, b, next.base)
			case i+1 < len(bases) && (next == nil || next.base != bases[i+1]):
				t.Fatalf("bases %v: nextEntry(%d) = %v, want base %d", bases, b, next, bases[i+1])
			}
		}
	}
}

// readAllBounded reads every record from offset from up to bound.
func readAllBounded(t testing.TB, l *Log, from int64, bound Bound) []rec {
	t.Helper()
	var out []rec
	for off := from; ; {
		v, err := l.ReadBounded(off, 1<<20, bound)
		if errors.Is(err, ErrNoData) {
			return out
		}
		if err != nil {
			t.Fatalf("ReadBounded(%d, %v): %v", off, bound, err)
		}
		next, recs, err := decodeView(v, off)
		v.Release()
		if err != nil {
			t.Fatalf("decode at %d: %v", off, err)
		}
		if next <= off {
			t.Fatalf("read at %d made no progress", off)
		}
		out = append(out, recs...)
		off = next
	}
}

// TestReadBoundedByLogEnd: a read bounded by the log end sees every batch
// appended while the high watermark, set from outside, holds consumers
// back, across segment rolls and after a truncation; past the end it is
// out of range.
func TestReadBoundedByLogEnd(t *testing.T) {
	o := &Options{FlushPolicy: FlushNone, ExternalHighWatermark: true, SegmentBytes: 400}
	l := openT(t, nil, t.TempDir(), o, State{})
	want := appendN(t, l, "e", 8, 3, 20) // 24 records over several segments
	if st := l.Stats(); st.Segments < 3 {
		t.Fatalf("%d segments; the test wants reads across rolls", st.Segments)
	}
	if got := readAllBounded(t, l, 0, BoundHighWatermark); len(got) != 0 {
		t.Fatalf("read bounded by the high watermark 0 saw %d records", len(got))
	}
	got := readAllBounded(t, l, 0, BoundLogEnd)
	if len(got) != len(want) {
		t.Fatalf("read bounded by the log end saw %d records, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("record %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	if err := l.SetHighWatermark(9); err != nil {
		t.Fatal(err)
	}
	if got := readAllBounded(t, l, 0, BoundHighWatermark); len(got) != 9 {
		t.Fatalf("read bounded by the high watermark 9 saw %d records", len(got))
	}
	if got := readAllBounded(t, l, 9, BoundLogEnd); len(got) != 15 || got[0].offset != 9 {
		t.Fatalf("read from 9 to the log end saw %d records", len(got))
	}
	if _, err := l.ReadBounded(25, 100, BoundLogEnd); !errors.As(err, new(*OffsetOutOfRangeError)) {
		t.Fatalf("read beyond the log end: %v, want *OffsetOutOfRangeError", err)
	}
	if _, err := l.ReadBounded(24, 100, BoundLogEnd); !errors.Is(err, ErrNoData) {
		t.Fatalf("read at the log end: %v, want ErrNoData", err)
	}
	// A truncation moves the end back: the cut batches are gone from
	// reads bounded by it too.
	if err := l.TruncateTo(12); err != nil {
		t.Fatal(err)
	}
	if got := readAllBounded(t, l, 0, BoundLogEnd); len(got) != 12 || got[11].offset != 11 {
		t.Fatalf("after TruncateTo(12) the log-end read saw %d records", len(got))
	}
	if _, err := l.ReadBounded(15, 100, BoundLogEnd); !errors.As(err, new(*OffsetOutOfRangeError)) {
		t.Fatalf("read beyond the truncated end: %v", err)
	}
	if _, err := l.ReadBounded(0, 100, Bound(9)); err == nil {
		t.Fatal("an unknown bound was accepted")
	}
}

// TestReadBoundedAllocations: a read bounded by the log end allocates no
// more than one bounded by the high watermark (the end mark is published
// without a pointer per append).
func TestReadBoundedAllocations(t *testing.T) {
	l := openT(t, nil, t.TempDir(), &Options{FlushPolicy: FlushNone}, State{})
	appendN(t, l, "a", 4, 2, 10)
	allocs := func(b Bound) float64 {
		return testing.AllocsPerRun(100, func() {
			v, err := l.ReadBounded(2, 1<<10, b)
			if err != nil {
				t.Fatal(err)
			}
			v.Release()
		})
	}
	if hw, end := allocs(BoundHighWatermark), allocs(BoundLogEnd); end > hw {
		t.Fatalf("a log-end read allocates %v times, a high-watermark read %v", end, hw)
	}
}

package log

import (
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

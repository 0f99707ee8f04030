package index

import (
	"errors"
	"os"
	"testing"
)

// If someone else shrinks an index file under its mapping (the package
// never does), touching the lost pages raises SIGBUS. Lookups catch it and
// answer from the base; Append reports ErrCorrupt; nothing crashes.
func TestFaultFromExternalTruncate(t *testing.T) {
	before := faultsCaught.Load()
	path := tempPath(t, "f.index")
	x := openOffset(t, path, 100, true, nil)
	for i := range int64(3000) {
		mustNil(t, "Append", x.Append(100+i, i*8))
	}
	mustNil(t, "Seal", x.Seal())
	mustNil(t, "truncate behind the index's back", os.Truncate(path, 0))
	base := OffsetEntry{Offset: 100}
	if got := x.Lookup(2000); got != base {
		t.Errorf("Lookup on a cut file = %+v, want %+v", got, base)
	}
	if got := x.Entry(2999); got != base {
		t.Errorf("Entry on a cut file = %+v", got)
	}
	if got, ok := x.LastEntry(); ok || got != base {
		t.Errorf("LastEntry on a cut file = %+v, %v", got, ok)
	}
	if err := x.TruncateTo(150); !errors.Is(err, ErrCorrupt) {
		t.Errorf("TruncateTo on a cut file = %v, want ErrCorrupt", err)
	}
	mustNil(t, "Close", x.Close())
	if faultsCaught.Load() == before {
		t.Error("no fault was caught: the test did not exercise the guard")
	}

	// Writable: the store into a lost page fails instead of crashing.
	path = tempPath(t, "g.timeindex")
	y := openTime(t, path, 0, true, nil)
	mustNil(t, "Append", y.Append(1, 0))
	mustNil(t, "truncate behind the index's back", os.Truncate(path, 0))
	if err := y.Append(2, 1); !errors.Is(err, ErrCorrupt) {
		t.Errorf("Append into a cut file = %v, want ErrCorrupt", err)
	}
	if y.Entries() != 1 {
		t.Errorf("Entries = %d after the failed Append", y.Entries())
	}
	mustNil(t, "Close", y.Close())
}

package index

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestInMemoryIndexMatchesFile: an in-memory index answers as a file-backed
// one holding the same entries, through growth, TruncateTo and Seal, and
// writes no file.
func TestInMemoryIndexMatchesFile(t *testing.T) {
	dir := t.TempDir()
	const base = 1000
	file, err := OpenOffset(nil, filepath.Join(dir, "f.index"), base, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	mem, err := NewOffsetInMemory("mem", base, []OffsetEntry{{base + 3, 100}, {base + 7, 250}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []OffsetEntry{{base + 3, 100}, {base + 7, 250}} {
		if err := file.Append(e.Offset, e.Position); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 3000; i++ { // several doublings past the first buffer
		off, pos := int64(base+10+i*3), int64(300+i*40)
		if err := errors.Join(file.Append(off, pos), mem.Append(off, pos)); err != nil {
			t.Fatal(err)
		}
	}
	same := func(when string) {
		t.Helper()
		if file.Entries() != mem.Entries() {
			t.Fatalf("%s: %d entries in memory, %d in the file", when, mem.Entries(), file.Entries())
		}
		for q := int64(base - 2); q < base+10+3000*3+5; q += 7 {
			if a, b := file.Lookup(q), mem.Lookup(q); a != b {
				t.Fatalf("%s: Lookup(%d) = %+v in memory, %+v in the file", when, q, b, a)
			}
		}
		fl, fok := file.LastEntry()
		ml, mok := mem.LastEntry()
		if fl != ml || fok != mok {
			t.Fatalf("%s: last %+v %v in memory, %+v %v in the file", when, ml, mok, fl, fok)
		}
	}
	same("appended")
	if err := errors.Join(file.TruncateTo(base+5000), mem.TruncateTo(base+5000)); err != nil {
		t.Fatal(err)
	}
	same("truncated")
	if err := errors.Join(file.Seal(), mem.Seal()); err != nil {
		t.Fatal(err)
	}
	same("sealed")
	if err := errors.Join(file.TruncateTo(base+2000), mem.TruncateTo(base+2000)); err != nil {
		t.Fatal(err)
	}
	same("sealed and truncated")
	if err := mem.Append(base+99999, 1<<20); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("append to a sealed in-memory index: %v", err)
	}
	if err := mem.Rename(filepath.Join(dir, "x")); !errors.Is(err, ErrInMemory) {
		t.Fatalf("rename: %v", err)
	}
	if err := mem.Close(); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(dir)
	if err != nil || len(ents) != 1 {
		t.Fatalf("files in %s: %v %v, want only the file-backed index", dir, ents, err)
	}
	if _, err := NewOffsetInMemory("bad", base, []OffsetEntry{{base + 5, 10}, {base + 5, 20}}, nil); !errors.Is(err, ErrNotMonotonic) {
		t.Fatalf("entries out of order: %v", err)
	}
}

// TestReadEntriesStopsAtTheTail: the hint readers return the ordered prefix
// of a file, stopping at a zeroed tail or at the first entry out of order.
func TestReadEntriesStopsAtTheTail(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "live.index")
	x, err := OpenOffset(nil, path, 50, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	var want []OffsetEntry
	for i := 0; i < 1500; i++ {
		e := OffsetEntry{Offset: int64(51 + 2*i), Position: int64(10 + 30*i)}
		want = append(want, e)
		if err := x.Append(e.Offset, e.Position); err != nil {
			t.Fatal(err)
		}
	}
	// Writable: the file holds the entries then a preallocated zero tail.
	got, err := ReadOffsetEntries(nil, path, 50)
	if err != nil || len(got) != len(want) || got[len(got)-1] != want[len(want)-1] {
		t.Fatalf("live file: %d entries (%v), want %d", len(got), err, len(want))
	}
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	copy(data[700*OffsetEntrySize:], []byte{0, 0, 0, 1, 0, 0, 0, 1}) // out of order
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := ReadOffsetEntries(nil, path, 50); err != nil || len(got) != 700 {
		t.Fatalf("damaged at entry 700: %d entries (%v)", len(got), err)
	}
	tp := filepath.Join(dir, "t.timeindex")
	tx, err := OpenTime(nil, tp, 50, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10; i++ {
		if err := tx.Append(int64(1000+i), int64(51+i)); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := ReadTimeEntries(nil, tp, 50); err != nil || len(got) != 10 || got[9] != (TimeEntry{1009, 60}) {
		t.Fatalf("time entries: %+v, %v", got, err)
	}
	if err := tx.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadOffsetEntries(nil, filepath.Join(dir, "missing"), 0); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
}

package index

import (
	"bytes"
	"encoding/hex"
	"errors"
	"io/fs"
	"math"
	"os"
	"strings"
	"testing"
)

// The file is Kafka's .index format: big-endian int32 relative offset, int32
// position.
func TestOffsetFileFormat(t *testing.T) {
	path := tempPath(t, "00000000000000001000.index")
	x := openOffset(t, path, 1000, true, nil)
	for _, e := range []OffsetEntry{{1000, 0}, {1001, 0x10}, {1300, 0x01020304}, {1000 + math.MaxInt32, math.MaxInt32}} {
		mustNil(t, "Append", x.Append(e.Offset, e.Position))
	}
	mustNil(t, "Close", x.Close())
	got, err := os.ReadFile(path)
	mustNil(t, "ReadFile", err)
	want, _ := hex.DecodeString("00000000" + "00000000" +
		"00000001" + "00000010" +
		"0000012c" + "01020304" +
		"7fffffff" + "7fffffff")
	if !bytes.Equal(got, want) {
		t.Fatalf("file bytes\n got %x\nwant %x", got, want)
	}
}

func TestOffsetLookup(t *testing.T) {
	x := openOffset(t, tempPath(t, "a.index"), 100, true, nil)
	t.Cleanup(closeQuietly(x))
	base := OffsetEntry{Offset: 100}
	if got := x.Lookup(150); got != base {
		t.Fatalf("empty Lookup = %+v, want %+v", got, base)
	}
	if _, ok := x.LastEntry(); ok {
		t.Fatal("LastEntry on empty index reported an entry")
	}
	entries := []OffsetEntry{{105, 4096}, {110, 8192}, {120, 12288}}
	for _, e := range entries {
		mustNil(t, "Append", x.Append(e.Offset, e.Position))
	}
	for _, tc := range []struct {
		target int64
		want   OffsetEntry
	}{
		{math.MinInt64, base}, {0, base}, {100, base}, {104, base},
		{105, entries[0]}, {109, entries[0]}, {110, entries[1]}, {119, entries[1]},
		{120, entries[2]}, {math.MaxInt64, entries[2]},
	} {
		if got := x.Lookup(tc.target); got != tc.want {
			t.Errorf("Lookup(%d) = %+v, want %+v", tc.target, got, tc.want)
		}
	}
	for _, tc := range []struct {
		target int64
		want   OffsetEntry
		ok     bool
	}{
		{0, entries[0], true}, {105, entries[0], true}, {106, entries[1], true},
		{120, entries[2], true}, {121, base, false}, {math.MaxInt64, base, false},
	} {
		got, ok := x.UpperBound(tc.target)
		if got != tc.want || ok != tc.ok {
			t.Errorf("UpperBound(%d) = %+v, %v; want %+v, %v", tc.target, got, ok, tc.want, tc.ok)
		}
	}
	for _, tc := range []struct {
		pos  int64
		want OffsetEntry
		ok   bool
	}{
		{0, entries[0], true}, {4096, entries[0], true}, {4097, entries[1], true}, {12289, base, false},
	} {
		got, ok := x.UpperBoundPosition(tc.pos)
		if got != tc.want || ok != tc.ok {
			t.Errorf("UpperBoundPosition(%d) = %+v, %v; want %+v, %v", tc.pos, got, ok, tc.want, tc.ok)
		}
	}
	if got, ok := x.LastEntry(); !ok || got != entries[2] {
		t.Errorf("LastEntry = %+v, %v", got, ok)
	}
	for i, e := range entries {
		if got := x.Entry(i); got != e {
			t.Errorf("Entry(%d) = %+v, want %+v", i, got, e)
		}
	}
	for _, i := range []int{-1, 3, math.MaxInt} {
		if got := x.Entry(i); got != base {
			t.Errorf("Entry(%d) out of range = %+v, want %+v", i, got, base)
		}
	}
	if x.Entries() != 3 || x.SizeBytes() != 24 || x.BaseOffset() != 100 {
		t.Errorf("Entries %d SizeBytes %d BaseOffset %d", x.Entries(), x.SizeBytes(), x.BaseOffset())
	}
	if x.MaxEntries() != DefaultMaxIndexBytes/OffsetEntrySize {
		t.Errorf("MaxEntries = %d", x.MaxEntries())
	}
}

func TestOffsetAppendErrors(t *testing.T) {
	x := openOffset(t, tempPath(t, "a.index"), 1<<40, true, &Options{MaxIndexBytes: 3*OffsetEntrySize + 5})
	t.Cleanup(closeQuietly(x))
	if x.MaxEntries() != 3 {
		t.Fatalf("MaxEntries = %d, want 3 (MaxIndexBytes rounded down)", x.MaxEntries())
	}
	base := int64(1 << 40)
	for _, tc := range []struct {
		off, pos int64
		want     error
	}{
		{base - 1, 0, ErrOutOfRange},
		{base + math.MaxInt32 + 1, 0, ErrOutOfRange},
		{base, -1, ErrOutOfRange},
		{base, math.MaxInt32 + 1, ErrOutOfRange},
		{base + 10, 100, nil},
		{base + 10, 200, ErrNotMonotonic},
		{base + 9, 200, ErrNotMonotonic},
		{base + 11, 99, ErrNotMonotonic},
		{base + 11, 100, nil}, // an equal position is allowed, as in Kafka
		{base + 12, 300, nil},
		{base + 13, 400, ErrFull},
	} {
		err := x.Append(tc.off, tc.pos)
		if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
			t.Errorf("Append(%d, %d) = %v, want %v", tc.off-base, tc.pos, err, tc.want)
		}
	}
	if !x.Full() || x.Entries() != 3 {
		t.Errorf("Full %v Entries %d after filling", x.Full(), x.Entries())
	}
	if err := x.Append(base+13, 400); err == nil || !strings.Contains(err.Error(), "a.index") {
		t.Errorf("ErrFull does not name the file: %v", err)
	}
}

func TestOffsetSealReactivate(t *testing.T) {
	path := tempPath(t, "a.index")
	x := openOffset(t, path, 0, true, nil)
	t.Cleanup(closeQuietly(x))
	for i := range int64(100) {
		mustNil(t, "Append", x.Append(i*2, i*50))
	}
	mustNil(t, "Seal", x.Seal())
	mustNil(t, "Seal again", x.Seal())
	if x.Writable() || !x.Full() || x.MaxEntries() != 100 {
		t.Errorf("sealed: Writable %v Full %v MaxEntries %d", x.Writable(), x.Full(), x.MaxEntries())
	}
	st, err := os.Stat(path)
	mustNil(t, "Stat", err)
	if st.Size() != 800 {
		t.Errorf("sealed file size %d, want 800", st.Size())
	}
	if err := x.Append(200, 5000); !errors.Is(err, ErrReadOnly) {
		t.Errorf("Append on sealed = %v, want ErrReadOnly", err)
	}
	mustNil(t, "Sync sealed", x.Sync())
	if got := x.Lookup(51); got != (OffsetEntry{50, 1250}) {
		t.Errorf("sealed Lookup(51) = %+v", got)
	}
	mustNil(t, "Reactivate", x.Reactivate())
	mustNil(t, "Reactivate again", x.Reactivate())
	if !x.Writable() || x.Full() || x.MaxEntries() != DefaultMaxIndexBytes/8 {
		t.Errorf("reactivated: Writable %v Full %v MaxEntries %d", x.Writable(), x.Full(), x.MaxEntries())
	}
	mustNil(t, "Append after Reactivate", x.Append(200, 5000))
	if got := x.Lookup(1000); got != (OffsetEntry{200, 5000}) {
		t.Errorf("Lookup after Reactivate = %+v", got)
	}
	if err := x.Append(200, 6000); !errors.Is(err, ErrNotMonotonic) {
		t.Errorf("order is kept across Reactivate: %v", err)
	}
	mustNil(t, "Close", x.Close())
	st, err = os.Stat(path)
	mustNil(t, "Stat", err)
	if st.Size() != 808 {
		t.Errorf("closed file size %d, want 808 (trimmed)", st.Size())
	}
	// Reopened read-only, everything is still there.
	y := openOffset(t, path, 0, false, nil)
	defer func() { mustNil(t, "Close", y.Close()) }()
	if y.Entries() != 101 || y.Writable() {
		t.Fatalf("reopened: Entries %d Writable %v", y.Entries(), y.Writable())
	}
	for i := range 100 {
		if got := y.Entry(i); got != (OffsetEntry{int64(i) * 2, int64(i) * 50}) {
			t.Fatalf("reopened Entry(%d) = %+v", i, got)
		}
	}
}

func TestOffsetTruncate(t *testing.T) {
	for _, sealed := range []bool{false, true} {
		t.Run(map[bool]string{false: "writable", true: "sealed"}[sealed], func(t *testing.T) {
			path := tempPath(t, "a.index")
			x := openOffset(t, path, 10, true, nil)
			t.Cleanup(closeQuietly(x))
			for i := range int64(2000) { // spans the warm section
				mustNil(t, "Append", x.Append(10+i*3, i*100))
			}
			if sealed {
				mustNil(t, "Seal", x.Seal())
			}
			mustNil(t, "TruncateTo beyond the end", x.TruncateTo(1<<40))
			if x.Entries() != 2000 {
				t.Fatalf("TruncateTo beyond the end dropped entries: %d", x.Entries())
			}
			// Offsets 10+3i: TruncateTo(10+3*1500) keeps i < 1500; 10+3*700+1
			// keeps i <= 700.
			mustNil(t, "TruncateTo", x.TruncateTo(10+3*1500))
			if x.Entries() != 1500 {
				t.Fatalf("Entries = %d, want 1500", x.Entries())
			}
			mustNil(t, "TruncateTo", x.TruncateTo(10+3*700+1))
			if x.Entries() != 701 {
				t.Fatalf("Entries = %d, want 701", x.Entries())
			}
			if got, _ := x.LastEntry(); got != (OffsetEntry{10 + 3*700, 70000}) {
				t.Fatalf("LastEntry = %+v", got)
			}
			if got := x.Lookup(1 << 40); got != (OffsetEntry{10 + 3*700, 70000}) {
				t.Fatalf("Lookup past the end = %+v", got)
			}
			if sealed {
				st, err := os.Stat(path)
				mustNil(t, "Stat", err)
				if st.Size() != 701*8 {
					t.Fatalf("sealed file not shrunk: %d", st.Size())
				}
				if err := x.Append(10+3*701, 70100); !errors.Is(err, ErrReadOnly) {
					t.Fatalf("sealed index stays read-only after TruncateTo: %v", err)
				}
				mustNil(t, "Reactivate", x.Reactivate())
			}
			// Offsets that were dropped can be indexed again, at new positions.
			mustNil(t, "Append after TruncateTo", x.Append(10+3*701, 99999))
			if got := x.Lookup(10 + 3*701); got.Position != 99999 {
				t.Fatalf("Lookup of re-appended entry = %+v", got)
			}
			mustNil(t, "Reset", x.Reset())
			if x.Entries() != 0 || x.Lookup(1<<40) != (OffsetEntry{Offset: 10}) {
				t.Fatalf("after Reset: Entries %d Lookup %+v", x.Entries(), x.Lookup(1<<40))
			}
			mustNil(t, "Append after Reset", x.Append(10, 0))
			mustNil(t, "Close", x.Close())
			y := openOffset(t, path, 10, false, nil)
			defer func() { mustNil(t, "Close", y.Close()) }()
			if y.Entries() != 1 || y.Entry(0) != (OffsetEntry{10, 0}) {
				t.Fatalf("reopened after Reset: %d entries, first %+v", y.Entries(), y.Entry(0))
			}
		})
	}
}

// A writable index's dropped entries are zeroed, so a crash that leaves the
// file at its allocated length (no trim) is caught by the open check.
func TestOffsetTruncateZeroesTail(t *testing.T) {
	path := tempPath(t, "a.index")
	x := openOffset(t, path, 0, true, nil)
	defer func() { mustNil(t, "Close", x.Close()) }()
	for i := range int64(10) {
		mustNil(t, "Append", x.Append(i+1, i*10))
	}
	mustNil(t, "TruncateTo", x.TruncateTo(4))
	mustNil(t, "Sync", x.Sync())
	// What a crash now leaves: the allocated file, untrimmed.
	raw, err := os.ReadFile(path)
	mustNil(t, "ReadFile", err)
	if len(raw) != AllocStepEntries*OffsetEntrySize {
		t.Fatalf("file size %d, want one allocation step", len(raw))
	}
	if !bytes.Equal(raw[3*8:10*8], make([]byte, 7*8)) {
		t.Fatalf("dropped entries not zeroed: %x", raw[3*8:10*8])
	}
	_, err = OpenOffset(nil, path, 0, false, nil)
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("open of a crash-left file = %v, want ErrCorrupt", err)
	}
}

func TestOffsetSanityCheck(t *testing.T) {
	entry := func(rel, pos uint32) string {
		b := make([]byte, 8)
		b[0], b[1], b[2], b[3] = byte(rel>>24), byte(rel>>16), byte(rel>>8), byte(rel)
		b[4], b[5], b[6], b[7] = byte(pos>>24), byte(pos>>16), byte(pos>>8), byte(pos)
		return string(b)
	}
	for _, tc := range []struct {
		name    string
		content string
		corrupt bool
	}{
		{"empty", "", false},
		{"one entry at base", entry(0, 0), false},
		{"ordered", entry(0, 0) + entry(5, 10) + entry(9, 20), false},
		{"partial entry", entry(0, 0) + "abc", true},
		{"last below base", entry(0, 0) + entry(0xffffffff, 10), true},
		{"negative position", entry(3, 0x80000000), true},
		{"zeroed tail", entry(1, 0) + entry(5, 10) + entry(0, 0), true},
		{"all zeros", entry(0, 0) + entry(0, 0), true},
		{"position decreasing", entry(1, 100) + entry(5, 50), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := tempPath(t, "a.index")
			mustNil(t, "WriteFile", os.WriteFile(path, []byte(tc.content), 0o644))
			for _, writable := range []bool{false, true} {
				x, err := OpenOffset(nil, path, 7, writable, nil)
				if tc.corrupt {
					if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), path) {
						t.Fatalf("writable=%v: err = %v, want ErrCorrupt naming the file", writable, err)
					}
					continue
				}
				mustNil(t, "OpenOffset", err)
				if x.Entries() != len(tc.content)/8 {
					t.Errorf("Entries = %d", x.Entries())
				}
				mustNil(t, "Close", x.Close())
			}
		})
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := OpenOffset(nil, dir+"/missing.index", 0, false, nil); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("read-only open of a missing file = %v, want fs.ErrNotExist", err)
	}
	if _, err := OpenTime(nil, dir+"/missing.timeindex", 0, false, nil); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("read-only open of a missing file = %v, want fs.ErrNotExist", err)
	}
	if _, err := OpenOffset(nil, dir+"/a.index", -1, true, nil); !errors.Is(err, ErrOutOfRange) {
		t.Errorf("negative base = %v, want ErrOutOfRange", err)
	}
	for _, tc := range []struct {
		opts Options
		want string
	}{
		{Options{MaxIndexBytes: -1}, "Options.MaxIndexBytes"},
		{Options{MaxIndexBytes: 7}, "Options.MaxIndexBytes"},
		{Options{MaxIndexBytes: math.MaxInt32 + 1}, "Options.MaxIndexBytes"},
	} {
		_, err := OpenOffset(nil, dir+"/a.index", 0, true, &tc.opts)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Options %+v: err = %v, want one naming %s", tc.opts, err, tc.want)
		}
	}
	if _, err := OpenTime(nil, dir+"/a.timeindex", 0, true, &Options{MaxIndexBytes: 11}); err == nil {
		t.Error("time index with MaxIndexBytes below one entry opened")
	}
	// An index written under a larger MaxIndexBytes keeps its entries and is
	// full.
	path := dir + "/big.index"
	x := openOffset(t, path, 0, true, nil)
	for i := range int64(10) {
		mustNil(t, "Append", x.Append(i, i))
	}
	mustNil(t, "Close", x.Close())
	y := openOffset(t, path, 0, true, &Options{MaxIndexBytes: 40})
	defer func() { mustNil(t, "Close", y.Close()) }()
	if y.Entries() != 10 || !y.Full() {
		t.Errorf("reopened under a smaller MaxIndexBytes: Entries %d Full %v", y.Entries(), y.Full())
	}
	if err := y.Append(10, 10); !errors.Is(err, ErrFull) {
		t.Errorf("Append = %v, want ErrFull", err)
	}
}

func TestOffsetClosed(t *testing.T) {
	path := tempPath(t, "a.index")
	x := openOffset(t, path, 50, true, nil)
	mustNil(t, "Append", x.Append(60, 100))
	mustNil(t, "Close", x.Close())
	base := OffsetEntry{Offset: 50}
	if got := x.Lookup(70); got != base {
		t.Errorf("Lookup after Close = %+v, want %+v", got, base)
	}
	if got := x.Entry(0); got != base {
		t.Errorf("Entry after Close = %+v", got)
	}
	if _, ok := x.LastEntry(); ok {
		t.Error("LastEntry after Close reported an entry")
	}
	if _, ok := x.UpperBound(0); ok {
		t.Error("UpperBound after Close reported an entry")
	}
	if x.Entries() != 0 || x.Writable() || !x.Full() {
		t.Errorf("after Close: Entries %d Writable %v Full %v", x.Entries(), x.Writable(), x.Full())
	}
	for name, err := range map[string]error{
		"Append": x.Append(70, 200), "Close": x.Close(), "Seal": x.Seal(), "Reactivate": x.Reactivate(),
		"TruncateTo": x.TruncateTo(0), "Reset": x.Reset(), "Sync": x.Sync(), "Rename": x.Rename(path + ".x"),
	} {
		if !errors.Is(err, ErrClosed) {
			t.Errorf("%s after Close = %v, want ErrClosed", name, err)
		}
	}
}

func TestOffsetRename(t *testing.T) {
	path := tempPath(t, "a.index")
	x := openOffset(t, path, 0, true, nil)
	defer func() { mustNil(t, "Close", x.Close()) }()
	mustNil(t, "Append", x.Append(1, 1))
	mustNil(t, "Seal", x.Seal())
	moved := path + ".deleted"
	mustNil(t, "Rename", x.Rename(moved))
	if x.Path() != moved {
		t.Fatalf("Path = %s", x.Path())
	}
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("old path still there: %v", err)
	}
	// Reactivate reopens by the new name.
	mustNil(t, "Reactivate", x.Reactivate())
	mustNil(t, "Append", x.Append(2, 2))
	mustNil(t, "Sync", x.Sync())
	if err := x.Rename(moved + "/nonexistent/dir"); err == nil {
		t.Fatal("Rename into a missing directory succeeded")
	}
	if x.Path() != moved {
		t.Fatalf("failed Rename changed Path to %s", x.Path())
	}
}

// An empty index seals to an empty file with nothing mapped, and comes back.
func TestOffsetSealEmpty(t *testing.T) {
	path := tempPath(t, "e.index")
	x := openOffset(t, path, 40, true, nil)
	defer func() { mustNil(t, "Close", x.Close()) }()
	mustNil(t, "Seal", x.Seal())
	if st, err := os.Stat(path); err != nil || st.Size() != 0 {
		t.Fatalf("sealed empty file: %v %v", st, err)
	}
	if x.Lookup(100) != (OffsetEntry{Offset: 40}) || x.MaxEntries() != 0 || !x.Full() {
		t.Fatalf("sealed empty: Lookup %+v MaxEntries %d Full %v", x.Lookup(100), x.MaxEntries(), x.Full())
	}
	mustNil(t, "Reset sealed empty", x.Reset())
	mustNil(t, "Reactivate", x.Reactivate())
	mustNil(t, "Append", x.Append(41, 0))
	if got := x.Lookup(100); got != (OffsetEntry{41, 0}) {
		t.Fatalf("Lookup = %+v", got)
	}
}

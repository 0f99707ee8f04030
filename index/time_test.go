package index

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"math"
	"os"
	"strings"
	"testing"
)

// The file is Kafka's .timeindex format: big-endian int64 timestamp, int32
// relative offset.
func TestTimeFileFormat(t *testing.T) {
	path := tempPath(t, "00000000000000000500.timeindex")
	x := openTime(t, path, 500, true, nil)
	mustNil(t, "Append", x.Append(0x0102030405060708, 500))
	mustNil(t, "Append", x.Append(0x0102030405060709, 0x7ff+500))
	mustNil(t, "Close", x.Close())
	got, err := os.ReadFile(path)
	mustNil(t, "ReadFile", err)
	want, _ := hex.DecodeString("0102030405060708" + "00000000" + "0102030405060709" + "000007ff")
	if !bytes.Equal(got, want) {
		t.Fatalf("file bytes\n got %x\nwant %x", got, want)
	}
}

func TestTimeAppendAndLookup(t *testing.T) {
	x := openTime(t, tempPath(t, "a.timeindex"), 1000, true, &Options{MaxIndexBytes: 4 * TimeEntrySize})
	t.Cleanup(closeQuietly(x))
	none := TimeEntry{Timestamp: NoTimestamp, Offset: 1000}
	if got := x.Lookup(1 << 50); got != none {
		t.Fatalf("empty Lookup = %+v, want %+v", got, none)
	}
	for _, tc := range []struct {
		ts, off int64
		want    error
		added   bool
	}{
		{-5, 1000, nil, false}, // at or below NoTimestamp: not indexed, as in Kafka
		{NoTimestamp, 1000, nil, false},
		{100, 1001, nil, true},
		{100, 1002, nil, false}, // timestamp did not grow
		{90, 1003, nil, false},
		{200, 1000, ErrNotMonotonic, false},
		{50, 1000, ErrNotMonotonic, false}, // the offset is checked even when skipped
		{200, 1001, nil, true},             // same offset, larger timestamp: allowed
		{300, 999, ErrOutOfRange, false},
		{300, 1000 + math.MaxInt32 + 1, ErrOutOfRange, false},
		{300, 1010, nil, true},
		{400, 1020, nil, true},
		{500, 1030, ErrFull, false},
		{400, 1030, nil, false}, // a skipped entry is not refused by fullness
	} {
		before := x.Entries()
		err := x.Append(tc.ts, tc.off)
		if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
			t.Errorf("Append(%d, %d) = %v, want %v", tc.ts, tc.off, err, tc.want)
		}
		if added := x.Entries() > before; added != tc.added {
			t.Errorf("Append(%d, %d) added an entry: %v, want %v", tc.ts, tc.off, added, tc.added)
		}
	}
	want := []TimeEntry{{100, 1001}, {200, 1001}, {300, 1010}, {400, 1020}}
	for i, e := range want {
		if got := x.Entry(i); got != e {
			t.Errorf("Entry(%d) = %+v, want %+v", i, got, e)
		}
	}
	for _, tc := range []struct {
		ts   int64
		want TimeEntry
	}{
		{math.MinInt64, none}, {99, none}, {100, want[0]}, {199, want[0]}, {200, want[1]},
		{350, want[2]}, {400, want[3]}, {math.MaxInt64, want[3]},
	} {
		if got := x.Lookup(tc.ts); got != tc.want {
			t.Errorf("Lookup(%d) = %+v, want %+v", tc.ts, got, tc.want)
		}
	}
	for _, tc := range []struct {
		ts   int64
		want TimeEntry
		ok   bool
	}{
		{math.MinInt64, want[0], true}, {100, want[0], true}, {101, want[1], true},
		{400, want[3], true}, {401, none, false},
	} {
		got, ok := x.UpperBound(tc.ts)
		if got != tc.want || ok != tc.ok {
			t.Errorf("UpperBound(%d) = %+v, %v; want %+v, %v", tc.ts, got, ok, tc.want, tc.ok)
		}
	}
	if got, ok := x.LastEntry(); !ok || got != want[3] {
		t.Errorf("LastEntry = %+v, %v", got, ok)
	}
	if got := x.Entry(4); got != none {
		t.Errorf("Entry(4) = %+v, want %+v", got, none)
	}
	if x.SizeBytes() != 48 || !x.Full() || x.MaxEntries() != 4 {
		t.Errorf("SizeBytes %d Full %v MaxEntries %d", x.SizeBytes(), x.Full(), x.MaxEntries())
	}
}

// TruncateTo drops by offset; entries sharing an offset go together.
func TestTimeTruncate(t *testing.T) {
	for _, sealed := range []bool{false, true} {
		t.Run(map[bool]string{false: "writable", true: "sealed"}[sealed], func(t *testing.T) {
			path := tempPath(t, "a.timeindex")
			x := openTime(t, path, 0, true, nil)
			t.Cleanup(closeQuietly(x))
			// 1500 entries (beyond the 682-entry warm section), offsets
			// repeating in pairs: entry i has offset i/2.
			for i := range int64(1500) {
				mustNil(t, "Append", x.Append(1000+i, i/2))
			}
			if sealed {
				mustNil(t, "Seal", x.Seal())
			}
			mustNil(t, "TruncateTo", x.TruncateTo(600)) // keeps offsets < 600: entries 0..1199
			if x.Entries() != 1200 {
				t.Fatalf("Entries = %d, want 1200", x.Entries())
			}
			mustNil(t, "TruncateTo", x.TruncateTo(5)) // entries 0..9
			if x.Entries() != 10 {
				t.Fatalf("Entries = %d, want 10", x.Entries())
			}
			if got, _ := x.LastEntry(); got != (TimeEntry{1009, 4}) {
				t.Fatalf("LastEntry = %+v", got)
			}
			if sealed {
				if x.Writable() {
					t.Fatal("TruncateTo made a sealed index writable")
				}
				mustNil(t, "Reactivate", x.Reactivate())
			}
			mustNil(t, "Append", x.Append(1010, 5))
			mustNil(t, "Reset", x.Reset())
			if x.Entries() != 0 {
				t.Fatalf("Entries after Reset = %d", x.Entries())
			}
			// After Reset the empty index accepts any timestamp above NoTimestamp.
			mustNil(t, "Append", x.Append(0, 0))
			if x.Entries() != 1 {
				t.Fatal("Append after Reset did not add")
			}
			mustNil(t, "Close", x.Close())
		})
	}
}

func TestTimeSanityCheck(t *testing.T) {
	entry := func(ts int64, rel uint32) string {
		b := make([]byte, 12)
		binary.BigEndian.PutUint64(b, uint64(ts))
		binary.BigEndian.PutUint32(b[8:], rel)
		return string(b)
	}
	for _, tc := range []struct {
		name    string
		content string
		corrupt bool
	}{
		{"empty", "", false},
		{"one", entry(5, 0), false},
		{"ordered", entry(5, 0) + entry(6, 0) + entry(9, 4), false},
		{"partial entry", entry(5, 0) + "12345678", true},
		{"last below base", entry(5, 0) + entry(6, 0x80000000), true},
		{"timestamp going back", entry(5, 0) + entry(4, 1), true},
		{"equal ends", entry(5, 0) + entry(5, 1), true},
		{"zeroed tail", entry(5, 1) + entry(7, 2) + entry(0, 0), true},
		{"offset going back", entry(5, 3) + entry(7, 2), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := tempPath(t, "a.timeindex")
			mustNil(t, "WriteFile", os.WriteFile(path, []byte(tc.content), 0o644))
			for _, writable := range []bool{false, true} {
				x, err := OpenTime(nil, path, 0, writable, nil)
				if tc.corrupt {
					if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), path) {
						t.Fatalf("writable=%v: err = %v, want ErrCorrupt naming the file", writable, err)
					}
					continue
				}
				mustNil(t, "OpenTime", err)
				if x.Entries() != len(tc.content)/12 {
					t.Errorf("Entries = %d", x.Entries())
				}
				mustNil(t, "Close", x.Close())
			}
		})
	}
}

func TestTimeSealAndReopen(t *testing.T) {
	path := tempPath(t, "a.timeindex")
	x := openTime(t, path, 0, true, nil)
	for i := range int64(50) {
		mustNil(t, "Append", x.Append(i*10, i))
	}
	mustNil(t, "Seal", x.Seal())
	st, err := os.Stat(path)
	mustNil(t, "Stat", err)
	if st.Size() != 50*12 {
		t.Fatalf("sealed size %d", st.Size())
	}
	if err := x.Append(1000, 60); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("Append on sealed = %v", err)
	}
	mustNil(t, "Close", x.Close())
	if got := x.Lookup(100); got != (TimeEntry{NoTimestamp, 0}) {
		t.Fatalf("Lookup after Close = %+v", got)
	}
	y := openTime(t, path, 0, true, nil)
	defer func() { mustNil(t, "Close", y.Close()) }()
	if got := y.Lookup(255); got != (TimeEntry{250, 25}) {
		t.Fatalf("reopened Lookup(255) = %+v", got)
	}
	mustNil(t, "Append", y.Append(10000, 100))
	if got, _ := y.LastEntry(); got != (TimeEntry{10000, 100}) {
		t.Fatalf("LastEntry = %+v", got)
	}
}

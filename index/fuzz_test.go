package index

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func offsetFile(entries ...[2]uint32) []byte {
	var b []byte
	for _, e := range entries {
		b = binary.BigEndian.AppendUint32(b, e[0])
		b = binary.BigEndian.AppendUint32(b, e[1])
	}
	return b
}

func timeFile(entries ...[2]int64) []byte {
	var b []byte
	for _, e := range entries {
		b = binary.BigEndian.AppendUint64(b, uint64(e[0]))
		b = binary.BigEndian.AppendUint32(b, uint32(e[1]))
	}
	return b
}

// FuzzOpenOffset feeds arbitrary bytes as an .index file. Opening never
// panics; a file that passes the sanity check reads back entry for entry;
// its well-ordered prefix, re-appended, gives the same bytes; and when the
// whole file is well ordered, lookups agree with a linear scan.
func FuzzOpenOffset(f *testing.F) {
	f.Add([]byte{}, int64(0), int64(5))
	f.Add(offsetFile([2]uint32{0, 0}, [2]uint32{3, 100}, [2]uint32{9, 4000}), int64(1000), int64(1004))
	f.Add(offsetFile([2]uint32{1, 0}, [2]uint32{5, 10}, [2]uint32{0, 0}), int64(0), int64(3))
	f.Add(offsetFile([2]uint32{7, 9}, [2]uint32{2, 1}, [2]uint32{8, 10}), int64(7), int64(9))
	f.Add(offsetFile([2]uint32{0xffffffff, 0}), int64(1), int64(0))
	f.Add([]byte{0, 0, 0, 1, 0, 0, 0}, int64(0), int64(1))
	f.Fuzz(func(t *testing.T, data []byte, base, target int64) {
		if len(data) > 1<<16 || base < 0 {
			return
		}
		path := filepath.Join(t.TempDir(), "f.index")
		mustNil(t, "WriteFile", os.WriteFile(path, data, 0o644))
		for _, writable := range []bool{false, true} {
			x, err := OpenOffset(nil, path, base, writable, nil)
			if err != nil {
				if !errors.Is(err, ErrCorrupt) {
					t.Fatalf("open error does not wrap ErrCorrupt: %v", err)
				}
				continue
			}
			n := len(data) / OffsetEntrySize
			if x.Entries() != n {
				t.Fatalf("Entries = %d, want %d", x.Entries(), n)
			}
			var model []OffsetEntry
			ordered := true
			for i := range n {
				rel, pos := decodeOffsetEntry(data[i*8:])
				want := OffsetEntry{base + int64(rel), int64(pos)}
				if got := x.Entry(i); got != want {
					t.Fatalf("Entry(%d) = %+v, want %+v", i, got, want)
				}
				if rel < 0 || pos < 0 || len(model) > 0 && (want.Offset <= model[len(model)-1].Offset || want.Position < model[len(model)-1].Position) {
					ordered = false
				}
				if ordered {
					model = append(model, want)
				}
			}
			got := x.Lookup(target)
			if ordered {
				want := OffsetEntry{Offset: base}
				for _, e := range model {
					if e.Offset <= target {
						want = e
					}
				}
				if got != want {
					t.Fatalf("Lookup(%d) = %+v, want %+v", target, got, want)
				}
			} else if got != (OffsetEntry{Offset: base}) && got.Offset > target {
				t.Fatalf("Lookup(%d) on a disordered file = %+v, above the target", target, got)
			}
			mustNil(t, "Close", x.Close())
			// The ordered prefix re-encodes to the same bytes.
			rpath := filepath.Join(t.TempDir(), "r.index")
			y, err := OpenOffset(nil, rpath, base, true, nil)
			mustNil(t, "OpenOffset", err)
			for _, e := range model {
				mustNil(t, "Append", y.Append(e.Offset, e.Position))
			}
			mustNil(t, "Close", y.Close())
			again, err := os.ReadFile(rpath)
			mustNil(t, "ReadFile", err)
			if !bytes.Equal(again, data[:len(model)*8]) {
				t.Fatalf("re-encoded prefix differs:\n got %x\nwant %x", again, data[:len(model)*8])
			}
		}
	})
}

// FuzzOpenTime is FuzzOpenOffset for .timeindex files.
func FuzzOpenTime(f *testing.F) {
	f.Add([]byte{}, int64(0), int64(5))
	f.Add(timeFile([2]int64{100, 0}, [2]int64{200, 0}, [2]int64{300, 7}), int64(50), int64(250))
	f.Add(timeFile([2]int64{100, 1}, [2]int64{200, 2}, [2]int64{0, 0}), int64(0), int64(100))
	f.Add(timeFile([2]int64{-5, 1}, [2]int64{-1, 2}), int64(0), int64(-3))
	f.Add(timeFile([2]int64{5, 0x7fffffff}, [2]int64{9, 3}), int64(0), int64(6))
	f.Add(bytes.Repeat([]byte{0xff}, 25), int64(3), int64(-1))
	f.Fuzz(func(t *testing.T, data []byte, base, target int64) {
		if len(data) > 1<<16 || base < 0 {
			return
		}
		path := filepath.Join(t.TempDir(), "f.timeindex")
		mustNil(t, "WriteFile", os.WriteFile(path, data, 0o644))
		for _, writable := range []bool{false, true} {
			x, err := OpenTime(nil, path, base, writable, nil)
			if err != nil {
				if !errors.Is(err, ErrCorrupt) {
					t.Fatalf("open error does not wrap ErrCorrupt: %v", err)
				}
				continue
			}
			n := len(data) / TimeEntrySize
			if x.Entries() != n {
				t.Fatalf("Entries = %d, want %d", x.Entries(), n)
			}
			var model []TimeEntry
			ordered := true
			for i := range n {
				ts, rel := decodeTimeEntry(data[i*12:])
				want := TimeEntry{ts, base + int64(rel)}
				if got := x.Entry(i); got != want {
					t.Fatalf("Entry(%d) = %+v, want %+v", i, got, want)
				}
				last := TimeEntry{NoTimestamp, base}
				if len(model) > 0 {
					last = model[len(model)-1]
				}
				// Append's rules: timestamps above the last (NoTimestamp
				// when empty), offsets not below it.
				if rel < 0 || ts <= last.Timestamp || want.Offset < last.Offset && len(model) > 0 {
					ordered = false
				}
				if ordered {
					model = append(model, want)
				}
			}
			got := x.Lookup(target)
			if ordered {
				want := TimeEntry{NoTimestamp, base}
				for _, e := range model {
					if e.Timestamp <= target {
						want = e
					}
				}
				if got != want {
					t.Fatalf("Lookup(%d) = %+v, want %+v", target, got, want)
				}
			} else if got != (TimeEntry{NoTimestamp, base}) && got.Timestamp > target {
				t.Fatalf("Lookup(%d) on a disordered file = %+v, above the target", target, got)
			}
			mustNil(t, "Close", x.Close())
			rpath := filepath.Join(t.TempDir(), "r.timeindex")
			y, err := OpenTime(nil, rpath, base, true, nil)
			mustNil(t, "OpenTime", err)
			for _, e := range model {
				mustNil(t, "Append", y.Append(e.Timestamp, e.Offset))
			}
			mustNil(t, "Close", y.Close())
			again, err := os.ReadFile(rpath)
			mustNil(t, "ReadFile", err)
			if !bytes.Equal(again, data[:len(model)*12]) {
				t.Fatalf("re-encoded prefix differs:\n got %x\nwant %x", again, data[:len(model)*12])
			}
		}
	})
}

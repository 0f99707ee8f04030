package segment

import (
	"bytes"
	"math/rand"
	"os"
	"testing"

	"github.com/foliolog/folio/index"
)

// TestSequentialReadRepairsDamagedIndex: an entry damaged in the middle of
// a sealed segment's index passes the open's O(1) check, and no lookup
// may ever meet it (an entry moved out of order is never the answer of a
// binary search; sequential reads from the segment's start use no
// lookup). Reads that walk the segment from its start check every entry
// they pass over against the batches they walk, and a mismatch rebuilds
// the indexes from the .log as a stale lookup does: the reads return
// every batch as written, and Verify finds the indexes whole afterwards.
// (TestDamagedDataDirectory, clean/timeindex/flip, seed 3: a flipped
// time-index offset that verify reported after every open.)
func TestSequentialReadRepairsDamagedIndex(t *testing.T) {
	for _, tc := range []struct {
		name string
		time bool // the .timeindex, else the .index
		// entry and byte within it to flip, and the mask
		entry, at int
		mask      byte
	}{
		{"offset out of order", false, 3, 0, 0x40},             // relative offset's high byte
		{"position in order", false, 0, 7, 0x01},               // position's low byte
		{"position past the end", false, 4, 5, 0x10},           // position's second byte
		{"time offset out of order", true, 2, 8, 0x20},         // relative offset's high byte
		{"timestamp out of order", true, 2, 2, 0x08},           // timestamp's third byte
		{"timestamp in order", true, 3, 7, 0x01},               // timestamp's low byte
		{"last time entry timestamp", true, -1, 7, 0x01},       // restore checks it at load already
		{"time offset in order", true, 1, 11, 0x01},            // relative offset's low byte
		{"offset in order, last entry", false, -1, 3, 0x01},    // restore checks it at load already
		{"position, second to last entry", false, -2, 6, 0x02}, // position's third byte
		{"timestamp high byte, first entry", true, 0, 0, 0x7f}, // far in the future
		{"offset low byte, first entry", false, 0, 3, 0x01},    // in order or not
		{"position low byte, middle entry", false, 5, 7, 0x03}, // in order
		{"time offset, second to last entry", true, -2, 11, 0x03},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := segDir(t)
			opts := &Options{IndexIntervalBytes: 1}
			s, err := Create(testFS, dir, 0, opts)
			if err != nil {
				t.Fatal(err)
			}
			m := &model{}
			fill(t, s, m, newGen(t, rand.New(rand.NewSource(7)), 0), 40)
			if err := s.Close(); err != nil { // trims the indexes, as Seal
				t.Fatal(err)
			}
			path, size := IndexPath(dir, 0), index.OffsetEntrySize
			if tc.time {
				path, size = TimeIndexPath(dir, 0), index.TimeEntrySize
			}
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			n := len(data) / size
			entry := tc.entry
			if entry < 0 {
				entry += n
			}
			if n < 8 || entry < 0 || entry >= n {
				t.Fatalf("%s holds %d entries; the test flips entry %d", path, n, entry)
			}
			data[entry*size+tc.at] ^= tc.mask
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
			if rep, err := Verify(testFS, dir, 0); err != nil || rep.OK() {
				t.Fatalf("Verify after the flip: %+v, %v; the test needs damage it sees", rep.Problems, err)
			}

			r, err := Open(testFS, dir, 0, opts)
			if err != nil {
				t.Fatal(err)
			}
			// A consumer's reads: from the base, a few batches at a time.
			var got []byte
			for off := int64(0); off < m.next(); {
				v, err := r.Read(off, 500, -1)
				if err != nil {
					t.Fatalf("read at %d: %v", off, err)
				}
				fr, _ := v.Framing()
				got = append(got, viewBytes(t, v)...)
				off = fr.LastOffset + 1
			}
			var want []byte
			for _, b := range m.batches {
				want = append(want, b.bytes...)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("the reads returned %d bytes, not the %d written", len(got), len(want))
			}
			if err := r.Close(); err != nil {
				t.Fatal(err)
			}
			rep, err := Verify(testFS, dir, 0)
			if err != nil {
				t.Fatal(err)
			}
			if !rep.OK() {
				t.Fatalf("Verify after reading the segment from its start: %v", rep.Problems)
			}
		})
	}
}

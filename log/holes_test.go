package log

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/foliolog/folio/errs"
	"github.com/foliolog/folio/record"
	"github.com/foliolog/folio/segment"
)

// damageNaming fails the test unless r reports damage, matching
// ErrCorrupt, in the file named name.
func damageNaming(t *testing.T, r RecoveryReport, name string) {
	t.Helper()
	for _, d := range r.Damage {
		var c *errs.Corruption
		if errors.Is(d, ErrCorrupt) && errors.As(d, &c) && filepath.Base(c.Path) == name {
			t.Logf("damage: %v", d)
			return
		}
	}
	t.Fatalf("no damage reported naming %s: %+v", name, r)
}

// TestStraySegmentPastTheEnd: a segment file past the log end is not
// adopted. A zero-filled or empty one holds nothing and is removed (clean
// and unclean open); one holding valid records beyond the end a clean
// shutdown checkpointed is set aside. Either way the log end stays, the
// next append goes right after the real end, and the next open is quiet.
func TestStraySegmentPastTheEnd(t *testing.T) {
	const strayBase = 99999
	for _, tc := range []struct {
		name  string
		data  func(t *testing.T) []byte
		clean bool
		left  string // the file the stray leaves, "" for none
	}{
		{name: "zero-filled clean", data: func(*testing.T) []byte { return make([]byte, 4096) }, clean: true},
		{name: "zero-filled unclean", data: func(*testing.T) []byte { return make([]byte, 4096) }},
		{name: "empty clean", data: func(*testing.T) []byte { return nil }, clean: true},
		{name: "empty unclean", data: func(*testing.T) []byte { return nil }},
		{name: "valid records clean", clean: true, left: segment.FileName(strayBase, ".log.stray"), data: func(t *testing.T) []byte {
			b := makeBatch(t, "stray", 0, 3, 20, 1)
			binary.BigEndian.PutUint64(b[0:], strayBase) // outside the CRC
			return b
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			want, _, st := buildLog(t, dir, 40)
			name := segment.FileName(strayBase, ".log")
			if err := os.WriteFile(filepath.Join(dir, name), tc.data(t), 0o644); err != nil {
				t.Fatal(err)
			}
			st.Clean = tc.clean
			if !tc.clean {
				st.RecoveryPoint = 0
			}
			o := &Options{SegmentBytes: 1024, FlushPolicy: FlushNone}
			l := openT(t, nil, dir, o, st)
			damageNaming(t, l.Recovery(), name)
			if l.LogEndOffset() != int64(len(want)) {
				t.Fatalf("log end %d, want %d", l.LogEndOffset(), len(want))
			}
			sameRecs(t, readAll(t, l, 0), want)
			if first, _, err := l.Append(makeBatch(t, "n", 0, 1, 10, 1)); err != nil || first != int64(len(want)) {
				t.Fatalf("append: %d %v, want offset %d", first, err, len(want))
			}
			if _, err := os.Stat(filepath.Join(dir, name)); !os.IsNotExist(err) {
				t.Fatalf("the stray is still a segment: %v", err)
			}
			if tc.left != "" {
				if _, err := os.Stat(filepath.Join(dir, tc.left)); err != nil {
					t.Fatalf("the stray's records were not set aside: %v", err)
				}
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			l = openT(t, nil, dir, o, l.Checkpoint())
			if r := l.Recovery(); len(r.Damage) != 0 {
				t.Fatalf("the next open reports damage again: %v", r.Damage)
			}
			if l.LogEndOffset() != int64(len(want))+1 {
				t.Fatalf("log end %d after reopening", l.LogEndOffset())
			}
		})
	}
}

// TestMiddleSegmentRenamedDeleted: a segment in the middle of the log
// renamed .deleted (no deletion of the log leaves one there) is brought
// back, not removed with the leftovers: every record stays.
func TestMiddleSegmentRenamedDeleted(t *testing.T) {
	for _, clean := range []bool{true, false} {
		t.Run(fmt.Sprintf("clean=%v", clean), func(t *testing.T) {
			dir := t.TempDir()
			want, bases, st := buildLog(t, dir, 40)
			name := segment.FileName(bases[2], ".log")
			if err := os.Rename(filepath.Join(dir, name), filepath.Join(dir, name+".deleted")); err != nil {
				t.Fatal(err)
			}
			st.Clean = clean
			l := openT(t, nil, dir, &Options{SegmentBytes: 1024, FlushPolicy: FlushNone}, st)
			damageNaming(t, l.Recovery(), name+".deleted")
			sameRecs(t, readAll(t, l, 0), want)
		})
	}
}

// TestMiddleSegmentMissing: a segment deleted or emptied in the middle of a
// log that an unclean open scans, or whose .log is deleted (its index
// files left) before a clean open, costs exactly its offsets: the hole is
// reported naming the segment after it, the segments after it stay, the
// next append goes right after the real end, and the next open, scanning
// everything, finds the chain whole.
func TestMiddleSegmentMissing(t *testing.T) {
	for _, how := range []string{"deleted", "emptied", "deleted before a clean open",
		"emptied before a clean open", "truncated before a clean open", "deleted with its indexes before a clean open"} {
		t.Run(how, func(t *testing.T) {
			dir := t.TempDir()
			want, bases, st := buildLog(t, dir, 40)
			path := segment.LogPath(dir, bases[2])
			lost := bases[2] // the first offset the damage costs
			var err error
			switch how {
			case "emptied", "emptied before a clean open":
				err = os.Truncate(path, 0)
			case "truncated before a clean open":
				// At a batch boundary, after the first batch: every
				// file still loads, so only the chain shows the loss.
				var data []byte
				if data, err = os.ReadFile(path); err == nil {
					b, _, perr := record.Parse(data)
					if perr != nil {
						t.Fatal(perr)
					}
					lost = b.LastOffset() + 1
					err = os.Truncate(path, int64(len(b)))
				}
			case "deleted with its indexes before a clean open":
				for _, p := range []string{path, segment.IndexPath(dir, bases[2]), segment.TimeIndexPath(dir, bases[2])} {
					if err = os.Remove(p); err != nil {
						break
					}
				}
			default:
				err = os.Remove(path)
			}
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasSuffix(how, "before a clean open") {
				st.Clean, st.RecoveryPoint = false, 0
			}
			o := &Options{SegmentBytes: 1024, FlushPolicy: FlushNone}
			l := openT(t, nil, dir, o, st)
			damageNaming(t, l.Recovery(), filepath.Base(segment.LogPath(dir, bases[3])))
			if d := l.Recovery().Damage[0].Error(); !strings.Contains(d, fmt.Sprintf("offsets %d to %d", lost, bases[3]-1)) {
				t.Fatalf("the hole is reported as %q", d)
			}
			var expect []rec
			for _, w := range want {
				if w.offset < lost || w.offset >= bases[3] {
					expect = append(expect, w)
				}
			}
			sameRecs(t, readAll(t, l, 0), expect)
			if first, _, err := l.Append(makeBatch(t, "n", 0, 1, 10, 1)); err != nil || first != int64(len(want)) {
				t.Fatalf("append: %d %v, want offset %d", first, err, len(want))
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			st = l.Checkpoint()
			l = openT(t, nil, dir, o, st) // clean: the chain check finds it whole
			if r := l.Recovery(); len(r.Damage) != 0 || r.SegmentsRemoved != 0 {
				t.Fatalf("the next clean open: %+v", r)
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			st = l.Checkpoint()
			st.Clean, st.RecoveryPoint = false, 0
			l = openT(t, nil, dir, o, st)
			if r := l.Recovery(); len(r.Damage) != 0 || r.SegmentsRemoved != 0 {
				t.Fatalf("the next open: %+v", r)
			}
			sameRecs(t, readAll(t, l, 0)[:len(expect)], expect)
		})
	}
}

// TestLastSegmentMissingKeepsEnd: after a clean shutdown, the last segment
// deleted, emptied or renamed away must not move the log end back: the
// offsets it held were acknowledged (consumers and groups may hold them),
// so they are reported as lost, the log end stays at the end the shutdown
// checkpointed, and the next append goes there. A last segment renamed
// .deleted is brought back whole. The next opens, clean or scanning
// everything, find the chain whole.
func TestLastSegmentMissingKeepsEnd(t *testing.T) {
	for _, how := range []string{"deleted", "deleted with its indexes", "emptied", "renamed deleted", "last two deleted"} {
		t.Run(how, func(t *testing.T) {
			dir := t.TempDir()
			want, bases, st := buildLog(t, dir, 40)
			end := int64(len(want))
			if st.RecoveryPoint != end || !st.Clean {
				t.Fatalf("checkpoint %+v, want a clean one at %d", st, end)
			}
			victim := bases[len(bases)-1]
			path := segment.LogPath(dir, victim)
			var err error
			switch how {
			case "deleted":
				err = os.Remove(path)
			case "deleted with its indexes", "last two deleted":
				if how == "last two deleted" {
					victim = bases[len(bases)-2]
				}
				for _, b := range bases {
					if b < victim {
						continue
					}
					for _, p := range []string{segment.LogPath(dir, b), segment.IndexPath(dir, b), segment.TimeIndexPath(dir, b)} {
						if err == nil {
							err = os.Remove(p)
						}
					}
				}
			case "emptied":
				err = os.Truncate(path, 0)
			case "renamed deleted":
				err = os.Rename(path, path+".deleted")
			}
			if err != nil {
				t.Fatal(err)
			}
			o := &Options{SegmentBytes: 1024, FlushPolicy: FlushNone}
			l := openT(t, nil, dir, o, st)
			expect := want
			if how == "renamed deleted" {
				damageNaming(t, l.Recovery(), filepath.Base(path)+".deleted")
			} else {
				// The damage names the last segment left (the emptied
				// one, or the one before the deleted ones).
				named := victim
				if how != "emptied" {
					named = bases[slices.Index(bases, victim)-1]
				}
				damageNaming(t, l.Recovery(), filepath.Base(segment.LogPath(dir, named)))
				if d := fmt.Sprint(l.Recovery().Damage); !strings.Contains(d, fmt.Sprintf("offsets %d to %d", victim, end-1)) {
					t.Fatalf("the loss is reported as %q", d)
				}
				expect = nil
				for _, w := range want {
					if w.offset < victim {
						expect = append(expect, w)
					}
				}
			}
			if l.LogEndOffset() != end {
				t.Fatalf("log end %d, want the checkpointed %d", l.LogEndOffset(), end)
			}
			sameRecs(t, readAll(t, l, 0), expect)
			if first, _, err := l.Append(makeBatch(t, "n", 0, 1, 10, 1)); err != nil || first != end {
				t.Fatalf("append: %d %v, want offset %d", first, err, end)
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			st = l.Checkpoint()
			l = openT(t, nil, dir, o, st)
			if r := l.Recovery(); len(r.Damage) != 0 || r.SegmentsRemoved != 0 {
				t.Fatalf("the next clean open: %+v", r)
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			st = l.Checkpoint()
			st.Clean, st.RecoveryPoint = false, 0
			l = openT(t, nil, dir, o, st)
			if r := l.Recovery(); len(r.Damage) != 0 || r.SegmentsRemoved != 0 {
				t.Fatalf("the next open: %+v", r)
			}
			if got := readAll(t, l, 0); len(got) != len(expect)+1 || got[len(got)-1].offset != end {
				t.Fatalf("after reopening: %d records, want %d and one at %d", len(got), len(expect)+1, end)
			}
		})
	}
}

// TestUncleanOpenKeepsBatchesAfterDamage: damage in the middle of the last
// (active) segment after a crash is no torn write when whole, valid batches
// follow it: the unclean open keeps them, reports the damaged batch's range
// (filled, so the chain is whole) and the end stays; a damaged batch found
// by its own header (a flipped value byte) or not (a flipped length, the
// batches after it found through the offset index) alike. A torn write at
// the tail, or damage in the last batch, is cut as before.
func TestUncleanOpenKeepsBatchesAfterDamage(t *testing.T) {
	for _, how := range []string{"flipped value", "flipped length", "torn tail", "last batch flipped", "first batch flipped"} {
		t.Run(how, func(t *testing.T) {
			dir := t.TempDir()
			o := &Options{SegmentBytes: 1 << 20, IndexIntervalBytes: 256, FlushPolicy: FlushNone}
			l := openT(t, nil, dir, o, State{})
			want := appendN(t, l, "b", 30, 2, 120)
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			path := segment.LogPath(dir, 0)
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var pos []int
			for p := 0; p < len(data); {
				n, err := record.CheckHeader(data[p:])
				if err != nil {
					t.Fatal(err)
				}
				pos = append(pos, p)
				p += n
			}
			if len(pos) != 30 {
				t.Fatalf("%d batches in the segment, want 30", len(pos))
			}
			k := 10 // the damaged batch: offsets 2k and 2k+1
			lostFrom, lostTo := int64(2*k), int64(2*k+2)
			end := int64(len(want))
			switch how {
			case "flipped value":
				data[pos[k]+record.HeaderSize+20] ^= 0x55
			case "flipped length":
				data[pos[k]+9] ^= 0x40 // the length's second byte: the batch no longer frames
			case "torn tail":
				k = 29
				data = data[:pos[k]+30]
				lostFrom, lostTo, end = int64(2*k), int64(2*k+2), int64(2*k)
			case "last batch flipped":
				k = 29
				data[pos[k]+record.HeaderSize+20] ^= 0x55
				lostFrom, lostTo, end = int64(2*k), int64(2*k+2), int64(2*k)
			case "first batch flipped":
				// The cut leaves the segment empty: the filler of the
				// damaged range takes its place (Open failed: the
				// filler's segment "already exists").
				k = 0
				data[pos[k]+record.HeaderSize+20] ^= 0x55
				lostFrom, lostTo = 0, 2
			}
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
			l = openT(t, nil, dir, o, State{}) // unclean: scans it
			if l.LogEndOffset() != end {
				t.Fatalf("log end %d, want %d; %+v", l.LogEndOffset(), end, l.Recovery())
			}
			if end == int64(len(want)) {
				damageNaming(t, l.Recovery(), filepath.Base(path))
				if d := fmt.Sprint(l.Recovery().Damage); !strings.Contains(d, fmt.Sprintf("offsets %d to %d lost", lostFrom, lostTo-1)) {
					t.Fatalf("the damage is reported as %s", d)
				}
			}
			var expect []rec
			for _, w := range want {
				if w.offset < lostFrom || (w.offset >= lostTo && w.offset < end) {
					expect = append(expect, w)
				}
			}
			sameRecs(t, readAll(t, l, 0), expect)
			if first, _, err := l.Append(makeBatch(t, "n", 0, 1, 10, 1)); err != nil || first != end {
				t.Fatalf("append: %d %v, want offset %d", first, err, end)
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			l = openT(t, nil, dir, o, State{})
			if r := l.Recovery(); len(r.Damage) != 0 || r.BytesCut != 0 || r.SegmentsRemoved != 0 {
				t.Fatalf("the next open: %+v", r)
			}
			sameRecs(t, readAll(t, l, 0)[:len(expect)], expect)
		})
	}
}

// TestCleanOpenFlippedBaseOffset: the CRC of a batch does not cover its
// base offset, so a flipped byte there is found only by what the offset
// claims. A high byte claims an offset no segment can index (Open failed:
// the rebuilt time index refused it, "value out of range"); a low one an
// end past the one the clean shutdown checkpointed (the log end jumped
// forward, the records served at offsets they never had). Either way the
// batch is damage: cut, reported naming the file, its range filled, and
// the log end stays where the shutdown left it.
func TestCleanOpenFlippedBaseOffset(t *testing.T) {
	for _, c := range []struct {
		at      int
		rebuild bool // the indexes gone too: Open rebuilds them from the batches
	}{{0, false}, {3, false}, {5, false}, {7, false}, {0, true}, {3, true}, {7, true}} {
		at := c.at
		t.Run(fmt.Sprintf("byte %d rebuild %v", at, c.rebuild), func(t *testing.T) {
			dir := t.TempDir()
			want, bases, st := buildLog(t, dir, 40)
			end := int64(len(want))
			last := bases[len(bases)-1]
			path := segment.LogPath(dir, last)
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var pos int // the last batch's
			for p := 0; p < len(data); {
				n, err := record.CheckHeader(data[p:])
				if err != nil {
					t.Fatal(err)
				}
				pos, p = p, p+n
			}
			lost := record.Batch(data[pos:]).BaseOffset()
			data[pos+at] ^= 0x13
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
			if c.rebuild {
				for _, p := range []string{segment.IndexPath(dir, last), segment.TimeIndexPath(dir, last)} {
					if err := os.Remove(p); err != nil {
						t.Fatal(err)
					}
				}
			}
			l := openT(t, nil, dir, &Options{SegmentBytes: 1024, FlushPolicy: FlushNone, IndexIntervalBytes: 256}, st)
			if l.LogEndOffset() != end {
				t.Fatalf("log end %d, want %d; %+v", l.LogEndOffset(), end, l.Recovery())
			}
			damageNaming(t, l.Recovery(), filepath.Base(path))
			var expect []rec
			for _, w := range want {
				if w.offset < lost {
					expect = append(expect, w)
				}
			}
			sameRecs(t, readAll(t, l, 0), expect)
			if first, _, err := l.Append(makeBatch(t, "n", 0, 1, 10, 1)); err != nil || first != end {
				t.Fatalf("append: %d %v, want offset %d", first, err, end)
			}
		})
	}
}

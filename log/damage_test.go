package log

import (
	"errors"
	"os"
	"testing"

	"github.com/foliolog/folio/errs"
	"github.com/foliolog/folio/record"
	"github.com/foliolog/folio/segment"
)

// readPassing reads every visible record from offset from to the high
// watermark as a consumer would, passing over damaged ranges, and returns
// the records and the ranges.
func readPassing(t *testing.T, l *Log, from int64) ([]rec, []*DamagedRangeError) {
	t.Helper()
	var out []rec
	var damaged []*DamagedRangeError
	for off := from; off < l.HighWatermark(); {
		v, err := l.Read(off, 1<<20)
		var d *DamagedRangeError
		if errors.As(err, &d) {
			if d.Resume <= off || len(damaged) > 10 {
				t.Fatalf("read at %d: %v: no progress", off, err)
			}
			damaged = append(damaged, d)
			off = d.Resume
			continue
		}
		if err != nil {
			t.Fatalf("read at %d: %v", off, err)
		}
		next, recs, err := decodeView(v, off)
		v.Release()
		if err != nil {
			t.Fatalf("decode at %d: %v", off, err)
		}
		out = append(out, recs...)
		off = next
	}
	return out, damaged
}

// batchesOf lists the positions and offsets of a .log's batches.
func batchesOf(t *testing.T, path string) (pos []int64, base, last []int64) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for p := 0; p < len(data); {
		b, _, err := record.Parse(data[p:])
		if err != nil {
			t.Fatalf("%s at %d: %v", path, p, err)
		}
		pos, base, last = append(pos, int64(p)), append(base, b.BaseOffset()), append(last, b.LastOffset())
		p += len(b)
	}
	return pos, base, last
}

// TestReadPassesOverDamage: a sealed segment emptied, cut short inside a
// batch (it then cannot load: the first read repairs it as recovery would),
// or with a batch whose header is broken, opens (clean: it is not scanned;
// an emptied one read-only, since a writing open's chain check fills the
// hole)
// and costs exactly the damaged range: reads deliver every record before it,
// a read inside it returns a *DamagedRangeError naming the file, the byte
// position and the offsets, matching ErrCorrupt, and reading resumes at the
// next valid batch (or the next segment), not a later one the sparse index
// knows.
func TestReadPassesOverDamage(t *testing.T) {
	for _, how := range []string{"emptied", "broken header", "truncated"} {
		t.Run(how, func(t *testing.T) {
			dir := t.TempDir()
			o := &Options{SegmentBytes: 4096, FlushPolicy: FlushNone, IndexIntervalBytes: 256}
			l := openT(t, nil, dir, o, State{})
			want := appendN(t, l, "b", 120, 2, 40)
			bases := segBases(l)
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			st := l.Checkpoint()
			if len(bases) < 4 {
				t.Fatalf("%d segments", len(bases))
			}
			k := 1
			path := segment.LogPath(dir, bases[k])
			pos, base, _ := batchesOf(t, path)
			if len(pos) < 8 {
				t.Fatalf("segment %d has %d batches", bases[k], len(pos))
			}
			var from, resume int64
			var at int64
			switch how {
			case "emptied": // read-only: a writing open fills the hole (TestMiddleSegmentMissing)
				at = -1
				if err := os.Truncate(path, 0); err != nil {
					t.Fatal(err)
				}
				path = segment.LogPath(dir, bases[k+1]) // named: the segment after the hole
				from, resume = bases[k], bases[k+1]
			case "truncated": // inside a batch: the segment cannot load
				at = pos[2]
				if err := os.Truncate(path, pos[2]+30); err != nil {
					t.Fatal(err)
				}
				from, resume = base[2], bases[k+1]
			case "broken header":
				at = pos[1]
				data, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				data[pos[1]+16] = 9 // magic
				if err := os.WriteFile(path, data, 0o644); err != nil {
					t.Fatal(err)
				}
				from, resume = base[1], base[2] // the next batch, not a later one the index knows
			}
			ro := *o
			ro.ReadOnly = how == "emptied"
			l = openT(t, nil, dir, &ro, st)
			got, damaged := readPassing(t, l, 0)
			if len(damaged) != 1 {
				t.Fatalf("%d damaged ranges reported, want 1: %v", len(damaged), damaged)
			}
			d := damaged[0]
			var c *errs.Corruption
			if d.Path != path || d.Pos != at || d.From != from || d.Resume != resume ||
				!errors.Is(d, ErrCorrupt) || !errors.Is(d, errs.ErrCorrupt) || !errors.As(d, &c) || c.Path != path || c.Pos != at || c.Offset != from {
				t.Fatalf("damage reported as %+v (%v), want %s at byte %d, offsets %d to %d", d, d, path, at, from, resume-1)
			}
			t.Logf("%v", d)
			expect := outside(want, from, resume)
			sameRecs(t, got, expect)
			// A read inside the range reports it too.
			if _, err := l.Read(from, 1<<20); !errors.As(err, &d) || d.Resume != resume {
				t.Fatalf("read at %d: %v", from, err)
			}
			if ro.ReadOnly {
				return
			}
			if first, _, err := l.Append(makeBatch(t, "n", 0, 1, 10, 1)); err != nil || first != int64(len(want)) {
				t.Fatalf("append: %d %v", first, err)
			}
		})
	}
}

// readLocating reads every visible record from offset from as a consumer
// does: a batch whose checks fail is handed to LocateDamage, and reading
// goes on at the range's Resume, as it does past a range Read reports. It
// returns the records and the ranges.
func readLocating(t *testing.T, l *Log, from int64) ([]rec, []*DamagedRangeError) {
	t.Helper()
	var out []rec
	var damaged []*DamagedRangeError
	for off := from; off < l.HighWatermark(); {
		v, err := l.Read(off, 1<<20)
		if d := (*DamagedRangeError)(nil); errors.As(err, &d) && d.Resume > off && len(damaged) <= 10 {
			// A misframed batch: Read locates it itself.
			damaged = append(damaged, d)
			off = d.Resume
			continue
		}
		if err != nil {
			t.Fatalf("read at %d: %v", off, err)
		}
		next, recs, err := decodeView(v, off)
		v.Release()
		out = append(out, recs...)
		if next > off {
			off = next
		}
		if err == nil {
			continue
		}
		var d *DamagedRangeError
		if lerr := l.LocateDamage(off); !errors.As(lerr, &d) || d.Resume <= off || len(damaged) > 10 {
			t.Fatalf("decode at %d: %v; LocateDamage: %v", off, err, lerr)
		}
		damaged = append(damaged, d)
		off = d.Resume
	}
	return out, damaged
}

// TestLocateDamage: a batch of a sealed segment whose framing holds but
// whose checks fail (a flipped record byte, a flipped last-offset-delta or
// length field; issue 11 item 5) costs exactly that batch: LocateDamage
// names the file, its bytes and its offsets, and where the next valid batch
// starts, found from evidence the damage cannot forge (a valid batch whose
// chain reaches the next indexed batch), never by the damaged fields; a
// read after it starts at that batch, and every other record is read.
func TestLocateDamage(t *testing.T) {
	for _, how := range []string{"crc", "last offset delta", "length inside", "length outside", "magic"} {
		t.Run(how, func(t *testing.T) {
			dir := t.TempDir()
			o := &Options{SegmentBytes: 8192, FlushPolicy: FlushNone, IndexIntervalBytes: 2048}
			l := openT(t, nil, dir, o, State{})
			want := appendN(t, l, "b", 120, 2, 40)
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			st := l.Checkpoint()
			path := segment.LogPath(dir, 0)
			pos, base, last := batchesOf(t, path)
			if len(pos) < 8 {
				t.Fatalf("%d batches in the first segment", len(pos))
			}
			const k = 2 // the damaged batch; the index knows none before k+2
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			switch how {
			case "crc":
				data[pos[k+1]-1] ^= 0x20
			case "last offset delta": // what sent the reverted pass-over to 1342177361
				data[pos[k]+23] ^= 0x50
			case "length inside":
				data[pos[k]+11] ^= 0x40
			case "length outside":
				data[pos[k]+8] ^= 0x10
			case "magic":
				data[pos[k]+16] = 9
			}
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
			l = openT(t, nil, dir, o, st)
			defer l.Close()
			if err := l.LocateDamage(base[k-1]); err != nil {
				t.Fatalf("LocateDamage before the damage: %v", err)
			}
			got, damaged := readLocating(t, l, 0)
			if len(damaged) != 1 {
				t.Fatalf("%d damaged ranges, want 1: %v", len(damaged), damaged)
			}
			d := damaged[0]
			var c *errs.Corruption
			if d.Path != path || d.Pos != pos[k] || d.End != pos[k+1] || d.From != base[k] || d.Resume != base[k+1] ||
				!errors.Is(d, ErrCorrupt) || !errors.As(d, &c) || c.Path != path || c.Pos != pos[k] {
				t.Fatalf("damage reported as %+v (%v), want %s bytes %d to %d, offsets %d to %d", d, d, path, pos[k], pos[k+1]-1, base[k], last[k])
			}
			t.Logf("%v", d)
			var expect []rec
			for _, w := range want {
				if w.offset < base[k] || w.offset > last[k] {
					expect = append(expect, w)
				}
			}
			sameRecs(t, got, expect)
		})
	}
}

// flipActive opens dir's log cleanly from st, after damage(data, pos,
// base) changed the active segment's bytes (pos and base: its batches'),
// appends a batch and closes it.
func flipActive(t *testing.T, dir string, o *Options, st State, damage func(data []byte, pos, base []int64)) *Log {
	t.Helper()
	var last int64
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if b, suffix, ok := segment.ParseFileName(e.Name()); ok && suffix == segment.LogSuffix && b > last {
			last = b
		}
	}
	path := segment.LogPath(dir, last)
	pos, base, _ := batchesOf(t, path)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	damage(data, pos, base)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return openT(t, nil, dir, o, st)
}

// TestActiveDamageAfterCleanClose: a flipped max timestamp in the active
// segment of a cleanly closed log (a clean open trusts it unscanned: the
// restored maximum timestamp comes from the damaged header, at an offset
// below the time index's last entry) must not make the seal at Close fail on an out-of-order final time-index entry, and the
// records outside the damaged batch stay readable.
func TestActiveDamageAfterCleanClose(t *testing.T) {
	dir := t.TempDir()
	o := &Options{SegmentBytes: 1 << 20, FlushPolicy: FlushNone, IndexIntervalBytes: 1 << 20}
	l := openT(t, nil, dir, o, State{})
	want := appendN(t, l, "a", 6, 2, 40)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	st := l.Checkpoint()
	const k = 2 // before the batch of the largest timestamp (the last)
	l = flipActive(t, dir, o, st, func(data []byte, pos, _ []int64) {
		data[pos[k]+35] ^= 0x01 // max timestamp's top byte: far in the future
	})
	if _, _, err := l.Append(makeBatch(t, "n", 100, 1, 10, 2000)); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatalf("close after a flipped max timestamp: %v", err)
	}
	l = openT(t, nil, dir, o, l.Checkpoint())
	defer l.Close()
	got, damaged := readLocating(t, l, 0)
	if len(damaged) != 1 || damaged[0].From != int64(2*k) || damaged[0].Resume != int64(2*k+2) {
		t.Fatalf("damage %v, want offsets %d to %d", damaged, 2*k, 2*k+1)
	}
	var expect []rec
	for _, w := range want {
		if w.offset < 2*k || w.offset > 2*k+1 {
			expect = append(expect, w)
		}
	}
	sameRecs(t, got[:len(got)-1], expect)
}

// TestDamagedLastOffsetInRebuild: a flipped last-offset delta in the last
// batch of a sealed segment whose indexes must be rebuilt (lost, as after
// a crash) claims offsets the segment cannot index: the rebuild must not
// fail on it ("value out of range"); the read reports the batch as a
// damaged range, delivers the records before it, and goes on at the next
// segment.
func TestDamagedLastOffsetInRebuild(t *testing.T) {
	dir := t.TempDir()
	o := &Options{SegmentBytes: 2048, FlushPolicy: FlushNone, IndexIntervalBytes: 256}
	l := openT(t, nil, dir, o, State{})
	want := appendN(t, l, "r", 60, 2, 40)
	bases := segBases(l)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	st := l.Checkpoint()
	if len(bases) < 3 {
		t.Fatalf("%d segments", len(bases))
	}
	path := segment.LogPath(dir, bases[0])
	pos, base, last := batchesOf(t, path)
	k := len(pos) - 1
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	data[pos[k]+23] ^= 0x7f // the last offset delta's top byte
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{segment.IndexPath(dir, bases[0]), segment.TimeIndexPath(dir, bases[0])} {
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
	}
	l = openT(t, nil, dir, o, st)
	defer l.Close()
	got, damaged := readLocating(t, l, 0)
	if len(damaged) != 1 || damaged[0].From != base[k] || damaged[0].Resume != bases[1] || damaged[0].Pos != pos[k] {
		t.Fatalf("damage %v, want offsets %d to %d at byte %d", damaged, base[k], bases[1]-1, pos[k])
	}
	var expect []rec
	for _, w := range want {
		if w.offset < base[k] || w.offset > last[k] {
			expect = append(expect, w)
		}
	}
	sameRecs(t, got, expect)
}

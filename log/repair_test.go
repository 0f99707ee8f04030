package log

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/foliolog/folio/errs"
	"github.com/foliolog/folio/record"
	"github.com/foliolog/folio/segment"
)

// TestRepairSealedKeepsBatchesAfterDamage: a sealed segment that cannot
// load after a clean open (a batch after its last offset-index entry whose
// length field is damaged, so the load's header walk fails; issue 11 item
// 5) costs exactly that batch, not the valid batches after it in the same
// segment: the read's repair replaces the damaged bytes with an empty
// batch covering their offsets (and reports the range, naming the file,
// the byte position and the offsets), and keeps the batches after it. The
// next open finds a valid segment with every record outside the range.
func TestRepairSealedKeepsBatchesAfterDamage(t *testing.T) {
	for _, how := range []string{"length past the end", "length short", "cut inside a batch"} {
		t.Run(how, func(t *testing.T) {
			dir := t.TempDir()
			// Index entries far apart: the damage lies after the last one.
			o := &Options{SegmentBytes: 4096, FlushPolicy: FlushNone, IndexIntervalBytes: 1 << 20}
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
			path := segment.LogPath(dir, bases[1])
			pos, base, _ := batchesOf(t, path)
			if len(pos) < 8 {
				t.Fatalf("segment %d has %d batches", bases[1], len(pos))
			}
			const k = 4 // the damaged batch: batches before and after it
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			from, resume, batches := base[k], base[k+1], len(pos)
			switch how {
			case "cut inside a batch":
				// Nothing valid after it: the range ends at the next
				// segment, and is filled so that the chain stays whole.
				data = data[:pos[k]+30]
				resume, batches = bases[2], k+1
			case "length short":
				binary.BigEndian.PutUint32(data[pos[k]+8:], 20) // shorter than a header
			default:
				binary.BigEndian.PutUint32(data[pos[k]+8:], 1<<30) // runs past the end
			}
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
			expect := outside(want, from, resume)

			l = openT(t, nil, dir, o, st)
			got, damaged := readPassing(t, l, 0)
			if len(damaged) != 1 {
				t.Fatalf("%d damaged ranges reported, want 1: %v", len(damaged), damaged)
			}
			d := damaged[0]
			var c *errs.Corruption
			if d.Path != path || d.Pos != pos[k] || d.From != from || d.Resume != resume ||
				!errors.Is(d, ErrCorrupt) || !errors.As(d, &c) || c.Path != path || c.Pos != pos[k] || c.Offset != from {
				t.Fatalf("damage reported as %+v (%v), want %s at byte %d, offsets %d to %d", d, d, path, pos[k], from, resume-1)
			}
			t.Logf("%v", d)
			sameRecs(t, got, expect)
			// A read inside the range reports it too, and one from before
			// it stops at it.
			if _, err := l.Read(from, 1<<20); !errors.As(err, &d) || d.Resume != resume {
				t.Fatalf("read at %d: %v", from, err)
			}
			v, err := l.Read(base[k-1], 1<<20)
			if err != nil {
				t.Fatalf("read at %d: %v", base[k-1], err)
			}
			next, _, err := decodeView(v, base[k-1])
			v.Release()
			if err != nil || next != from {
				t.Fatalf("a read at %d ends at %d (%v), want at the damaged range's start %d", base[k-1], next, err, from)
			}
			if first, _, err := l.Append(makeBatch(t, "n", 0, 1, 10, 1)); err != nil || first != int64(len(want)) {
				t.Fatalf("append: %d %v", first, err)
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}

			// The repair is on disk: a valid chain, the range an empty
			// batch, read through by the next open without damage.
			np, nb, nl := batchesOf(t, path)
			if len(np) != batches || nb[k] != from || nl[k] != resume-1 {
				t.Fatalf("the repaired segment has batches %v to %v, want %d with %d to %d at %d", nb, nl, batches, from, resume-1, k)
			}
			l = openT(t, nil, dir, o, l.Checkpoint())
			got, damaged = readPassing(t, l, 0)
			if len(damaged) != 0 {
				t.Fatalf("after the repair: %v", damaged)
			}
			sameRecs(t, got[:len(expect)], expect)
		})
	}
}

// TestLocatedDamageIsRewritten: a batch of a sealed segment whose framing
// holds but whose CRC fails (a flipped record byte) is located by a
// reader (LocateDamage) and then rewritten on disk as an empty batch
// covering its offsets, the batches after it kept (issue 11 item 5: the
// damage table's flip:verify-after): the range is reported while the log
// is open, to a second locate too, and the next open finds every batch of
// the segment valid and reports nothing.
func TestLocatedDamageIsRewritten(t *testing.T) {
	dir := t.TempDir()
	o := &Options{SegmentBytes: 4096, FlushPolicy: FlushNone, IndexIntervalBytes: 256}
	l := openT(t, nil, dir, o, State{})
	want := appendN(t, l, "b", 120, 2, 40)
	bases := segBases(l)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	st := l.Checkpoint()
	path := segment.LogPath(dir, bases[1])
	pos, base, _ := batchesOf(t, path)
	const k = 3
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	data[pos[k]+record.HeaderSize+5] ^= 0x40 // a record byte: the CRC fails
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	from, resume := base[k], base[k+1]
	expect := outside(want, from, resume)
	l = openT(t, nil, dir, o, st)
	got, damaged := readLocating(t, l, 0)
	if len(damaged) != 1 || damaged[0].From != from || damaged[0].Resume != resume || damaged[0].Path != path {
		t.Fatalf("damage reported as %v, want %s offsets %d to %d", damaged, path, from, resume-1)
	}
	sameRecs(t, got, expect)
	var d *DamagedRangeError
	if err := l.LocateDamage(from); !errors.As(err, &d) || d.From != from || d.Resume != resume {
		t.Fatalf("a second locate at %d: %v", from, err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	data, err = os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for p := 0; p < len(data); n++ {
		b, _, err := record.Parse(data[p:])
		if err == nil {
			err = b.Validate()
		}
		if err != nil {
			t.Fatalf("the rewritten %s at %d: %v", path, p, err)
		}
		if n == k && (b.BaseOffset() != from || b.LastOffset() != resume-1 || b.NumRecords() != 0) {
			t.Fatalf("batch %d covers %d to %d with %d records, want an empty batch for %d to %d", k, b.BaseOffset(), b.LastOffset(), b.NumRecords(), from, resume-1)
		}
		p += len(b)
	}
	if n != len(pos) {
		t.Fatalf("the rewritten segment has %d batches, want %d", n, len(pos))
	}
	l = openT(t, nil, dir, o, l.Checkpoint())
	got, damaged = readLocating(t, l, 0)
	if len(damaged) != 0 {
		t.Fatalf("after the rewrite: %v", damaged)
	}
	sameRecs(t, got, expect)
}

// TestCleanOpenKeepsActiveBatchesAfterDamage: after a clean shutdown, the
// last segment with a batch whose length field is damaged (it cannot
// load; damage table seed 604, clean/active.log/flip) costs that batch
// only: the open replaces it with an empty batch covering its offsets and
// reports it, where it cut the segment there (losing the batches after
// it), and the next append goes at the end the shutdown left.
func TestCleanOpenKeepsActiveBatchesAfterDamage(t *testing.T) {
	dir := t.TempDir()
	o := &Options{SegmentBytes: 1 << 20, FlushPolicy: FlushNone, IndexIntervalBytes: 1 << 20}
	l := openT(t, nil, dir, o, State{})
	want := appendN(t, l, "b", 20, 2, 40)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	st := l.Checkpoint()
	path := segment.LogPath(dir, 0)
	pos, base, _ := batchesOf(t, path)
	k := len(pos) - 3
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	binary.BigEndian.PutUint32(data[pos[k]+8:], 1<<30)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	from, resume := base[k], base[k+1]
	expect := outside(want, from, resume)
	l = openT(t, nil, dir, o, st)
	damageNaming(t, l.Recovery(), filepath.Base(path))
	got, damaged := readPassing(t, l, 0)
	if len(damaged) != 1 || damaged[0].From != from || damaged[0].Resume != resume {
		t.Fatalf("damage reported as %v, want offsets %d to %d", damaged, from, resume-1)
	}
	sameRecs(t, got, expect)
	if first, _, err := l.Append(makeBatch(t, "n", 0, 1, 10, 1)); err != nil || first != int64(len(want)) {
		t.Fatalf("append: %d %v, want offset %d", first, err, len(want))
	}
}

// TestLocatedActiveDamageIsRewrittenAtClose: damage a read located in the
// active segment (a record byte flipped after a clean shutdown: the CRC
// fails, the framing holds) is passed over while the log is open and
// rewritten at Close, once the segment is sealed: the next open and a walk
// of the file find it whole, the damaged batch an empty batch covering its
// offsets, every other record kept and the log end where it was. In the
// last batch, with nothing valid after it, the range runs to the log end.
func TestLocatedActiveDamageIsRewrittenAtClose(t *testing.T) {
	for _, tc := range []struct {
		name   string
		append bool // append a batch between the read and Close
		last   bool // damage the last batch
	}{
		{"middle", false, false},
		{"middle-then-append", true, false},
		{"last", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			o := &Options{SegmentBytes: 1 << 20, FlushPolicy: FlushNone, IndexIntervalBytes: 256}
			l := openT(t, nil, dir, o, State{})
			want := appendN(t, l, "a", 12, 2, 40)
			end := l.LogEndOffset()
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			var from, resume int64
			var nbatches int
			l = flipActive(t, dir, o, l.Checkpoint(), func(data []byte, pos, base []int64) {
				k := 5
				if tc.last {
					k = len(pos) - 1
				}
				data[pos[k]+record.HeaderSize+5] ^= 0x40 // a record byte: the CRC fails
				from, resume, nbatches = base[k], end, len(pos)
				if k+1 < len(pos) {
					resume = base[k+1]
				}
			})
			expect := outside(want, from, resume)
			got, damaged := readLocating(t, l, 0)
			if len(damaged) != 1 || damaged[0].From != from || damaged[0].Resume != resume {
				t.Fatalf("damage reported as %v, want offsets %d to %d", damaged, from, resume-1)
			}
			sameRecs(t, got, expect)
			if tc.append {
				if _, _, err := l.Append(makeBatch(t, "n", 0, 1, 10, 1)); err != nil {
					t.Fatal(err)
				}
				end++
				nbatches++
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			path := segment.LogPath(dir, 0)
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			n, filled := 0, 0
			for p := 0; p < len(data); n++ {
				b, _, err := record.Parse(data[p:])
				if err == nil {
					err = b.Validate()
				}
				if err != nil {
					t.Fatalf("the rewritten %s at %d: %v", path, p, err)
				}
				if b.BaseOffset() == from {
					filled++
					if b.LastOffset() != resume-1 || b.NumRecords() != 0 {
						t.Fatalf("the batch at %d covers %d to %d with %d records, want an empty batch for %d to %d", from, b.BaseOffset(), b.LastOffset(), b.NumRecords(), from, resume-1)
					}
				}
				p += len(b)
			}
			if n != nbatches || filled != 1 {
				t.Fatalf("the rewritten segment has %d batches (%d at offset %d), want %d (one)", n, filled, from, nbatches)
			}
			l = openT(t, nil, dir, o, l.Checkpoint())
			defer l.Close()
			if got := l.LogEndOffset(); got != end {
				t.Fatalf("log end %d after the rewrite, want %d", got, end)
			}
			got, damaged = readLocating(t, l, 0)
			if len(damaged) != 0 {
				t.Fatalf("after the rewrite: %v", damaged)
			}
			if tc.append {
				got = got[:len(got)-1]
			}
			sameRecs(t, got, expect)
		})
	}
}

// TestReadPassesOverFlippedBaseOffset: a flipped high byte of the base
// offset of a batch inside a sealed segment (outside the CRC: the batch
// still checks out) sends its offsets past the next segment's base; the
// read reports that batch as a damaged range and delivers the batches of
// the segment after it, where it lost them all (damage table seed
// 1796370905210891828, clean/sealed.log/flip), and the repair rewrites it.
func TestReadPassesOverFlippedBaseOffset(t *testing.T) {
	dir := t.TempDir()
	o := &Options{SegmentBytes: 4096, FlushPolicy: FlushNone, IndexIntervalBytes: 256}
	l := openT(t, nil, dir, o, State{})
	want := appendN(t, l, "b", 120, 2, 40)
	bases := segBases(l)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	path := segment.LogPath(dir, bases[1])
	pos, base, _ := batchesOf(t, path)
	const k = 3
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	data[pos[k]+4] ^= 0x80 // base offset += 1<<31: past the next segment
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	from, resume := base[k], base[k+1]
	expect := outside(want, from, resume)
	l = openT(t, nil, dir, o, l.Checkpoint())
	got, damaged := readLocating(t, l, 0)
	if len(damaged) != 1 || damaged[0].From != from || damaged[0].Resume != resume || damaged[0].Path != path {
		t.Fatalf("damage reported as %v, want %s offsets %d to %d", damaged, path, from, resume-1)
	}
	sameRecs(t, got, expect)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openT(t, nil, dir, o, l.Checkpoint())
	defer l.Close()
	got, damaged = readLocating(t, l, 0)
	if len(damaged) != 0 {
		t.Fatalf("after the rewrite: %v", damaged)
	}
	sameRecs(t, got, expect)
}

// outside returns the records of want outside the damaged range [from,
// resume): what a reader still gets.
func outside(want []rec, from, resume int64) []rec {
	var keep []rec
	for _, w := range want {
		if w.offset < from || w.offset >= resume {
			keep = append(keep, w)
		}
	}
	return keep
}

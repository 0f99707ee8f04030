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
// next valid batch the sparse index knows (or the next segment).
func TestReadPassesOverDamage(t *testing.T) {
	for _, how := range []string{"emptied", "broken header", "truncated"} {
		t.Run(how, func(t *testing.T) {
			dir := t.TempDir()
			o := &Options{SegmentBytes: 4096, FlushPolicy: FlushNone, IndexIntervalBytes: 256}
			l := openT(t, nil, dir, o, State{})
			want := appendN(t, l, "b", 120, 2, 40)
			var bases []int64
			l.snap.Load().segs.Ascend(func(e *segEntry) bool {
				bases = append(bases, e.base)
				return true
			})
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			st := l.Checkpoint()
			if len(bases) < 4 {
				t.Fatalf("%d segments", len(bases))
			}
			k := 1
			path := segment.LogPath(dir, bases[k])
			pos, base, last := batchesOf(t, path)
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
				from, resume = base[1], -1 // a later batch the index knows
			}
			ro := *o
			ro.ReadOnly = how == "emptied"
			l = openT(t, nil, dir, &ro, st)
			got, damaged := readPassing(t, l, 0)
			if len(damaged) != 1 {
				t.Fatalf("%d damaged ranges reported, want 1: %v", len(damaged), damaged)
			}
			d := damaged[0]
			if resume < 0 {
				resume = d.Resume
				if resume <= last[1] || resume >= bases[k+1] {
					t.Fatalf("resumes at %d, want a batch of segment %d after the damaged one", resume, bases[k])
				}
			}
			var c *errs.Corruption
			if d.Path != path || d.Pos != at || d.From != from || d.Resume != resume ||
				!errors.Is(d, ErrCorrupt) || !errors.Is(d, errs.ErrCorrupt) || !errors.As(d, &c) || c.Path != path || c.Pos != at || c.Offset != from {
				t.Fatalf("damage reported as %+v (%v), want %s at byte %d, offsets %d to %d", d, d, path, at, from, resume-1)
			}
			t.Logf("%v", d)
			var expect []rec
			for _, w := range want {
				if w.offset < from || w.offset >= resume {
					expect = append(expect, w)
				}
			}
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

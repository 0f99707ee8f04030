package segment

import (
	"errors"
	"math/rand"
	"os"
	"path/filepath"
	"testing"

	"github.com/foliolog/folio/errs"
	"github.com/foliolog/folio/index"
	"github.com/foliolog/folio/readpath"
	"github.com/foliolog/folio/vfs"
)

// TestReadOnlyFollowsAWriter: a followed read-only segment answers every
// lookup as the writer's own model says, for what its Refresh made
// visible: the writer's zero-tailed active index is only a hint, a batch
// being written stays hidden until whole, a cut file is read again, and
// nothing is ever written.
func TestReadOnlyFollowsAWriter(t *testing.T) {
	for _, rp := range []readpath.Kind{readpath.Mmap, readpath.Sendfile} {
		t.Run(rp.String(), func(t *testing.T) {
			dir := segDir(t)
			opts := &Options{IndexIntervalBytes: 300, ReadPath: rp, MaxSegmentBytes: 8 << 20}
			w := mustCreate(t, dir, 100, opts)
			m := &model{base: 100}
			g := newGen(t, testRand(t), 100)
			fill(t, w, m, g, 40)
			rfs := &readOnlyFS{FS: vfs.Default}
			r, err := OpenReadOnly(rfs, dir, 100, true, opts)
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				if err := r.Close(); err != nil {
					t.Error(err)
				}
				if len(rfs.refused) > 0 {
					t.Errorf("a read-only segment tried to change the disk: %q", rfs.refused)
				}
			}()
			refresh := func() {
				t.Helper()
				pos, next, err := r.Refresh()
				if err != nil || pos != m.size() || next != m.next() {
					t.Fatalf("Refresh: %d, %d, %v; the writer has %d bytes up to offset %d", pos, next, err, m.size(), m.next())
				}
			}
			refresh()
			checkAgainst(t, r, m)
			if n := r.IndexRebuilds(); n != 0 {
				// The writer's index is right as far as it goes: a hint
				// to use, not to rebuild.
				t.Errorf("%d index rebuilds of a followed segment with a good index", n)
			}

			// Appends become visible at the next Refresh, not before.
			seen := *m
			seen.batches = append([]mbatch(nil), m.batches...)
			fill(t, w, m, g, 30)
			checkAgainst(t, r, &seen)
			refresh()
			checkAgainst(t, r, m)

			// Half a batch (a writer mid-write) stays hidden.
			f, err := os.OpenFile(LogPath(dir, 100), os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			b := g.batch()
			if _, err := f.Write(b[:len(b)/2]); err != nil {
				t.Fatal(err)
			}
			refresh()
			checkAgainst(t, r, m)
			if _, err := f.Write(b[len(b)/2:]); err != nil {
				t.Fatal(err)
			}
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
			m.add(b)
			refresh()
			checkAgainst(t, r, m)

			// Writes are refused.
			for name, err := range map[string]error{
				"append":   func() error { _, err := r.Append(g.batch()); return err }(),
				"seal":     r.Seal(),
				"activate": r.Activate(),
				"truncate": func() error { _, err := r.TruncateTo(110); return err }(),
				"recover":  func() error { _, err := r.Recover(); return err }(),
				"delete":   r.Delete(),
			} {
				if !errors.Is(err, ErrReadOnly) {
					t.Errorf("%s: %v, want ErrReadOnly", name, err)
				}
			}
		})
	}
}

// TestReadOnlyRebuildsInMemory: a sealed segment whose index files are
// missing or damaged is read right with indexes rebuilt in memory, and the
// files stay as they were.
func TestReadOnlyRebuildsInMemory(t *testing.T) {
	dir := segDir(t)
	opts := &Options{IndexIntervalBytes: 200}
	w := mustCreate(t, dir, 0, opts)
	m := &model{}
	fill(t, w, m, newGen(t, testRand(t), 0), 80)
	if err := w.Seal(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(IndexPath(dir, 0))
	if err != nil {
		t.Fatal(err)
	}
	for i := len(data) / 2; i < len(data)/2+40 && i < len(data); i++ {
		data[i] ^= 0x5a
	}
	if err := os.WriteFile(IndexPath(dir, 0), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(TimeIndexPath(dir, 0)); err != nil {
		t.Fatal(err)
	}
	before := map[string][]byte{}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		before[e.Name()], _ = os.ReadFile(filepath.Join(dir, e.Name()))
	}
	rfs := &readOnlyFS{FS: vfs.Default}
	r, err := OpenReadOnly(rfs, dir, 0, false, opts)
	if err != nil {
		t.Fatal(err)
	}
	checkAgainst(t, r, m)
	if r.IndexRebuilds() == 0 {
		t.Error("damaged indexes were not rebuilt")
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if len(rfs.refused) > 0 {
		t.Errorf("a read-only segment tried to change the disk: %q", rfs.refused)
	}
	ents, _ = os.ReadDir(dir)
	if len(ents) != len(before) {
		t.Fatalf("%d files, %d before", len(ents), len(before))
	}
	for _, e := range ents {
		now, _ := os.ReadFile(filepath.Join(dir, e.Name()))
		if string(now) != string(before[e.Name()]) {
			t.Errorf("%s changed", e.Name())
		}
	}
}

// TestReadReturnsGoodBatchesBeforeDamage: a read whose batches run into a
// damaged header returns the batches before it with the error, which
// names the file and the bad batch's position; a read at the damaged batch
// returns the error alone.
func TestReadReturnsGoodBatchesBeforeDamage(t *testing.T) {
	readGoodBatchesBeforeDamage(t, testRand(t))
}

// TestReadBeforeDamageAtTimeEntry: with this seed the time index's last
// entry points at the damaged batch, which once made loading the segment
// fail (so not even the batches before the damage could be read) and
// rebuilding its indexes stop at the damage.
func TestReadBeforeDamageAtTimeEntry(t *testing.T) {
	readGoodBatchesBeforeDamage(t, rand.New(rand.NewSource(1796248369979261787)))
}

func readGoodBatchesBeforeDamage(t *testing.T, rng *rand.Rand) {
	dir := segDir(t)
	// An entry at every batch: loading checks the batches after the last
	// entry only, and the damage lies before it.
	opts := &Options{IndexIntervalBytes: 1}
	w := mustCreate(t, dir, 0, opts)
	m := &model{}
	fill(t, w, m, newGen(t, rng, 0), 10)
	if err := w.Seal(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	bad := m.batches[5]
	f, err := os.OpenFile(LogPath(dir, 0), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte{9}, bad.pos+16); err != nil { // magic
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	s := mustOpen(t, dir, 0, opts)
	v, err := s.Read(m.batches[2].h().BaseOffset(), 1<<30, -1)
	var ce *errs.Corruption
	if !errors.Is(err, ErrCorrupt) || !errors.As(err, &ce) || ce.Path != LogPath(dir, 0) || ce.Pos != bad.pos {
		t.Fatalf("read into the damage: %v, want ErrCorrupt at %s byte %d", err, LogPath(dir, 0), bad.pos)
	}
	if v == nil {
		t.Fatalf("no view of the good batches: %v", err)
	}
	if v.Pos() != m.batches[2].pos || int64(v.Len()) != bad.pos-m.batches[2].pos {
		t.Fatalf("view [%d, +%d), want [%d, %d)", v.Pos(), v.Len(), m.batches[2].pos, bad.pos)
	}
	v.Release()
	for _, off := range []int64{bad.h().BaseOffset(), bad.h().LastOffset()} {
		if v, err := s.Read(off, 1<<30, -1); v != nil || !errors.Is(err, ErrCorrupt) {
			t.Fatalf("read at offset %d of the damaged batch: %v, %v", off, v, err)
		}
	}
	// The batches after the damage stay readable through the index, also
	// after reads into the damage.
	after := m.batches[7]
	v, err = s.Read(after.h().BaseOffset(), 1, -1)
	if err != nil {
		t.Fatalf("read after the damage: %v", err)
	}
	if v.Pos() != after.pos {
		t.Fatalf("read after the damage at %d, want %d", v.Pos(), after.pos)
	}
	v.Release()
}

// TestReadOnlyMaxTimestampBetweenEntries: a followed segment whose writer
// has written an offset entry but not yet the time entry of the same batch
// (the two are separate appends) still finds the largest timestamp, which
// here lies in a batch between the last two index points.
func TestReadOnlyMaxTimestampBetweenEntries(t *testing.T) {
	src := segDir(t)
	opts := &Options{IndexIntervalBytes: 400}
	w := mustCreate(t, src, 0, opts)
	rng := testRand(t)
	m := &model{}
	// Timestamps rise to a peak, then fall back: about 120 bytes a batch,
	// an index point every four or so.
	for i := 0; i < 40; i++ {
		ts := int64(1000 + i*10)
		if i >= 33 {
			ts = int64(500 + i)
		}
		b := buildBatch(t, int64(i), []int32{0}, []int64{ts}, 40, rng)
		if _, err := w.Append(b); err != nil {
			t.Fatal(err)
		}
		m.add(b)
	}
	dst := segDir(t)
	for _, p := range []string{LogPath(src, 0), IndexPath(src, 0), TimeIndexPath(src, 0)} {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if p == TimeIndexPath(src, 0) {
			// Zero the last time entry: the writer between its two appends.
			times, err := index.ReadTimeEntries(nil, p, 0)
			if err != nil || len(times) < 2 {
				t.Fatalf("time entries %v, %v", times, err)
			}
			n := len(times) * index.TimeEntrySize
			clear(data[n-index.TimeEntrySize : n])
		}
		if err := os.WriteFile(filepath.Join(dst, filepath.Base(p)), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r, err := OpenReadOnly(&readOnlyFS{FS: vfs.Default}, dst, 0, true, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, _, err := r.Refresh(); err != nil {
		t.Fatal(err)
	}
	checkAgainst(t, r, m)
}

package segment

import (
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/foliolog/folio/readpath"
	"github.com/foliolog/folio/vfs"
)

// countFS is testFS that counts ReadAt calls on .log handles.
type countFS struct {
	vfs.FS
	logReads atomic.Int64
}

func (c *countFS) OpenFile(name string, flag int, perm os.FileMode) (vfs.File, error) {
	f, err := c.FS.OpenFile(name, flag, perm)
	if err != nil || filepath.Ext(name) != LogSuffix {
		return f, err
	}
	return &countFile{File: f, n: &c.logReads}, nil
}

type countFile struct {
	vfs.File
	n *atomic.Int64
}

func (f *countFile) ReadAt(p []byte, off int64) (int, error) {
	f.n.Add(1)
	return f.File.ReadAt(p, off)
}

// lookupsOnly runs FindPosition, OffsetForTime and Read (without touching
// the view's bytes) for every batch of m, checking the answers.
func lookupsOnly(t *testing.T, s *Segment, m *model) {
	t.Helper()
	for i, b := range m.batches {
		h := b.h()
		for _, off := range []int64{h.BaseOffset(), h.LastOffset()} {
			if pos, err := s.FindPosition(off); err != nil || pos != b.pos {
				t.Fatalf("FindPosition(%d) = %d, %v; want %d", off, pos, err, b.pos)
			}
		}
		v, err := s.Read(h.LastOffset(), 1<<20, -1)
		if err != nil {
			t.Fatal(err)
		}
		if want := len(m.read(h.LastOffset(), 1<<20, -1)); v.Pos() != b.pos || v.Len() != want {
			t.Fatalf("Read(%d) = [%d, +%d), want [%d, +%d)", h.LastOffset(), v.Pos(), v.Len(), b.pos, want)
		}
		v.Release()
		ts := h.MaxTimestamp()
		got, ok, err := s.OffsetForTime(ts)
		want, wok := m.offsetForTime(ts)
		if err != nil || ok != wok || got != want {
			t.Fatalf("OffsetForTime(%d) = %d, %v, %v; want %d, %v (batch %d)", ts, got, ok, err, want, wok, i)
		}
	}
}

// TestMmapLookupsReadHeadersFromTheMapping: with the Mmap read path, the
// header walks of Read, FindPosition and OffsetForTime read the mapping and
// make no pread of the .log (once the segment is loaded, which reads with
// pread); the Sendfile path, the control, preads.
func TestMmapLookupsReadHeadersFromTheMapping(t *testing.T) {
	rng := testRand(t)
	for _, kind := range []readpath.Kind{readpath.Mmap, readpath.Sendfile} {
		for _, sealed := range []bool{false, true} {
			cfs := &countFS{FS: testFS}
			dir := segDir(t)
			opts := &Options{ReadPath: kind, IndexIntervalBytes: 400}
			s, err := Create(cfs, dir, 0, opts)
			if err != nil {
				t.Fatal(err)
			}
			m := &model{}
			fill(t, s, m, newGen(t, rng, 0), 120)
			if sealed {
				if err := s.Seal(); err != nil {
					t.Fatal(err)
				}
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
				if s, err = Open(cfs, dir, 0, opts); err != nil {
					t.Fatal(err)
				}
				if _, err := s.NextOffset(); err != nil { // loads, with pread
					t.Fatal(err)
				}
			}
			before := cfs.logReads.Load()
			lookupsOnly(t, s, m)
			reads := cfs.logReads.Load() - before
			if kind == readpath.Mmap && reads != 0 {
				t.Errorf("mmap, sealed %v: lookups made %d preads of the .log, want none", sealed, reads)
			}
			if kind == readpath.Sendfile && reads == 0 {
				t.Errorf("sendfile, sealed %v: lookups made no pread: the counter does not see them", sealed)
			}
			if n := s.IndexRebuilds(); n != 0 {
				t.Errorf("%v, sealed %v: %d index rebuilds", kind, sealed, n)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestLogCutBehindTheSegment: a .log cut short by someone else under a live
// segment makes lookups fail with ErrCorrupt on both read paths; on the
// mmap path the header walk touches pages past the new end, and the fault
// must become that error instead of killing the process.
func TestLogCutBehindTheSegment(t *testing.T) {
	rng := testRand(t)
	for _, kind := range []readpath.Kind{readpath.Mmap, readpath.Sendfile} {
		t.Run(kind.String(), func(t *testing.T) {
			dir := segDir(t)
			opts := &Options{ReadPath: kind, IndexIntervalBytes: 1}
			s := mustCreate(t, dir, 0, opts)
			m := &model{}
			g := newGen(t, rng, 0)
			for m.size() < 64<<10 {
				fill(t, s, m, g, 1)
			}
			last := m.batches[len(m.batches)-1]
			if last.pos < 3*4096 {
				t.Fatalf("last batch at %d: too close to the kept page", last.pos)
			}
			if err := os.Truncate(LogPath(dir, 0), 4096); err != nil {
				t.Fatal(err)
			}
			_, err := s.FindPosition(last.h().LastOffset())
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("FindPosition in the cut part = %v, want ErrCorrupt", err)
			}
			if kind == readpath.Mmap && !errors.Is(err, readpath.ErrFault) {
				t.Fatalf("mmap: %v does not come from the guarded fault", err)
			}
			if _, err := s.Read(last.h().LastOffset(), 1, -1); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Read in the cut part = %v, want ErrCorrupt", err)
			}
			// Recover takes the file as it now is.
			res, err := s.Recover()
			if err != nil {
				t.Fatal(err)
			}
			if res.ValidBytes > 4096 {
				t.Fatalf("Recover kept %d bytes of a 4096-byte file", res.ValidBytes)
			}
		})
	}
}

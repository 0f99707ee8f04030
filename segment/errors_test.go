package segment

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/foliolog/folio/errs"
	"github.com/foliolog/folio/record"
)

// TestRecoveryCauseIsACorruption: for each kind of damage to a .log, the
// cause Recover reports for its cut is an *errs.Corruption naming the .log
// and the byte position of the bad batch, matching ErrCorrupt and the
// shared errs.ErrCorrupt, and its text says the position once.
func TestRecoveryCauseIsACorruption(t *testing.T) {
	rng := testRand(t)
	c, m := sealedSegment(t, rng, 12, nil)
	victim := m.batches[5]
	for _, d := range []struct {
		name       string
		damage     func(log []byte) []byte
		wantOffset bool // the header still frames the batch
	}{
		{"flipped payload byte", func(log []byte) []byte { log[victim.end()-1] ^= 0x5a; return log }, true},
		{"bad magic", func(log []byte) []byte { log[victim.pos+16] = 7; return log }, false},
		{"zeroed header", func(log []byte) []byte {
			clear(log[victim.pos : victim.pos+record.HeaderSize])
			return log
		}, false},
		{"torn tail", func(log []byte) []byte { return log[:victim.end()-3] }, false},
		{"offsets not ascending", func(log []byte) []byte {
			record.Batch(log[victim.pos:]).SetBaseOffset(m.batches[4].h().BaseOffset())
			return log
		}, true},
	} {
		t.Run(d.name, func(t *testing.T) {
			dir := segDir(t)
			damaged := c
			damaged.log = d.damage(bytes.Clone(c.log))
			writeSegmentFiles(t, dir, 0, damaged)
			s := mustOpen(t, dir, 0, nil)
			defer s.Close()
			res, err := s.Recover()
			if err != nil {
				t.Fatal(err)
			}
			if res.Cause == nil {
				t.Fatal("nothing cut")
			}
			if !errors.Is(res.Cause, ErrCorrupt) || !errors.Is(res.Cause, errs.ErrCorrupt) {
				t.Fatalf("%v: not ErrCorrupt and errs.ErrCorrupt", res.Cause)
			}
			var ce *errs.Corruption
			if !errors.As(res.Cause, &ce) {
				t.Fatalf("%v: no *errs.Corruption", res.Cause)
			}
			if ce.Path != LogPath(dir, 0) || ce.Pos != victim.pos {
				t.Errorf("%v: at %s byte %d, want %s byte %d", res.Cause, ce.Path, ce.Pos, LogPath(dir, 0), victim.pos)
			}
			// The offset is the one the damaged header states.
			if want := record.Batch(damaged.log[victim.pos:]).BaseOffset(); d.wantOffset && ce.Offset != want {
				t.Errorf("%v: offset %d, want %d", res.Cause, ce.Offset, want)
			}
			msg := res.Cause.Error()
			if strings.Count(msg, "corrupt") > 1 || !strings.HasPrefix(msg, ce.Path+" at byte ") {
				t.Errorf("%q: not one clause per layer", msg)
			}
		})
	}
}

// TestClosedIsTheSharedClass: a call on a closed segment matches ErrClosed
// and errs.ErrClosed.
func TestClosedIsTheSharedClass(t *testing.T) {
	s := mustCreate(t, segDir(t), 0, nil)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.NextOffset(); !errors.Is(err, ErrClosed) || !errors.Is(err, errs.ErrClosed) {
		t.Fatalf("NextOffset after Close: %v", err)
	}
}

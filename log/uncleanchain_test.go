package log

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/foliolog/folio/segment"
)

// TestUncleanOpenChecksChainBelowRecoveryPoint: after a crash, a sealed
// segment below the recovery point (which the unclean open does not scan)
// emptied or deleted in the middle of the log is found by the chain check
// as after a clean shutdown: the hole is reported and filled, an emptied
// file removed, and the open after it finds the chain whole (issue 11 item
// 3), so folio verify is clean after the open.
func TestUncleanOpenChecksChainBelowRecoveryPoint(t *testing.T) {
	for _, how := range []string{"emptied", "deleted"} {
		t.Run(how, func(t *testing.T) {
			dir := t.TempDir()
			want, bases, st := buildLog(t, dir, 40)
			if len(bases) < 5 {
				t.Fatalf("%d segments", len(bases))
			}
			path := segment.LogPath(dir, bases[2])
			var err error
			if how == "emptied" {
				err = os.Truncate(path, 0)
			} else {
				err = os.Remove(path)
			}
			if err != nil {
				t.Fatal(err)
			}
			// A crash after the recovery point passed the damaged segment.
			st.Clean, st.RecoveryPoint = false, bases[len(bases)-2]
			o := &Options{SegmentBytes: 1024, FlushPolicy: FlushNone}
			l := openT(t, nil, dir, o, st)
			damageNaming(t, l.Recovery(), filepath.Base(segment.LogPath(dir, bases[3])))
			if d := l.Recovery().Damage[0].Error(); !strings.Contains(d, fmt.Sprintf("offsets %d to %d", bases[2], bases[3]-1)) {
				t.Fatalf("the hole is reported as %q", d)
			}
			var expect []rec
			for _, w := range want {
				if w.offset < bases[2] || w.offset >= bases[3] {
					expect = append(expect, w)
				}
			}
			sameRecs(t, readAll(t, l, 0), expect)
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			l = openT(t, nil, dir, o, l.Checkpoint())
			if r := l.Recovery(); len(r.Damage) != 0 || r.SegmentsRemoved != 0 {
				t.Fatalf("the open after the fill finds %v (%d segments removed)", r.Damage, r.SegmentsRemoved)
			}
			if fi, err := os.Stat(path); err != nil || fi.Size() == 0 {
				t.Fatalf("no filler at %s: %v", path, err)
			}
			sameRecs(t, readAll(t, l, 0), expect)
		})
	}
}

package log

import (
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/foliolog/folio/segment"
	"github.com/foliolog/folio/vfs/faultfs"
)

// TestPowerCutRetentionDelete cuts the power at every file operation of a
// DeleteRecordsBefore that removes several segments (each renamed to
// .deleted, the directory synced, then unlinked), and once more after it
// returns. Reopened from the checkpoint before the call, the log must hold
// a suffix of what was written, at its offsets, ending at the log end (a
// cut never costs a record above the new start, nor leaves a hole where a
// newer segment went before an older one), with no .deleted file left.
// Reopened from the checkpoint after it returned, it starts at the new
// start.
//
// Each cut runs also with a random part of the directory's unsynced
// changes made durable first (faultfs.SyncEntry: a file system may write
// them in any order until SyncDir), which guards the directory sync in
// segment.Delete: without it a newer segment's removal can persist while
// an older one's does not, and the log opens with a hole.
func TestPowerCutRetentionDelete(t *testing.T) {
	const cutBelow = 90
	seed := testSeed(t)
	root := t.TempDir()
	build := func(t *testing.T, fsys *faultfs.FS, dir string) (*Log, []rec, State) {
		t.Helper()
		o := truncCutOpts
		l, err := Open(fsys, dir, &o, State{})
		if err != nil {
			t.Fatal(err)
		}
		want := appendN(t, l, "r", 40, 4, 60)
		return l, want, l.Checkpoint()
	}

	fsys := faultfs.New()
	l, _, _ := build(t, fsys, filepath.Join(root, "dry"))
	var (
		mu      sync.Mutex
		ops     int
		renamed int
	)
	fsys.SetHook(func(op faultfs.Op) error {
		mu.Lock()
		defer mu.Unlock()
		ops++
		if op.Kind == faultfs.OpRename && strings.HasSuffix(op.Path, segment.LogSuffix) {
			renamed++
		}
		return nil
	})
	if _, err := l.DeleteRecordsBefore(cutBelow); err != nil {
		t.Fatal(err)
	}
	fsys.SetHook(nil)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if renamed < 2 {
		t.Fatalf("DeleteRecordsBefore(%d) renamed %d segments: not a multi-segment deletion", cutBelow, renamed)
	}
	t.Logf("the deletion: %d file operations, %d segments", ops, renamed)

	for n := 1; n <= ops+1; n++ {
		for variant := range 4 {
			name := fmt.Sprintf("op-%d/reordered-%d", n, variant)
			if !t.Run(name, func(t *testing.T) { retentionCutAt(t, root, seed, n, variant, build) }) {
				t.Fatalf("replay with -seed=%d -run 'TestPowerCutRetentionDelete/%s'", seed, name)
			}
		}
	}
}

// retentionCutAt is one cut of TestPowerCutRetentionDelete, at operation n,
// with a random part of the unsynced directory changes made durable first
// unless variant is 0.
func retentionCutAt(t *testing.T, root string, seed uint64, n, variant int, build func(*testing.T, *faultfs.FS, string) (*Log, []rec, State)) {
	const cutBelow = 90
	rng := newRand(seed + uint64(n*4+variant))
	fsys := faultfs.New()
	dir := filepath.Join(root, fmt.Sprintf("%d-%d", n, variant))
	l, want, st := build(t, fsys, dir)
	c := newCutter(fsys, n, reorderedCut(fsys, dir, rng, variant > 0))
	_, derr := l.DeleteRecordsBefore(cutBelow)
	// Past the last operation: cut right after the return (the
	// checkpoint is the log's memory, which the cut does not touch).
	returned := c.now()
	var after State
	if returned {
		if derr != nil {
			t.Fatalf("DeleteRecordsBefore: %v", derr)
		}
		after = l.Checkpoint()
	}
	c.check(t)
	l.kill()
	fsys.SetHook(nil)

	o := truncCutOpts
	r := openT(t, fsys, dir, &o, st)
	start := r.LogStartOffset()
	got := readAll(t, r, start)
	if start > cutBelow || int(start)+len(got) != len(want) {
		t.Fatalf("after a cut at operation %d the log holds %d records from %d; want all from at most %d to %d", n, len(got), start, cutBelow, len(want))
	}
	sameRecs(t, got, want[start:])
	for _, name := range leftovers(t, dir) {
		if strings.HasSuffix(name, segment.DeletedSuffix) {
			t.Fatalf("after a cut at operation %d Open left %s", n, name)
		}
	}
	if returned {
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
		r2 := openT(t, fsys, dir, &o, after)
		if s := r2.LogStartOffset(); s != cutBelow {
			t.Fatalf("reopened from the checkpoint after the deletion: start %d, want %d", s, cutBelow)
		}
		sameRecs(t, readAll(t, r2, cutBelow), want[cutBelow:])
	}
}

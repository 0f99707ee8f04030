package log

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/foliolog/folio/vfs/faultfs"
)

// TestPowerCutCompletingSwapAtOpen leaves a compaction pass cut short after
// each step that makes it committed (the swap-commit marker durable, then
// the sources renamed .deleted, then the .log.swap files renamed over), so
// the next Open must complete the swap; it cuts the power at every file
// operation of that Open in turn (removing the .deleted and replaced files,
// renaming the .log.swap files over, the directory syncs, removing the
// marker, and whatever else Open writes) and opens once more. Every time
// the log must read as after the pass, with no transient file left and no
// damage reported: a completion cut short is completed again, never
// undone halfway nor mixed with the sources. Each cut runs also with a
// random part of the directory's unsynced changes made durable first
// (faultfs.SyncEntry), which guards the directory sync between the renames
// and the marker's removal: without it the removal can persist without
// the renames, and the cleaned segments are discarded with their sources
// gone.
func TestPowerCutCompletingSwapAtOpen(t *testing.T) {
	seed := testSeed(t)
	tmpl, opts, st, m := compactCrashTemplate(t, seed)
	root := metadataTempDir(t)
	reopen := st
	reopen.Clean, reopen.RecoveryPoint = false, 0

	dry := filepath.Join(root, "dry")
	copyDir(t, tmpl, dry)
	l, err := Open(faultfs.New(), dry, opts, st)
	if err != nil {
		t.Fatal(err)
	}
	before := recordsOf(readBatches(t, l))
	if _, err := l.Compact(context.Background()); err != nil {
		t.Fatal(err)
	}
	after := recordsOf(readBatches(t, l))
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	for step := swapStaged; step <= swapInstalled; step++ {
		// The directory a power cut after this step leaves.
		cut := filepath.Join(root, "cut-"+step.String())
		cutSwapAfter(t, tmpl, cut, opts, st, step)
		if len(leftovers(t, cut)) == 0 {
			t.Fatalf("the cut after %s left nothing for Open to complete", step)
		}

		// How many file operations completing it takes.
		probe := filepath.Join(root, "probe-"+step.String())
		copyDir(t, cut, probe)
		fsys := faultfs.New()
		var (
			mu  sync.Mutex
			ops int
		)
		fsys.SetHook(func(faultfs.Op) error { mu.Lock(); ops++; mu.Unlock(); return nil })
		l, err := Open(fsys, probe, opts, reopen)
		if err != nil {
			t.Fatal(err)
		}
		fsys.SetHook(nil)
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		if ops < 3 {
			t.Fatalf("completing the swap cut after %s took %d file operations: nothing to cut", step, ops)
		}
		t.Logf("completing the swap cut after %s: %d file operations", step, ops)

		for n := 1; n <= ops; n++ {
			for variant := range 3 {
				name := fmt.Sprintf("%s/op-%d/reordered-%d", step, n, variant)
				rng := newRand(seed + uint64(int(step)*100000+n*3+variant))
				if !t.Run(name, func(t *testing.T) {
					dir := filepath.Join(root, fmt.Sprintf("%s-%d-%d", step, n, variant))
					copyDir(t, cut, dir)
					fsys := faultfs.New()
					c := newCutter(fsys, n, reorderedCut(fsys, dir, rng, variant > 0))
					l, oerr := Open(fsys, dir, opts, reopen)
					if !c.died() {
						t.Fatalf("Open made fewer than %d file operations", n)
					}
					c.check(t)
					if oerr == nil {
						// The cut fell on an operation whose failure Open
						// does not need (a best-effort one): the process
						// is dead all the same.
						l.kill()
					}
					fsys.SetHook(nil)
					checkReopened(t, fsys, dir, opts, st, m, fmt.Sprintf("a cut at operation %d of completing the swap cut after %s", n, step), before, after, after)
				}) {
					t.Fatalf("replay with -seed=%d -run 'TestPowerCutCompletingSwapAtOpen/%s'", seed, name)
				}
			}
		}
	}
}

// cutSwapAfter copies the template to dir and runs its compaction pass
// until the swap step, where the power is cut: dir then holds what a real
// cut there leaves on disk.
func cutSwapAfter(t *testing.T, tmpl, dir string, opts *Options, st State, step swapStep) {
	t.Helper()
	copyDir(t, tmpl, dir)
	fsys := faultfs.New()
	c := newCutter(fsys, 0, nil)
	o := *opts
	o.afterSwapStep = func(s swapStep) error {
		if s == step {
			c.now()
			return errDeadProcess
		}
		return nil
	}
	l, err := Open(fsys, dir, &o, st)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Compact(context.Background()); !errors.Is(err, errDeadProcess) {
		t.Fatalf("the cut after %s: Compact returned %v", step, err)
	}
	c.check(t)
	l.kill()
	fsys.SetHook(nil)
}

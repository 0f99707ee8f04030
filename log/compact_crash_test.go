package log

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/foliolog/folio/vfs/faultfs"
)

// errDeadProcess fails every operation of a process after its power cut or
// crash: the dead process does nothing more to the disk.
var errDeadProcess = errors.New("test: the process is dead")

// compactCrashTemplate builds a log on the real file system whose next
// compaction pass both merges cleaned segments and cleans dirty ones (so
// several groups, tombstones and producers), and returns its directory,
// options, clean-shutdown state and model.
func compactCrashTemplate(t *testing.T, seed uint64) (string, *Options, State, *kvModel) {
	rng := newRand(seed)
	dir := filepath.Join(t.TempDir(), "template")
	opts := compactOpts(t, 700, nil)
	opts.IndexIntervalBytes = 100
	l, err := Open(nil, dir, opts, State{})
	if err != nil {
		t.Fatal(err)
	}
	m := newKVModel()
	seq := int32(0)
	write := func(n, keys int, tag string) {
		for range n {
			recs := randomKV(rng, 1+rng.IntN(4), keys, 0.2, tag)
			pr := noProducer
			if rng.IntN(4) == 0 {
				pr = prodInfo{pid: 7, epoch: 1, seq: seq}
				seq += int32(len(recs))
			}
			m.appendKV(t, l, recs, 1_700_000_000_000, pr, testCodecs[rng.IntN(len(testCodecs))])
		}
	}
	// Six keys over at least four sealed segments clean down to segments
	// so small that two neighbours fit one (so the pass under test merges),
	// whatever the seed.
	write(24, 6, "a")
	if _, err := l.Compact(context.Background()); err != nil {
		t.Fatal(err)
	}
	write(18, 12, "b")
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return dir, opts, l.Checkpoint(), m
}

// TestCompactCrashAtEveryStep cuts the power (or crashes the process) at
// every file operation of a compaction pass, in turn, and reopens from the
// checkpoint taken before the pass, unclean, scanning every segment. The
// log must read exactly as before the pass or as after it, never a mix,
// hold every key's latest record, have no transient files left, and clean
// to the after state with one more Compact.
func TestCompactCrashAtEveryStep(t *testing.T) {
	seed := testSeed(t)
	tmpl, opts, st, m := compactCrashTemplate(t, seed)
	// Each step copies the template and recreates files: on tmpfs where
	// there is one, the disk's metadata journal would dominate.
	root := metadataTempDir(t)
	ctx := context.Background()

	// Dry run: the states before and after, and how many operations the
	// pass makes.
	dry := filepath.Join(root, "dry")
	copyDir(t, tmpl, dry)
	fsys := faultfs.New()
	l, err := Open(fsys, dry, opts, st)
	if err != nil {
		t.Fatal(err)
	}
	before := recordsOf(readBatches(t, l))
	var (
		mu    sync.Mutex
		ops   int
		kinds = map[faultfs.OpKind]int{}
	)
	fsys.SetHook(func(op faultfs.Op) error {
		mu.Lock()
		ops++
		kinds[op.Kind]++
		mu.Unlock()
		return nil
	})
	res, err := l.Compact(ctx)
	fsys.SetHook(nil)
	if err != nil {
		t.Fatal(err)
	}
	after := recordsOf(readBatches(t, l))
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if n := fsys.OpenHandles(); n != 0 {
		t.Fatalf("%d files left open after the pass and Close", n)
	}
	if res.SegmentsWritten < 2 || res.SegmentsWritten >= res.SegmentsCleaned || slices.Equal(before, after) {
		t.Fatalf("the template's pass is not a good test: %+v", res)
	}
	t.Logf("the pass: %+v, %d file operations %v", res, ops, kinds)

	for _, crash := range []bool{false, true} {
		for n := 1; n <= ops; n++ {
			name := fmt.Sprintf("powercut-%d", n)
			if crash {
				name = fmt.Sprintf("crash-%d", n)
			}
			if !t.Run(name, func(t *testing.T) {
				compactCutAt(t, tmpl, filepath.Join(root, name), opts, st, m, n, crash, before, after)
			}) {
				t.Fatalf("replay with -seed=%d -run 'TestCompactCrashAtEveryStep/%s'", seed, name)
			}
		}
	}
}

func compactCutAt(t *testing.T, tmpl, dir string, opts *Options, st State, m *kvModel, n int, crash bool, before, after []rrec) {
	copyDir(t, tmpl, dir)
	fsys := faultfs.New()
	l, err := Open(fsys, dir, opts, st)
	if err != nil {
		t.Fatal(err)
	}
	var cut func() error
	if crash {
		cut = crashCut(fsys)
	}
	c := newCutter(fsys, n, cut)
	_, cerr := l.Compact(context.Background())
	if wasCut := c.died(); !wasCut || cerr == nil {
		t.Fatalf("the cut at operation %d: cut %v, Compact returned %v", n, wasCut, cerr)
	}
	c.check(t)
	l.kill()
	fsys.SetHook(nil)
	checkReopened(t, fsys, dir, opts, st, m, fmt.Sprintf("the cut at operation %d", n), before, after, nil)
}

// checkReopened reopens a log a compaction pass was cut short in, unclean,
// from the checkpoint taken before the pass, and checks that it holds
// exactly the records before the pass or those after it (want, if not nil,
// says which), that no transient file is left, and that one more Compact
// brings it to the after state.
func checkReopened(t *testing.T, fsys *faultfs.FS, dir string, opts *Options, st State, m *kvModel, what string, before, after, want []rrec) {
	t.Helper()
	reopen := st
	reopen.Clean, reopen.RecoveryPoint = false, 0
	l, err := Open(fsys, dir, opts, reopen)
	if err != nil {
		t.Fatalf("reopen after %s: %v", what, err)
	}
	defer l.Close()
	got := recordsOf(readBatches(t, l))
	isBefore, isAfter := slices.Equal(got, before), slices.Equal(got, after)
	if !isBefore && !isAfter {
		t.Fatalf("after %s the log holds %d records, neither the %d before nor the %d after the pass\n got %v", what, len(got), len(before), len(after), got)
	}
	if want != nil && !slices.Equal(got, want) {
		t.Fatalf("after %s the log is as %s the pass", what, map[bool]string{true: "before", false: "after"}[isBefore])
	}
	if left := leftovers(t, dir); len(left) != 0 {
		t.Fatalf("transient files left after reopening: %v", left)
	}
	if d := l.Recovery().Damage; len(d) != 0 {
		t.Fatalf("after %s: a cut swap reported as damage: %v", what, d)
	}
	m.checkCompacted(t, l, 0, false)
	if _, err := l.Compact(context.Background()); err != nil {
		t.Fatalf("compaction after recovery: %v", err)
	}
	if got := recordsOf(readBatches(t, l)); !slices.Equal(got, after) {
		t.Fatalf("compaction after recovery (the log was %s): %d records, want the %d after", map[bool]string{true: "before", false: "after"}[isBefore], len(got), len(after))
	}
}

// TestCompactCrashBetweenSwapSteps cuts the power (or crashes the process)
// at each boundary between the named steps of the swap protocol (pass.swap)
// and reopens: before stageSwaps the log must open as before the pass, at
// every later boundary as after it, with every record either way.
func TestCompactCrashBetweenSwapSteps(t *testing.T) {
	seed := testSeed(t)
	tmpl, opts, st, m := compactCrashTemplate(t, seed)
	root := metadataTempDir(t)

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

	for _, crash := range []bool{false, true} {
		for step := swapPinned; step <= swapInstalled; step++ {
			kind := "powercut"
			if crash {
				kind = "crash"
			}
			name := kind + "-" + step.String()
			want := after
			if step < swapStaged {
				want = before
			}
			if !t.Run(name, func(t *testing.T) {
				dir := filepath.Join(root, name)
				copyDir(t, tmpl, dir)
				fsys := faultfs.New()
				var cut func() error
				if crash {
					cut = crashCut(fsys)
				}
				c := newCutter(fsys, 0, cut)
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
				_, cerr := l.Compact(context.Background())
				if wasCut := c.died(); !wasCut || !errors.Is(cerr, errDeadProcess) {
					t.Fatalf("the cut after step %s: cut %v, Compact returned %v", step, wasCut, cerr)
				}
				c.check(t)
				l.kill()
				fsys.SetHook(nil)
				checkReopened(t, fsys, dir, opts, st, m, "the cut after step "+step.String(), before, after, want)
			}) {
				t.Fatalf("replay with -seed=%d -run 'TestCompactCrashBetweenSwapSteps/%s'", seed, name)
			}
		}
	}
}

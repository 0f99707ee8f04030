package log

import (
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/foliolog/folio/vfs/faultfs"
)

// truncCutOpts is the log of the truncation power-cut tests: every append
// acknowledged durably, a few records a segment.
var truncCutOpts = Options{SegmentBytes: 2048, FlushPolicy: FlushSync, noBackground: true}

// truncCutLog builds the truncation tests' log on fsys in dir and holds a
// view of the segment TruncateTo(70) cuts, so that the truncation takes
// the copy path (the kept prefix copied to .log.truncate, fsynced, renamed
// over). It returns the log, the records, the checkpoint before the
// truncation and a release for the view.
func truncCutLog(t *testing.T, fsys *faultfs.FS, dir string) (*Log, []rec, State, func()) {
	t.Helper()
	o := truncCutOpts
	l, err := Open(fsys, dir, &o, State{})
	if err != nil {
		t.Fatal(err)
	}
	want := appendN(t, l, "p", 40, 4, 60)
	st := l.Checkpoint()
	v, err := l.Read(70, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	return l, want, st, v.Release
}

// TestPowerCutTruncateCopyPath cuts the power at every file operation of a
// truncation that must copy its segment's kept prefix because a reader
// holds a view of it, and once more right after TruncateTo returns. The
// log reopened from the checkpoint before the truncation must hold a
// prefix of what was written, at its offsets, never shorter than what the
// truncation keeps (the records below it were acknowledged durable); once
// TruncateTo has returned, exactly that.
//
// It guards the fsync of the .log.truncate copy (without it the rename
// makes an empty or short file the segment, losing kept records) and the
// directory sync after the rename (without it a cut brings back the
// removed records under the same offsets).
func TestPowerCutTruncateCopyPath(t *testing.T) {
	const keep = 68 // the batch holding offset 70 starts at 68
	root := t.TempDir()

	// Dry run: how many file operations the truncation makes, and that
	// it takes the copy path.
	fsys := faultfs.New()
	l, want, _, release := truncCutLog(t, fsys, filepath.Join(root, "dry"))
	var (
		mu     sync.Mutex
		ops    int
		copied bool
	)
	fsys.SetHook(func(op faultfs.Op) error {
		mu.Lock()
		defer mu.Unlock()
		ops++
		copied = copied || strings.HasSuffix(op.Path, ".truncate")
		return nil
	})
	if err := l.TruncateTo(70); err != nil {
		t.Fatal(err)
	}
	fsys.SetHook(nil)
	release()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if !copied {
		t.Fatal("the truncation did not take the copy path: nothing under test")
	}
	t.Logf("the truncation: %d file operations", ops)

	for n := 1; n <= ops+1; n++ {
		t.Run(fmt.Sprintf("op-%d", n), func(t *testing.T) {
			fsys := faultfs.New()
			dir := filepath.Join(root, fmt.Sprint(n))
			l, _, st, release := truncCutLog(t, fsys, dir)
			c := newCutter(fsys, n, nil)
			terr := l.TruncateTo(70)
			// Past the last operation: cut right after the return.
			returned := c.now()
			if returned && terr != nil {
				t.Fatalf("TruncateTo: %v", terr)
			}
			c.check(t)
			if !returned && terr == nil {
				t.Fatalf("TruncateTo returned nil though the power was cut at its operation %d", n)
			}
			release()
			l.kill()
			fsys.SetHook(nil)

			o := truncCutOpts
			got := readAll(t, openT(t, fsys, dir, &o, st), 0)
			if len(got) < keep || len(got) > len(want) {
				t.Fatalf("after a cut at operation %d the log holds %d records; the truncation keeps %d of %d", n, len(got), keep, len(want))
			}
			sameRecs(t, got, want[:len(got)])
			if returned && len(got) != keep {
				t.Fatalf("after TruncateTo returned, a cut brought back %d removed records", len(got)-keep)
			}
		})
	}
}

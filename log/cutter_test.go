package log

import (
	"sync"
	"testing"

	"github.com/foliolog/folio/vfs/faultfs"
)

// cutter is the dying process of a power-cut or crash test over a
// faultfs.FS: at its nth file operation (once its hook is installed), or
// when told, it runs its cut, and from then on every file operation fails
// with errDeadProcess, as nothing a dead process does reaches the disk.
type cutter struct {
	fsys *faultfs.FS
	n    int // the operation the hook cuts at; 0: only now cuts
	cut  func() error

	mu    sync.Mutex
	count int
	dead  bool
	err   error // the cut's own failure
}

// newCutter returns a cutter of fsys that cuts the power (or runs cut,
// when not nil) at its nth file operation, and installs its hook.
func newCutter(fsys *faultfs.FS, n int, cut func() error) *cutter {
	if cut == nil {
		cut = fsys.PowerCut
	}
	c := &cutter{fsys: fsys, n: n, cut: cut}
	fsys.SetHook(c.hook)
	return c
}

// crashCut is a cut that crashes the process (unsynced file bytes stay,
// as in the page cache) rather than cutting the power.
func crashCut(fsys *faultfs.FS) func() error {
	return func() error { fsys.Crash(); return nil }
}

func (c *cutter) hook(faultfs.Op) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dead {
		return errDeadProcess
	}
	if c.count++; c.count == c.n {
		c.dead = true
		c.err = c.cut()
	}
	return nil
}

// now cuts unless the process is dead already, and reports whether it was
// still alive: a test cuts right after the call it cuts into returned.
func (c *cutter) now() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dead {
		return false
	}
	c.dead = true
	c.err = c.cut()
	return true
}

// died reports whether the cut has come.
func (c *cutter) died() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.dead
}

// check fails t if the cut itself failed.
func (c *cutter) check(t *testing.T) {
	t.Helper()
	c.mu.Lock()
	err := c.err
	c.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
}

// reorderedCut is a power cut that first makes durable, when on, a random
// part of dir's unsynced directory changes, as a file system writing them
// out of order would before the cut.
func reorderedCut(fsys *faultfs.FS, dir string, rng interface{ IntN(int) int }, on bool) func() error {
	return func() error {
		if on {
			names, err := fsys.UnsyncedEntries(dir)
			if err != nil {
				return err
			}
			for _, name := range names {
				if rng.IntN(2) == 0 {
					if err := fsys.SyncEntry(dir, name); err != nil {
						return err
					}
				}
			}
		}
		return fsys.PowerCut()
	}
}

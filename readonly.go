package folio

import (
	"fmt"
	"os"

	"github.com/foliolog/folio/internal/vfs"
)

// readOnlyFS is the file layer of a read-only Broker: it passes reads
// through and refuses every change with ErrReadOnly. Whatever a lower layer
// would repair at open (a torn tail, an orphaned partition directory of a
// create in progress in the live writer) it cannot touch; such an open
// fails instead of damaging the directory a live Broker is writing.
type readOnlyFS struct {
	fs vfs.FS
}

const writeFlags = os.O_WRONLY | os.O_RDWR | os.O_CREATE | os.O_TRUNC | os.O_APPEND

func (r readOnlyFS) refuse(op, path string) error {
	return fmt.Errorf("%w: %s %s", ErrReadOnly, op, path)
}

func (r readOnlyFS) OpenFile(name string, flag int, perm os.FileMode) (vfs.File, error) {
	if flag&writeFlags != 0 {
		return nil, r.refuse("open for writing", name)
	}
	return r.fs.OpenFile(name, flag, perm)
}

func (r readOnlyFS) Rename(oldpath, newpath string) error { return r.refuse("rename", oldpath) }
func (r readOnlyFS) Remove(name string) error             { return r.refuse("remove", name) }
func (r readOnlyFS) SyncDir(dir string) error             { return r.refuse("sync", dir) }

// MkdirAll succeeds for a directory that exists, as os.MkdirAll does, so
// that openers which make sure of their directory still work.
func (r readOnlyFS) MkdirAll(path string, perm os.FileMode) error {
	if fi, err := r.fs.Stat(path); err == nil && fi.IsDir() {
		return nil
	}
	return r.refuse("mkdir", path)
}

func (r readOnlyFS) ReadDir(name string) ([]os.DirEntry, error) { return r.fs.ReadDir(name) }
func (r readOnlyFS) Stat(name string) (os.FileInfo, error)      { return r.fs.Stat(name) }

var _ vfs.FS = readOnlyFS{}

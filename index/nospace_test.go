package index

import (
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/foliolog/folio/vfs"
)

// faultyFS wraps the real file system and makes Allocate or Truncate of the
// files it opens fail on demand.
type faultyFS struct {
	vfs.FS
	allocErr    atomic.Pointer[error]
	truncateErr atomic.Pointer[error]
	allocCalls  atomic.Int64
}

func (f *faultyFS) OpenFile(name string, flag int, perm os.FileMode) (vfs.File, error) {
	file, err := f.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &faultyFile{File: file, fs: f}, nil
}

func (f *faultyFS) failAllocate(err error) { f.allocErr.Store(&err) }
func (f *faultyFS) failTruncate(err error) { f.truncateErr.Store(&err) }

type faultyFile struct {
	vfs.File
	fs *faultyFS
}

func (f *faultyFile) Allocate(off, n int64) error {
	f.fs.allocCalls.Add(1)
	if p := f.fs.allocErr.Load(); p != nil && *p != nil {
		return *p
	}
	return f.File.Allocate(off, n)
}

func (f *faultyFile) Truncate(size int64) error {
	if p := f.fs.truncateErr.Load(); p != nil && *p != nil {
		return *p
	}
	return f.File.Truncate(size)
}

// errENOSPC is what vfs returns for a full disk: ErrNoSpace and the errno.
var errENOSPC = fmt.Errorf("fallocate: %w", errors.Join(vfs.ErrNoSpace, syscall.ENOSPC))

// A full disk surfaces as ErrNoSpace from the Append that needs a new step;
// nothing is written into unallocated pages, lookups keep working, and
// appends resume once space returns.
func TestAppendNoSpace(t *testing.T) {
	fsys := &faultyFS{FS: vfs.Default}
	path := tempPath(t, "n.index")
	x, err := OpenOffset(fsys, path, 0, true, nil)
	mustNil(t, "OpenOffset", err)
	defer func() { mustNil(t, "Close", x.Close()) }()
	for i := range int64(AllocStepEntries) { // exactly fills the first step
		mustNil(t, "Append", x.Append(i, i*10))
	}
	fsys.failAllocate(errENOSPC)
	for range 3 {
		err := x.Append(AllocStepEntries, AllocStepEntries*10)
		if !errors.Is(err, ErrNoSpace) || !errors.Is(err, vfs.ErrNoSpace) || !errors.Is(err, syscall.ENOSPC) {
			t.Fatalf("Append on a full disk = %v, want ErrNoSpace (and the vfs/errno causes)", err)
		}
	}
	if x.Entries() != AllocStepEntries {
		t.Fatalf("Entries = %d after failed appends", x.Entries())
	}
	if fi, err := os.Stat(path); err != nil || fi.Size() != AllocStepEntries*OffsetEntrySize {
		t.Fatalf("file grew without allocation: %v %v", fi.Size(), err)
	}
	if got := x.Lookup(1 << 40); got != (OffsetEntry{AllocStepEntries - 1, (AllocStepEntries - 1) * 10}) {
		t.Fatalf("Lookup after ENOSPC = %+v", got)
	}
	fsys.failAllocate(nil)
	mustNil(t, "Append after space returned", x.Append(AllocStepEntries, AllocStepEntries*10))
	if got, _ := x.LastEntry(); got != (OffsetEntry{AllocStepEntries, AllocStepEntries * 10}) {
		t.Fatalf("LastEntry = %+v", got)
	}
	if calls := fsys.allocCalls.Load(); calls != 5 {
		t.Errorf("Allocate called %d times, want 5 (one step, three failures, one retry)", calls)
	}
}

// Other allocation failures are returned as they are, not as ErrNoSpace.
func TestAppendAllocateError(t *testing.T) {
	fsys := &faultyFS{FS: vfs.Default}
	x, err := OpenTime(fsys, tempPath(t, "n.timeindex"), 0, true, nil)
	mustNil(t, "OpenTime", err)
	defer func() { mustNil(t, "Close", x.Close()) }()
	fsys.failAllocate(syscall.EIO)
	err = x.Append(5, 0)
	if !errors.Is(err, syscall.EIO) || errors.Is(err, ErrNoSpace) {
		t.Fatalf("Append = %v, want EIO and not ErrNoSpace", err)
	}
	if x.Entries() != 0 {
		t.Fatal("failed Append added an entry")
	}
}

// A Seal whose trim fails reports it; the index is read-only and still
// answers lookups, and its untrimmed file is caught at the next open.
func TestSealTrimFailure(t *testing.T) {
	fsys := &faultyFS{FS: vfs.Default}
	path := tempPath(t, "n.index")
	x, err := OpenOffset(fsys, path, 0, true, nil)
	mustNil(t, "OpenOffset", err)
	for i := range int64(10) {
		mustNil(t, "Append", x.Append(i+1, i*10))
	}
	fsys.failTruncate(syscall.EIO)
	if err := x.Seal(); !errors.Is(err, syscall.EIO) {
		t.Fatalf("Seal = %v, want EIO", err)
	}
	if x.Writable() {
		t.Fatal("index still writable after a failed Seal")
	}
	if got := x.Lookup(5); got != (OffsetEntry{5, 40}) {
		t.Fatalf("Lookup after failed Seal = %+v", got)
	}
	mustNil(t, "Close", x.Close())
	if _, err := OpenOffset(nil, path, 0, false, nil); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("open of the untrimmed file = %v, want ErrCorrupt", err)
	}
}

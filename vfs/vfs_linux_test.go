package vfs_test

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/foliolog/folio/vfs"
)

// On Linux Allocate must reserve blocks, not just set the size: a
// truncate-extended file is sparse, and writing into its hole through a
// mapping on a full disk is a SIGBUS.
func TestAllocateReservesBlocks(t *testing.T) {
	implementations(t, func(t *testing.T, fsys vfs.FS) {
		name := filepath.Join(t.TempDir(), "idx")
		f, err := fsys.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		const size = 1 << 20
		// The contrast: Truncate leaves a hole.
		if err := f.Truncate(size); err != nil {
			t.Fatal(err)
		}
		if b := blocks(t, f); b*512 >= size {
			t.Skipf("this file system allocates on truncate (%d blocks); nothing to compare", b)
		}
		if err := f.Truncate(0); err != nil {
			t.Fatal(err)
		}
		if err := f.Allocate(0, size); err != nil {
			t.Fatal(err)
		}
		if b := blocks(t, f); b*512 < size {
			t.Fatalf("after Allocate(0, %d): %d 512-byte blocks, want >= %d", size, b, size/512)
		}
	})
}

func blocks(t *testing.T, f vfs.File) int64 {
	t.Helper()
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		t.Fatalf("Stat().Sys() is %T", fi.Sys())
	}
	return st.Blocks
}

// /dev/full fails every write with ENOSPC: the real errno must come back
// as vfs.ErrNoSpace.
func TestOSWriteNoSpace(t *testing.T) {
	f, err := vfs.Default.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Skipf("no /dev/full: %v", err)
	}
	defer f.Close()
	_, err = f.Write([]byte("x"))
	if !errors.Is(err, vfs.ErrNoSpace) || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("write to /dev/full = %v, want vfs.ErrNoSpace and ENOSPC", err)
	}
	_, err = f.WriteAt([]byte("x"), 0)
	if err != nil && !errors.Is(err, vfs.ErrNoSpace) {
		t.Fatalf("WriteAt to /dev/full = %v", err)
	}
}

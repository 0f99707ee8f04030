package vfs_test

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/foliolog/folio/vfs"
	"github.com/foliolog/folio/vfs/faultfs"
)

// vfs.WriteFileSynced leaves the bytes durable (synced) but the directory entry
// not yet: the caller's rename and SyncDir make it so. A failed sync leaves
// no file behind.
func TestWriteFileSynced(t *testing.T) {
	dir := t.TempDir()
	fs := faultfs.New()
	p := filepath.Join(dir, "meta.tmp")
	if err := vfs.WriteFileSynced(fs, p, []byte("payload")); err != nil {
		t.Fatal(err)
	}
	if n, err := fs.Unsynced(p); err != nil || n != 0 {
		t.Fatalf("unsynced bytes after WriteFileSynced: %d, %v", n, err)
	}
	if err := fs.SyncDir(dir); err != nil {
		t.Fatal(err)
	}
	if got, ok := fs.Durable(p); !ok || string(got) != "payload" {
		t.Fatalf("durable content %q, %v", got, ok)
	}

	fs.SetHook(faultfs.FailNth(faultfs.OpSync, 1, syscall.EIO))
	q := filepath.Join(dir, "other.tmp")
	if err := vfs.WriteFileSynced(fs, q, []byte("x")); !errors.Is(err, syscall.EIO) {
		t.Fatalf("WriteFileSynced with a failing sync: %v, want EIO", err)
	}
	if _, err := os.Stat(q); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a failed vfs.WriteFileSynced left %s behind: %v", q, err)
	}
}

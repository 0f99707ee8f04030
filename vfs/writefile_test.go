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

// TestReplaceFileAgainstPowerCut cuts the power at every file operation of
// ReplaceFile over an existing file, after the file system has written a
// random part of the directory's unsynced changes ahead of the others (a
// file system may write a rename before the data of the file renamed,
// unless that file was fsynced first): the file always reads back as the
// old content or the new one, whole, and the new one once ReplaceFile
// returned.
func TestReplaceFileAgainstPowerCut(t *testing.T) {
	old, new := []byte("the old content"), []byte("the new content, longer")
	for n := 1; ; n++ {
		for variant := range 4 {
			dir := t.TempDir()
			fs := faultfs.New()
			p, tmp := filepath.Join(dir, "meta"), filepath.Join(dir, "meta.tmp")
			if err := vfs.ReplaceFile(fs, tmp, p, old); err != nil {
				t.Fatal(err)
			}
			ops, cut := 0, false
			fs.SetHook(func(faultfs.Op) error {
				if ops++; ops == n {
					cut = true
					return errCut
				}
				if cut {
					return errCut
				}
				return nil
			})
			err := vfs.ReplaceFile(fs, tmp, p, new)
			fs.SetHook(nil)
			if !cut && err != nil {
				t.Fatal(err)
			}
			if variant > 0 {
				names, err := fs.UnsyncedEntries(dir)
				if err != nil {
					t.Fatal(err)
				}
				for i, name := range names {
					if (i+variant)%2 == 0 {
						if err := fs.SyncEntry(dir, name); err != nil {
							t.Fatal(err)
						}
					}
				}
			}
			if err := fs.PowerCut(); err != nil {
				t.Fatal(err)
			}
			got, rerr := os.ReadFile(p)
			switch {
			case rerr != nil:
				t.Fatalf("cut at operation %d (variant %d): %v", n, variant, rerr)
			case !cut && string(got) != string(new):
				t.Fatalf("cut after ReplaceFile returned (variant %d): %q, want the new content", variant, got)
			case string(got) != string(old) && string(got) != string(new):
				t.Fatalf("cut at operation %d (variant %d): %q, neither the old nor the new content", n, variant, got)
			}
			if !cut {
				if n < 3 {
					t.Fatalf("ReplaceFile made %d file operations, want at least a write, a rename and a directory sync", n-1)
				}
				return
			}
		}
	}
}

var errCut = errors.New("test: the power is off")

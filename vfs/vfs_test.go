package vfs_test

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/foliolog/folio/vfs"
	"github.com/foliolog/folio/vfs/faultfs"
)

// implementations runs a test against both vfs.FS implementations: the faultfs.FS
// must behave like the OS when no fault is injected.
func implementations(t *testing.T, f func(t *testing.T, fsys vfs.FS)) {
	t.Run("os", func(t *testing.T) { f(t, vfs.Default) })
	t.Run("fault", func(t *testing.T) { f(t, faultfs.New()) })
}

func mustWrite(t *testing.T, f vfs.File, p string) {
	t.Helper()
	if n, err := f.Write([]byte(p)); err != nil || n != len(p) {
		t.Fatalf("write %q: n=%d err=%v", p, n, err)
	}
}

func TestFileBasics(t *testing.T) {
	implementations(t, func(t *testing.T, fsys vfs.FS) {
		dir := t.TempDir()
		name := filepath.Join(dir, "sub", "f")
		if err := fsys.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			t.Fatal(err)
		}
		f, err := fsys.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		if f.Name() != name {
			t.Errorf("Name() = %q, want %q", f.Name(), name)
		}
		if f.OS() == nil {
			t.Fatal("OS() is nil")
		}
		mustWrite(t, f, "hello ")
		mustWrite(t, f, "world")
		if _, err := f.WriteAt([]byte("W"), 6); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 11)
		if _, err := f.ReadAt(buf, 0); err != nil {
			t.Fatal(err)
		}
		if string(buf) != "hello World" {
			t.Errorf("ReadAt = %q", buf)
		}
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
		if err := f.Truncate(5); err != nil {
			t.Fatal(err)
		}
		fi, err := f.Stat()
		if err != nil || fi.Size() != 5 {
			t.Fatalf("Stat after Truncate(5): %v, %v", fi, err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); !errors.Is(err, os.ErrClosed) {
			t.Errorf("second Close = %v, want os.ErrClosed", err)
		}

		// Read at the file offset, through a second open.
		g, err := fsys.OpenFile(name, os.O_RDONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		all, err := io.ReadAll(g)
		if err != nil || string(all) != "hello" {
			t.Errorf("ReadAll = %q, %v", all, err)
		}
		g.Close()

		// O_APPEND appends whatever the offset.
		a, err := fsys.OpenFile(name, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		mustWrite(t, a, "!")
		a.Close()
		if got, _ := os.ReadFile(name); string(got) != "hello!" {
			t.Errorf("after append: %q", got)
		}

		if err := fsys.Rename(name, name+".2"); err != nil {
			t.Fatal(err)
		}
		if _, err := fsys.Stat(name); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("Stat of the old name: %v", err)
		}
		entries, err := fsys.ReadDir(filepath.Dir(name))
		if err != nil || len(entries) != 1 || entries[0].Name() != "f.2" {
			t.Errorf("ReadDir = %v, %v", entries, err)
		}
		if err := fsys.SyncDir(filepath.Dir(name)); err != nil {
			t.Fatal(err)
		}
		if err := fsys.Remove(name + ".2"); err != nil {
			t.Fatal(err)
		}
		if err := fsys.Remove(name + ".2"); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("second Remove = %v", err)
		}
		if _, err := fsys.OpenFile(filepath.Join(dir, "missing", "x"), os.O_RDWR|os.O_CREATE, 0o644); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("create in a missing directory: %v", err)
		}
		if err := fsys.SyncDir(filepath.Join(dir, "missing")); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("SyncDir of a missing directory: %v", err)
		}
	})
}

func TestAllocate(t *testing.T) {
	implementations(t, func(t *testing.T, fsys vfs.FS) {
		name := filepath.Join(t.TempDir(), "idx")
		f, err := fsys.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		mustWrite(t, f, "abc")
		if err := f.Allocate(0, 1<<20); err != nil {
			t.Fatal(err)
		}
		fi, err := f.Stat()
		if err != nil || fi.Size() != 1<<20 {
			t.Fatalf("size after Allocate(0, 1MiB) = %v, %v", fi.Size(), err)
		}
		// Allocate never shrinks and keeps the data.
		if err := f.Allocate(0, 10); err != nil {
			t.Fatal(err)
		}
		head := make([]byte, 4)
		if _, err := f.ReadAt(head, 0); err != nil || !bytes.Equal(head, []byte("abc\x00")) {
			t.Errorf("head after Allocate = %q, %v", head, err)
		}
		if fi, _ := f.Stat(); fi.Size() != 1<<20 {
			t.Errorf("Allocate inside the file changed its size to %d", fi.Size())
		}
		if err := f.Allocate(1<<20, 4096); err != nil {
			t.Fatal(err)
		}
		if fi, _ := f.Stat(); fi.Size() != 1<<20+4096 {
			t.Errorf("size after growing Allocate = %d", fi.Size())
		}
		if err := f.Allocate(5, 0); err != nil {
			t.Errorf("Allocate(n=0) = %v", err)
		}
		for _, c := range []struct{ off, n int64 }{{-1, 10}, {0, -1}, {1 << 62, 1 << 62}} {
			if err := f.Allocate(c.off, c.n); !errors.Is(err, vfs.ErrInvalidRange) {
				t.Errorf("Allocate(%d, %d) = %v, want vfs.ErrInvalidRange", c.off, c.n, err)
			}
		}
	})
}

func TestMapNoSpace(t *testing.T) {
	eio := &os.PathError{Op: "write", Path: "/x", Err: syscall.EIO}
	cases := []struct {
		name    string
		in      error
		noSpace bool
	}{
		{"nil", nil, false},
		{"ENOSPC", syscall.ENOSPC, true},
		{"EDQUOT", syscall.EDQUOT, true},
		{"wrapped ENOSPC", &os.PathError{Op: "write", Path: "/x", Err: syscall.ENOSPC}, true},
		{"short write of ENOSPC", &faultfs.ShortWriteError{N: 3, Err: syscall.ENOSPC}, true},
		{"EIO", eio, false},
		{"already mapped", vfs.MarkNoSpace(syscall.ENOSPC), true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := vfs.MarkNoSpace(c.in)
			if errors.Is(got, vfs.ErrNoSpace) != c.noSpace {
				t.Fatalf("MarkNoSpace(%v) = %v: vfs.ErrNoSpace %v, want %v", c.in, got, !c.noSpace, c.noSpace)
			}
			if c.in == nil {
				if got != nil {
					t.Fatalf("MarkNoSpace(nil) = %v", got)
				}
				return
			}
			if !errors.Is(got, c.in) {
				t.Errorf("mapNoSpace lost the original error: %v", got)
			}
			if got.Error() != c.in.Error() {
				t.Errorf("text changed: %q -> %q", c.in.Error(), got.Error())
			}
			var pe *os.PathError
			if errors.As(c.in, &pe) && !errors.As(got, &pe) {
				t.Errorf("the *os.PathError is no longer reachable")
			}
		})
	}
	if vfs.MarkNoSpace(eio) != error(eio) {
		t.Error("an unrelated error was wrapped")
	}
	// A doubly mapped error is not wrapped twice.
	once := vfs.MarkNoSpace(syscall.ENOSPC)
	if vfs.MarkNoSpace(once) != once {
		t.Error("mapNoSpace wrapped an vfs.ErrNoSpace error again")
	}
}

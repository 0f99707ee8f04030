package faultfs

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/edsrzf/mmap-go"
	"github.com/foliolog/folio/vfs"
)

// create makes a file through fsys with the given content, synced or not.
func create(t *testing.T, fsys vfs.FS, name, content string, sync bool) vfs.File {
	t.Helper()
	f, err := fsys.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	mustWrite(t, f, content)
	if sync {
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

func syncDirT(t *testing.T, fsys vfs.FS, dir string) {
	t.Helper()
	if err := fsys.SyncDir(dir); err != nil {
		t.Fatal(err)
	}
}

func powerCut(t *testing.T, fs *FS) {
	t.Helper()
	if err := fs.PowerCut(); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, name string) (string, bool) {
	t.Helper()
	data, err := os.ReadFile(name)
	if errors.Is(err, os.ErrNotExist) {
		return "", false
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(data), true
}

func wantFile(t *testing.T, name, want string) {
	t.Helper()
	got, ok := readFile(t, name)
	if !ok {
		t.Fatalf("%s does not exist, want %q", filepath.Base(name), want)
	}
	if got != want {
		t.Fatalf("%s = %q, want %q", filepath.Base(name), got, want)
	}
}

func wantNoFile(t *testing.T, name string) {
	t.Helper()
	if got, ok := readFile(t, name); ok {
		t.Fatalf("%s exists with %q, want it gone", filepath.Base(name), got)
	}
}

func TestPowerCutDropsUnsyncedBytes(t *testing.T) {
	fs := New()
	dir := t.TempDir()
	name := filepath.Join(dir, "00000000000000000000.log")
	f := create(t, fs, name, strings.Repeat("a", 100), true)
	syncDirT(t, fs, dir)
	mustWrite(t, f, strings.Repeat("b", 50))
	if _, err := f.WriteAt([]byte("XY"), 10); err != nil {
		t.Fatal(err)
	}

	if n, err := fs.Unsynced(name); err != nil || n != 52 {
		t.Fatalf("Unsynced = %d, %v; want 52 (50 appended, 2 overwritten)", n, err)
	}
	if data, ok := fs.Durable(name); !ok || string(data) != strings.Repeat("a", 100) {
		t.Fatalf("Durable = %q, %v", data, ok)
	}
	powerCut(t, fs)
	wantFile(t, name, strings.Repeat("a", 100))

	// Synced bytes survive; the next cut keeps them.
	g, err := fs.OpenFile(name, os.O_RDWR|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	mustWrite(t, g, "cc")
	if err := g.Sync(); err != nil {
		t.Fatal(err)
	}
	if n, _ := fs.Unsynced(name); n != 0 {
		t.Fatalf("Unsynced after Sync = %d", n)
	}
	mustWrite(t, g, "dd")
	powerCut(t, fs)
	wantFile(t, name, strings.Repeat("a", 100)+"cc")
}

func TestPowerCutUndoesTruncateAndAllocate(t *testing.T) {
	fs := New()
	dir := t.TempDir()
	name := filepath.Join(dir, "f")
	f := create(t, fs, name, "0123456789", true)
	syncDirT(t, fs, dir)
	if err := f.Truncate(3); err != nil {
		t.Fatal(err)
	}
	powerCut(t, fs)
	wantFile(t, name, "0123456789")

	f, err := fs.OpenFile(name, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Allocate(0, 4096); err != nil {
		t.Fatal(err)
	}
	if n, _ := fs.Unsynced(name); n != 4096-10 {
		t.Fatalf("Unsynced after Allocate = %d", n)
	}
	powerCut(t, fs)
	wantFile(t, name, "0123456789")
}

func TestCreatedFileNeedsSyncDir(t *testing.T) {
	fs := New()
	dir := t.TempDir()
	lost := filepath.Join(dir, "lost")
	kept := filepath.Join(dir, "kept")
	empty := filepath.Join(dir, "empty")

	create(t, fs, lost, "synced data", true)
	if _, ok := fs.Durable(lost); ok {
		t.Fatal("a file whose directory was never synced is reported durable")
	}
	powerCut(t, fs)
	wantNoFile(t, lost)

	create(t, fs, kept, "synced data", true)
	create(t, fs, empty, "never synced", false)
	syncDirT(t, fs, dir)
	if names, ok := fs.DurableNames(dir); !ok || !slices.Equal(names, []string{"empty", "kept"}) {
		t.Fatalf("DurableNames = %v, %v", names, ok)
	}
	powerCut(t, fs)
	wantFile(t, kept, "synced data")
	wantFile(t, empty, "") // the entry is durable, the bytes were not
}

func TestNewDirectoryNeedsParentSync(t *testing.T) {
	fs := New()
	root := t.TempDir()
	part := filepath.Join(root, "topic-0")
	if err := fs.MkdirAll(part, 0o755); err != nil {
		t.Fatal(err)
	}
	seg := filepath.Join(part, "seg")
	create(t, fs, seg, "data", true)
	syncDirT(t, fs, part) // the file is in the directory, but the directory is not in root
	if _, ok := fs.Durable(seg); ok {
		t.Fatal("a file in an unsynced new directory is reported durable")
	}
	powerCut(t, fs)
	if _, err := os.Stat(part); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the unsynced directory survived: %v", err)
	}

	if err := fs.MkdirAll(part, 0o755); err != nil {
		t.Fatal(err)
	}
	create(t, fs, seg, "data", true)
	syncDirT(t, fs, part)
	syncDirT(t, fs, root)
	powerCut(t, fs)
	wantFile(t, seg, "data")
}

func TestRenameWithoutSyncDirIsUndone(t *testing.T) {
	fs := New()
	dir := t.TempDir()
	meta := filepath.Join(dir, "meta")
	tmp := meta + ".tmp"
	create(t, fs, meta, "v1", true)
	syncDirT(t, fs, dir)

	// tmp + fsync + rename, but no fsync of the directory.
	create(t, fs, tmp, "v2", true)
	if err := fs.Rename(tmp, meta); err != nil {
		t.Fatal(err)
	}
	wantFile(t, meta, "v2")
	if data, ok := fs.Durable(meta); !ok || string(data) != "v1" {
		t.Fatalf("Durable(meta) = %q, %v; want v1", data, ok)
	}
	powerCut(t, fs)
	wantFile(t, meta, "v1")
	wantNoFile(t, tmp)

	// A plain rename, undone: the old name comes back with its content.
	if err := fs.Rename(meta, filepath.Join(dir, "other")); err != nil {
		t.Fatal(err)
	}
	powerCut(t, fs)
	wantFile(t, meta, "v1")
	wantNoFile(t, filepath.Join(dir, "other"))

	// With the directory synced it sticks.
	create(t, fs, tmp, "v3", true)
	if err := fs.Rename(tmp, meta); err != nil {
		t.Fatal(err)
	}
	syncDirT(t, fs, dir)
	powerCut(t, fs)
	wantFile(t, meta, "v3")
	wantNoFile(t, tmp)
}

func TestRenameAcrossDirectoriesNeedsBothSynced(t *testing.T) {
	fs := New()
	root := t.TempDir()
	a, b := filepath.Join(root, "a"), filepath.Join(root, "b")
	for _, d := range []string{a, b} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	src, dst := filepath.Join(a, "f"), filepath.Join(b, "f")
	create(t, fs, src, "content", true)
	syncDirT(t, fs, a)
	if err := fs.Rename(src, dst); err != nil {
		t.Fatal(err)
	}
	// Only the destination is synced: the file is durable under both names
	// (the per-directory model allows it), and the cut leaves two files.
	syncDirT(t, fs, b)
	powerCut(t, fs)
	wantFile(t, src, "content")
	wantFile(t, dst, "content")
	// They are separate files now.
	f, err := fs.OpenFile(dst, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	mustWrite(t, f, "+")
	f.Close()
	wantFile(t, src, "content")
}

func TestRemoveWithoutSyncDirIsUndone(t *testing.T) {
	fs := New()
	dir := t.TempDir()
	name := filepath.Join(dir, "00000000000000000042.log")
	f := create(t, fs, name, "segment", true)
	f.Close()
	syncDirT(t, fs, dir)
	if err := fs.Remove(name); err != nil {
		t.Fatal(err)
	}
	if _, ok := fs.Durable(name); !ok {
		t.Fatal("a removal that was not synced is reported durable")
	}
	powerCut(t, fs)
	wantFile(t, name, "segment")

	if err := fs.Remove(name); err != nil {
		t.Fatal(err)
	}
	syncDirT(t, fs, dir)
	powerCut(t, fs)
	wantNoFile(t, name)
}

func TestDirectoryRenameIsUndone(t *testing.T) {
	fs := New()
	root := t.TempDir()
	part := filepath.Join(root, "orders-0")
	if err := fs.MkdirAll(part, 0o755); err != nil {
		t.Fatal(err)
	}
	create(t, fs, filepath.Join(part, "seg"), "batch", true)
	syncDirT(t, fs, part)
	syncDirT(t, fs, root)

	// Delete a partition the Kafka way: rename, then remove the contents.
	gone := part + ".abc-delete"
	if err := fs.Rename(part, gone); err != nil {
		t.Fatal(err)
	}
	if err := fs.Remove(filepath.Join(gone, "seg")); err != nil {
		t.Fatal(err)
	}
	if err := fs.Remove(gone); err != nil {
		t.Fatal(err)
	}
	powerCut(t, fs)
	wantFile(t, filepath.Join(part, "seg"), "batch")
	wantNoFile(t, gone)
}

func TestPreExistingFilesAreDurable(t *testing.T) {
	dir := t.TempDir()
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	old := filepath.Join(sub, "old")
	if err := os.WriteFile(old, []byte("before"), 0o644); err != nil {
		t.Fatal(err)
	}
	fs := New()
	if data, ok := fs.Durable(old); !ok || string(data) != "before" {
		t.Fatalf("Durable of an unseen file = %q, %v", data, ok)
	}
	f, err := fs.OpenFile(old, os.O_RDWR|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	mustWrite(t, f, "after")
	if n, _ := fs.Unsynced(old); n != 5 {
		t.Fatalf("Unsynced = %d, want 5", n)
	}
	// Renaming the untouched parent is undone too.
	if err := fs.Rename(sub, filepath.Join(dir, "moved")); err != nil {
		t.Fatal(err)
	}
	powerCut(t, fs)
	wantFile(t, old, "before")
	wantNoFile(t, filepath.Join(dir, "moved"))
}

func TestMmapWritesCountAtSync(t *testing.T) {
	fs := New()
	dir := t.TempDir()
	name := filepath.Join(dir, "00000000000000000000.index")
	f := create(t, fs, name, "", false)
	if err := f.Allocate(0, 4096); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	syncDirT(t, fs, dir)
	m, err := mmap.MapRegion(f.OS(), 4096, mmap.RDWR, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Unmap()
	copy(m[0:], "entry-1")
	if n, _ := fs.Unsynced(name); n != 7 {
		t.Fatalf("Unsynced after a mapped write = %d, want 7", n)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	copy(m[8:], "entry-2")
	if data, _ := fs.Durable(name); !bytes.HasPrefix(data, []byte("entry-1\x00\x00")) {
		t.Fatalf("Durable does not hold the synced mapped write: %q", data[:16])
	}
	powerCut(t, fs)
	data, _ := os.ReadFile(name)
	if len(data) != 4096 || string(data[:15]) != "entry-1\x00\x00\x00\x00\x00\x00\x00\x00" {
		t.Fatalf("after the cut: %d bytes, head %q", len(data), data[:15])
	}
}

func TestHookFailsNthWrite(t *testing.T) {
	fs := New()
	dir := t.TempDir()
	f := create(t, fs, filepath.Join(dir, "f"), "", false)
	var ops []Op
	var opsMu sync.Mutex
	record := func(op Op) error {
		opsMu.Lock()
		ops = append(ops, op)
		opsMu.Unlock()
		return nil
	}
	fs.SetHook(Chain(record, FailNth(OpWrite, 3, syscall.EIO)))
	for i := 1; i <= 4; i++ {
		_, err := f.WriteAt([]byte{byte('0' + i)}, int64(i-1))
		if (i == 3) != (err != nil) {
			t.Fatalf("write %d: %v", i, err)
		}
		if i == 3 && !errors.Is(err, syscall.EIO) {
			t.Fatalf("write 3 = %v, want EIO", err)
		}
	}
	// The failed write wrote nothing.
	wantFile(t, filepath.Join(dir, "f"), "12\x004")
	if len(ops) != 4 || ops[1].Kind != OpWrite || ops[1].Off != 1 || ops[1].Len != 1 || ops[1].Path != filepath.Join(dir, "f") {
		t.Fatalf("hook saw %v", ops)
	}
	fs.SetHook(nil)
	if _, err := f.Write([]byte("x")); err != nil {
		t.Fatalf("write after the hook was removed: %v", err)
	}
}

func TestHookFailsNthSync(t *testing.T) {
	fs := New()
	dir := t.TempDir()
	name := filepath.Join(dir, "f")
	f := create(t, fs, name, "a", true)
	syncDirT(t, fs, dir)
	fs.SetHook(FailNth(OpSync, 2, fmt.Errorf("disk: %w", syscall.EIO)))
	mustWrite(t, f, "b")
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, f, "c")
	err := f.Sync()
	if !errors.Is(err, syscall.EIO) {
		t.Fatalf("second Sync = %v, want EIO", err)
	}
	var pe *os.PathError
	if !errors.As(err, &pe) || pe.Path != name {
		t.Fatalf("injected error does not name the file: %v", err)
	}
	// The failed sync made nothing durable.
	if data, _ := fs.Durable(name); string(data) != "ab" {
		t.Fatalf("Durable = %q, want ab", data)
	}
	powerCut(t, fs)
	wantFile(t, name, "ab")
}

func TestHookFailsNamespaceOps(t *testing.T) {
	fs := New()
	dir := t.TempDir()
	name := filepath.Join(dir, "f")
	create(t, fs, name, "x", true).Close()
	fs.SetHook(func(op Op) error {
		if op.Kind == OpRename || op.Kind == OpRemove || op.Kind == OpMkdir || op.Kind == OpCreate {
			return syscall.ENOSPC
		}
		return nil
	})
	if err := fs.Rename(name, name+"2"); !errors.Is(err, vfs.ErrNoSpace) {
		t.Errorf("Rename = %v", err)
	}
	var le *os.LinkError
	if err := fs.Rename(name, name+"2"); !errors.As(err, &le) {
		t.Errorf("injected rename error is %T, want *os.LinkError", err)
	}
	if err := fs.Remove(name); !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("Remove = %v", err)
	}
	if err := fs.MkdirAll(filepath.Join(dir, "d"), 0o755); !errors.Is(err, vfs.ErrNoSpace) {
		t.Errorf("MkdirAll = %v", err)
	}
	if _, err := fs.OpenFile(filepath.Join(dir, "g"), os.O_CREATE|os.O_RDWR, 0o644); !errors.Is(err, vfs.ErrNoSpace) {
		t.Errorf("OpenFile = %v", err)
	}
	fs.SetHook(nil)
	wantFile(t, name, "x")
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("failed operations changed the directory: %v", entries)
	}
}

func TestFailFromNth(t *testing.T) {
	fs := New()
	f := create(t, fs, filepath.Join(t.TempDir(), "f"), "", false)
	fs.SetHook(FailFromNthWhere(func(op Op) bool { return op.Kind == OpWrite }, 2, syscall.ENOSPC))
	var errs []bool
	for range 4 {
		_, err := f.Write([]byte("x"))
		errs = append(errs, err != nil)
	}
	if !slices.Equal(errs, []bool{false, true, true, true}) {
		t.Fatalf("failures = %v", errs)
	}
}

func TestShortWriteTearsTheWrite(t *testing.T) {
	for _, n := range []int{0, 3, 7, 100} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			fs := New()
			name := filepath.Join(t.TempDir(), "f")
			f := create(t, fs, name, "head:", false)
			fs.SetHook(FailNth(OpWrite, 1, &ShortWriteError{N: n, Err: syscall.ENOSPC}))
			payload := []byte("0123456")
			got, err := f.Write(payload)
			want := min(n, len(payload))
			if got != want {
				t.Fatalf("Write returned n=%d, want %d", got, want)
			}
			if !errors.Is(err, ErrShortWrite) || !errors.Is(err, vfs.ErrNoSpace) {
				t.Fatalf("Write error = %v, want ErrShortWrite and vfs.ErrNoSpace", err)
			}
			wantFile(t, name, "head:"+string(payload[:want]))
		})
	}
}

func TestBlockedHookDoesNotBlockOtherFiles(t *testing.T) {
	fs := New()
	dir := t.TempDir()
	slow := create(t, fs, filepath.Join(dir, "slow"), "s", false)
	fast := create(t, fs, filepath.Join(dir, "fast"), "", false)

	entered, release := make(chan struct{}), make(chan struct{})
	fs.SetHook(func(op Op) error {
		if op.Kind == OpSync && filepath.Base(op.Path) == "slow" {
			close(entered)
			<-release
		}
		return nil
	})
	done := make(chan error)
	go func() { done <- slow.Sync() }()
	<-entered

	// Everything else goes on while the Sync is held.
	for i := range 20 {
		mustWrite(t, fast, fmt.Sprint(i))
		if err := fast.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	syncDirT(t, fs, dir)
	if err := fs.Rename(filepath.Join(dir, "fast"), filepath.Join(dir, "fast2")); err != nil {
		t.Fatal(err)
	}
	if _, ok := fs.Durable(filepath.Join(dir, "fast")); !ok {
		t.Fatal("Durable blocked or wrong while a hook is held")
	}
	if _, err := slow.ReadAt(make([]byte, 1), 0); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		t.Fatalf("the held Sync returned early: %v", err)
	default:
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if data, _ := fs.Durable(filepath.Join(dir, "slow")); string(data) != "s" {
		t.Fatalf("Durable(slow) = %q", data)
	}
}

func TestPowerCutDuringBlockedOperation(t *testing.T) {
	fs := New()
	dir := t.TempDir()
	name := filepath.Join(dir, "f")
	f := create(t, fs, name, "durable", true)
	syncDirT(t, fs, dir)
	mustWrite(t, f, "+lost")

	entered, release := make(chan struct{}, 2), make(chan struct{})
	fs.SetHook(func(op Op) error {
		if op.Kind == OpSync || op.Kind == OpRename {
			entered <- struct{}{}
			<-release
		}
		return nil
	})
	syncDone := make(chan error)
	renameDone := make(chan error)
	go func() { syncDone <- f.Sync() }()
	go func() { renameDone <- fs.Rename(name, name+".moved") }()
	<-entered
	<-entered
	// The cut does not wait for operations held in their hook.
	powerCut(t, fs)
	fs.SetHook(nil)
	close(release)
	if err := <-syncDone; !errors.Is(err, ErrPowerCut) {
		t.Fatalf("Sync that straddled the cut = %v, want ErrPowerCut", err)
	}
	if err := <-renameDone; !errors.Is(err, ErrPowerCut) {
		t.Fatalf("Rename that straddled the cut = %v, want ErrPowerCut", err)
	}
	wantFile(t, name, "durable")
	wantNoFile(t, name+".moved")
}

func TestDeadHandles(t *testing.T) {
	for _, c := range []struct {
		name   string
		kill   func(*FS) error
		reason error
		after  string // file content right after the kill
	}{
		{"power cut", (*FS).PowerCut, ErrPowerCut, "synced"},
		{"crash", func(fs *FS) error { fs.Crash(); return nil }, ErrCrashed, "synced+unsynced"},
	} {
		t.Run(c.name, func(t *testing.T) {
			fs := New()
			dir := t.TempDir()
			name := filepath.Join(dir, "f")
			f := create(t, fs, name, "synced", true)
			syncDirT(t, fs, dir)
			mustWrite(t, f, "+unsynced")
			calls := 0
			fs.SetHook(func(Op) error { calls++; return nil })
			if err := c.kill(fs); err != nil {
				t.Fatal(err)
			}
			wantFile(t, name, c.after)

			checks := map[string]error{}
			_, checks["Write"] = f.Write([]byte("x"))
			_, checks["WriteAt"] = f.WriteAt([]byte("x"), 0)
			_, checks["Read"] = f.Read(make([]byte, 1))
			_, checks["ReadAt"] = f.ReadAt(make([]byte, 1), 0)
			checks["Sync"] = f.Sync()
			checks["Truncate"] = f.Truncate(0)
			checks["Allocate"] = f.Allocate(0, 10)
			_, checks["Stat"] = f.Stat()
			checks["Close"] = f.Close()
			for call, err := range checks {
				if !errors.Is(err, c.reason) {
					t.Errorf("%s on a dead handle = %v, want %v", call, err, c.reason)
				}
			}
			if calls != 0 {
				t.Errorf("the hook was called %d times for dead handles", calls)
			}
			wantFile(t, name, c.after)
			if fs.OpenHandles() != 0 {
				t.Errorf("OpenHandles = %d", fs.OpenHandles())
			}
			// The FS itself goes on: the file can be reopened.
			g, err := fs.OpenFile(name, os.O_RDWR|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			mustWrite(t, g, "!")
			g.Close()
			wantFile(t, name, c.after+"!")
			// After a crash, what was never synced is still volatile.
			if err := fs.PowerCut(); err != nil {
				t.Fatal(err)
			}
			wantFile(t, name, "synced")
		})
	}
}

func TestHookSeesCurrentPath(t *testing.T) {
	fs := New()
	dir := t.TempDir()
	f := create(t, fs, filepath.Join(dir, "a.cleaned"), "", false)
	if err := fs.Rename(filepath.Join(dir, "a.cleaned"), filepath.Join(dir, "a.swap")); err != nil {
		t.Fatal(err)
	}
	var got []string
	fs.SetHook(func(op Op) error { got = append(got, filepath.Base(op.Path)); return nil })
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := fs.Remove(filepath.Join(dir, "a.swap")); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, f, "x") // removed: the name it was opened with
	if !slices.Equal(got, []string{"a.swap", "a.swap", "a.cleaned"}) {
		t.Fatalf("hook paths = %v", got)
	}
}

func TestRelativePaths(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	fs := New()
	f := create(t, fs, "rel", "data", true)
	if f.Name() != "rel" {
		t.Errorf("Name() = %q", f.Name())
	}
	syncDirT(t, fs, ".")
	if data, ok := fs.Durable(filepath.Join(dir, "rel")); !ok || string(data) != "data" {
		t.Fatalf("Durable by absolute path = %q, %v", data, ok)
	}
	powerCut(t, fs)
	wantFile(t, filepath.Join(dir, "rel"), "data")
}

// Appenders on several files (and two on one) sync concurrently; after a
// cut every file holds at least what its last successful Sync covered, and
// nothing that was not written.
func TestConcurrentAppendersThenCut(t *testing.T) {
	fs := New()
	dir := t.TempDir()
	const writers, rounds = 4, 50
	files := make([]vfs.File, 3)
	for i := range files {
		files[i] = create(t, fs, filepath.Join(dir, fmt.Sprint("p", i)), "", false)
	}
	syncDirT(t, fs, dir)
	synced := make([]int64, writers) // per writer: bytes its last Sync covered
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f := files[w%len(files)]
			for r := range rounds {
				rec := []byte(fmt.Sprintf("w%d-%03d;", w, r))
				if _, err := f.Write(rec); err != nil {
					t.Error(err)
					return
				}
				if r%5 == 4 {
					if err := f.Sync(); err != nil {
						t.Error(err)
						return
					}
					synced[w] = int64(r + 1)
				}
			}
		}()
	}
	wg.Wait()
	// Concurrent reader of the model while nobody writes.
	for i := range files {
		if _, err := fs.Unsynced(filepath.Join(dir, fmt.Sprint("p", i))); err != nil {
			t.Fatal(err)
		}
	}
	powerCut(t, fs)
	for w := range writers {
		data, _ := os.ReadFile(filepath.Join(dir, fmt.Sprint("p", w%len(files))))
		for r := range synced[w] {
			if !bytes.Contains(data, []byte(fmt.Sprintf("w%d-%03d;", w, r))) {
				t.Fatalf("writer %d record %d was synced but is gone", w, r)
			}
		}
	}
}

// A cut while writers run: each writer stops at ErrPowerCut, and the file
// afterwards is exactly what a Sync covered.
func TestPowerCutWhileWriting(t *testing.T) {
	fs := New()
	dir := t.TempDir()
	name := filepath.Join(dir, "log")
	f := create(t, fs, name, "", true)
	syncDirT(t, fs, dir)
	var wg sync.WaitGroup
	stopped := make(chan error, 2)
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				if _, err := f.Write([]byte{byte('a' + w)}); err != nil {
					stopped <- err
					return
				}
				if i%7 == 0 {
					if err := f.Sync(); err != nil {
						stopped <- err
						return
					}
				}
			}
		}()
	}
	time.Sleep(20 * time.Millisecond)
	durableBefore, _ := fs.Durable(name) // a lower bound: syncs may land before the cut
	powerCut(t, fs)
	wg.Wait()
	for range 2 {
		if err := <-stopped; !errors.Is(err, ErrPowerCut) {
			t.Fatalf("writer stopped with %v", err)
		}
	}
	got, _ := os.ReadFile(name)
	if !bytes.HasPrefix(got, durableBefore) {
		t.Fatalf("after the cut the file (%d bytes) does not extend what was durable before (%d bytes)", len(got), len(durableBefore))
	}
	if after, _ := fs.Durable(name); !bytes.Equal(after, got) {
		t.Fatal("after a cut the disk is not the durable state")
	}
}

func TestUnsyncedErrors(t *testing.T) {
	fs := New()
	dir := t.TempDir()
	if _, err := fs.Unsynced(filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Unsynced of a missing file = %v", err)
	}
	other := filepath.Join(dir, "untracked")
	if err := os.WriteFile(other, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if n, err := fs.Unsynced(other); n != 0 || err != nil {
		t.Errorf("Unsynced of an untracked file = %d, %v", n, err)
	}
	if _, ok := fs.Durable(dir); ok {
		t.Error("Durable of a directory reported ok")
	}
	if _, ok := fs.DurableNames(other); ok {
		t.Error("DurableNames of a file reported ok")
	}
}

// A hook may cut the power itself, which stops the world exactly before
// the operation it was called for: that operation fails and does nothing.
func TestPowerCutFromHook(t *testing.T) {
	fs := New()
	dir := t.TempDir()
	name := filepath.Join(dir, "log")
	f := create(t, fs, name, "", true)
	syncDirT(t, fs, dir)
	var writes int
	fs.SetHook(func(op Op) error {
		if op.Kind != OpWrite {
			return nil
		}
		if writes++; writes == 3 {
			if err := fs.PowerCut(); err != nil {
				t.Error(err)
			}
		}
		return nil
	})
	mustWrite(t, f, "a")
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, f, "b")
	if _, err := f.Write([]byte("c")); !errors.Is(err, ErrPowerCut) {
		t.Fatalf("the write the cut interrupted returned %v", err)
	}
	fs.SetHook(nil)
	wantFile(t, name, "a")
	if _, err := f.WriteAt([]byte("x"), -1); !errors.Is(err, ErrPowerCut) {
		t.Fatalf("WriteAt(-1) on a dead handle = %v", err)
	}
}

// Sync of a handle on a directory is SyncDir.
func TestDirectoryHandleSync(t *testing.T) {
	fs := New()
	dir := t.TempDir()
	d, err := fs.OpenFile(dir, os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	name := filepath.Join(dir, "f")
	create(t, fs, name, "x", true).Close()
	var kinds []OpKind
	fs.SetHook(func(op Op) error { kinds = append(kinds, op.Kind); return nil })
	if err := d.Sync(); err != nil {
		t.Fatal(err)
	}
	fs.SetHook(nil)
	if !slices.Equal(kinds, []OpKind{OpSync}) {
		t.Errorf("hook saw %v", kinds)
	}
	if names, _ := fs.DurableNames(dir); !slices.Equal(names, []string{"f"}) {
		t.Fatalf("DurableNames after a directory handle Sync = %v", names)
	}
	powerCut(t, fs)
	wantFile(t, name, "x")
}

// A write-only handle can be synced (the snapshot needs to read the file)
// but still refuses reads, as the OS does.
func TestFaultFSWriteOnlySync(t *testing.T) {
	dir := t.TempDir()
	fs := New()
	name := filepath.Join(dir, "tmp")
	f, err := fs.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatalf("Sync of a write-only handle: %v", err)
	}
	if err := fs.SyncDir(dir); err != nil {
		t.Fatal(err)
	}
	if got, ok := fs.Durable(name); !ok || string(got) != "hello" {
		t.Fatalf("durable content %q, %v; want \"hello\"", got, ok)
	}
	if _, err := f.ReadAt(make([]byte, 1), 0); !errors.Is(err, syscall.EBADF) {
		t.Fatalf("ReadAt on a write-only handle: %v, want EBADF", err)
	}
}

func mustWrite(t *testing.T, f vfs.File, p string) {
	t.Helper()
	if n, err := f.Write([]byte(p)); err != nil || n != len(p) {
		t.Fatalf("write %q: n=%d err=%v", p, n, err)
	}
}

func TestOpKindString(t *testing.T) {
	for k := OpOpen; k <= OpMkdir; k++ {
		if s := k.String(); s == "" || s[0] == 'O' {
			t.Errorf("OpKind(%d).String() = %q", k, s)
		}
	}
	if s := OpKind(200).String(); s != "OpKind(200)" {
		t.Errorf("unknown kind: %q", s)
	}
	op := Op{Kind: OpRename, Path: "/a", NewPath: "/b"}
	if op.String() != "rename /a -> /b" {
		t.Errorf("Op.String() = %q", op.String())
	}
}

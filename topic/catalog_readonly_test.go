package topic

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/foliolog/folio/vfs"
)

// readOnlyFS passes reads through to the real file system and refuses,
// and reports as a test failure, every call that could change it.
type readOnlyFS struct {
	vfs.FS
	t testing.TB
}

func newReadOnlyFS(t testing.TB) *readOnlyFS { return &readOnlyFS{FS: vfs.Default, t: t} }

var errWriteAttempt = errors.New("test: write through a read-only catalog")

func (f *readOnlyFS) refuse(op, name string) error {
	f.t.Errorf("read-only catalog called %s(%s)", op, name)
	return fmt.Errorf("%w: %s %s", errWriteAttempt, op, name)
}

func (f *readOnlyFS) OpenFile(name string, flag int, perm os.FileMode) (vfs.File, error) {
	if flag&(os.O_WRONLY|os.O_RDWR|os.O_CREATE|os.O_TRUNC|os.O_APPEND) != 0 {
		return nil, f.refuse("OpenFile", name)
	}
	return f.FS.OpenFile(name, flag, perm)
}
func (f *readOnlyFS) Rename(o, n string) error               { return f.refuse("Rename", o+" -> "+n) }
func (f *readOnlyFS) Remove(name string) error               { return f.refuse("Remove", name) }
func (f *readOnlyFS) MkdirAll(p string, _ os.FileMode) error { return f.refuse("MkdirAll", p) }
func (f *readOnlyFS) SyncDir(dir string) error               { return f.refuse("SyncDir", dir) }

// treeListing describes everything under root, root included: each path
// with its type, permissions, size and modification time, so that any
// create, remove, rename, write or chmod shows as a difference.
func treeListing(t testing.TB, root string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		out = append(out, fmt.Sprintf("%s %v %d %d", rel, fi.Mode(), fi.Size(), fi.ModTime().UnixNano()))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// leftoverDir makes a data directory with a topic "orders" of 3
// partitions and one leftover of each kind a writable open repairs, plus
// entries that are not the catalog's. It returns the directory and what a
// writable open repairs there.
func leftoverDir(t *testing.T) (string, Recovery) {
	t.Helper()
	dir := t.TempDir()
	c := openCatalog(t, dir, nil)
	if _, err := c.Create("orders", Config{Partitions: 3}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.AllocateProducerID(); err != nil {
		t.Fatal(err)
	}
	c.Close()
	put := func(name, content string) {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	put("ghost-0/00000000000000000000.log", "orphan of a crashed create")
	put("orders-3/00000000000000000000.log", "orphan of a crashed grow")
	deletes := []string{deleteDirName("orders", 1, newID()), deleteDirName("gone", 0, newID())}
	put(deletes[0]+"/00000000000000000000.log", "a crashed delete")
	put(deletes[1]+"/x/y.index", "deeper")
	put(catalogTmp, "half a catalog")
	put("backup/readme", "not ours")
	put("notes-0", "a file, not a partition directory")
	put("orders-0/00000000000000000000.log", "live data")
	if err := os.RemoveAll(filepath.Join(dir, "orders-2")); err != nil {
		t.Fatal(err)
	}
	return dir, Recovery{
		RemovedOrphans: []string{"ghost-0", "orders-3"},
		RemovedDeletes: deletes,
		RemovedTemp:    true,
		RecreatedDirs:  []string{"orders-2"},
	}
}

func sortedRecovery(r Recovery) Recovery {
	for _, s := range [][]string{r.RemovedOrphans, r.RemovedDeletes, r.RecreatedDirs} {
		sort.Strings(s)
	}
	return r
}

func recoveryEqual(a, b Recovery) bool {
	a, b = sortedRecovery(a), sortedRecovery(b)
	return slices.Equal(a.RemovedOrphans, b.RemovedOrphans) && slices.Equal(a.RemovedDeletes, b.RemovedDeletes) &&
		slices.Equal(a.RecreatedDirs, b.RecreatedDirs) && a.RemovedTemp == b.RemovedTemp
}

// TestCatalogReadOnlyLeavesLeftovers: a read-only open changes nothing in
// a directory a writable open would repair, reports exactly what that
// open then repairs, and serves the catalog.
func TestCatalogReadOnlyLeavesLeftovers(t *testing.T) {
	dir, want := leftoverDir(t)
	before := treeListing(t, dir)

	r, err := OpenCatalog(dir, &Options{ReadOnly: true, FS: newReadOnlyFS(t)})
	if err != nil {
		t.Fatal(err)
	}
	l, err := r.List()
	if err != nil || len(l) != 1 || l[0].Name != "orders" || l[0].Config.Partitions != 3 {
		t.Fatalf("read-only list: %+v, %v", l, err)
	}
	if in, err := r.Describe("orders"); err != nil || !infoEqual(in, l[0]) {
		t.Fatalf("read-only describe: %+v, %v", in, err)
	}
	pending := r.Recovery()
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if after := treeListing(t, dir); !slices.Equal(before, after) {
		t.Fatalf("read-only open changed the directory:\nbefore %q\nafter  %q", before, after)
	}

	w := openCatalog(t, dir, nil)
	defer w.Close()
	done := w.Recovery()
	if !recoveryEqual(pending, done) {
		t.Fatalf("read-only reported %+v, the writable open repaired %+v", pending, done)
	}
	if !recoveryEqual(want, done) {
		t.Fatalf("recovery %+v, want %+v", done, want)
	}
}

// TestCatalogReadOnlyRefusesChanges: every method that would change the
// catalog returns ErrReadOnly, before looking at its arguments, and
// neither the directory nor the catalog's answers change.
func TestCatalogReadOnlyRefusesChanges(t *testing.T) {
	dir, _ := leftoverDir(t)
	before := treeListing(t, dir)
	r, err := OpenCatalog(dir, &Options{ReadOnly: true, FS: newReadOnlyFS(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	listBefore, err := r.List()
	if err != nil {
		t.Fatal(err)
	}
	pidBefore := r.pidNext
	calls := map[string]func() error{
		"Create":                 func() error { _, err := r.Create("fresh", Config{}); return err },
		"Create existing":        func() error { _, err := r.Create("orders", Config{}); return err },
		"Create bad name":        func() error { _, err := r.Create("../x", Config{}); return err },
		"CreateInternal":         func() error { _, err := r.CreateInternal("__consumer_offsets", Config{}); return err },
		"Delete":                 func() error { return r.Delete("orders") },
		"Delete unknown":         func() error { return r.Delete("nope") },
		"AddPartitions":          func() error { _, err := r.AddPartitions("orders", 5); return err },
		"AddPartitions shrink":   func() error { _, err := r.AddPartitions("orders", 1); return err },
		"Alter":                  func() error { _, err := r.Alter("orders", Config{RetentionAge: time.Minute}); return err },
		"Alter bad config":       func() error { _, err := r.Alter("orders", Config{Partitions: -1}); return err },
		"AllocateProducerID":     func() error { _, err := r.AllocateProducerID(); return err },
		"AllocateProducerID (2)": func() error { _, err := r.AllocateProducerID(); return err },
	}
	for name, call := range calls {
		if err := call(); !errors.Is(err, ErrReadOnly) {
			t.Errorf("%s: %v, want ErrReadOnly", name, err)
		}
	}
	listAfter, err := r.List()
	if err != nil {
		t.Fatal(err)
	}
	if len(listAfter) != len(listBefore) || !infoEqual(listAfter[0], listBefore[0]) || r.pidNext != pidBefore {
		t.Fatalf("refused calls changed the catalog: %+v -> %+v, next pid %d -> %d", listBefore, listAfter, pidBefore, r.pidNext)
	}
	if after := treeListing(t, dir); !slices.Equal(before, after) {
		t.Fatalf("refused calls changed the directory:\nbefore %q\nafter  %q", before, after)
	}
	// A read-only catalog stays read-only once closed; reads say closed.
	r.Close()
	if _, err := r.Create("fresh", Config{}); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("Create after Close: %v", err)
	}
	if _, err := r.List(); !errors.Is(err, ErrClosed) {
		t.Fatalf("List after Close: %v", err)
	}
}

// TestCatalogReadOnlyMissing: a read-only open of a directory without a
// catalog is a typed error and creates nothing.
func TestCatalogReadOnlyMissing(t *testing.T) {
	parent := t.TempDir()
	open := func(dir string) error {
		t.Helper()
		c, err := OpenCatalog(dir, &Options{ReadOnly: true, FS: newReadOnlyFS(t)})
		if err == nil {
			c.Close()
			t.Fatalf("read-only open of %s succeeded", dir)
		}
		return err
	}

	before := treeListing(t, parent)
	for _, dir := range []string{filepath.Join(parent, "data"), filepath.Join(parent, "a", "b", "data")} {
		err := open(dir)
		if !errors.Is(err, ErrNoCatalog) || !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("missing dir %s: %v, want ErrNoCatalog and os.ErrNotExist", dir, err)
		}
	}
	if after := treeListing(t, parent); !slices.Equal(before, after) {
		t.Fatalf("open of a missing dir created %q", after)
	}

	empty := filepath.Join(parent, "empty")
	if err := os.Mkdir(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(parent, "file")
	if err := os.WriteFile(file, []byte("not a dir"), 0o644); err != nil {
		t.Fatal(err)
	}
	before = treeListing(t, parent)
	if err := open(empty); !errors.Is(err, ErrNoCatalog) || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("dir without a catalog: %v", err)
	}
	if err := open(file); !errors.Is(err, ErrNoCatalog) {
		t.Fatalf("data dir is a file: %v", err)
	}
	if after := treeListing(t, parent); !slices.Equal(before, after) {
		t.Fatalf("refused opens of an empty dir and a file changed %s:\nbefore %q\nafter  %q", parent, before, after)
	}

	// Partition directories without a catalog: the file was lost, as a
	// writable open reports it.
	lost := filepath.Join(parent, "lost")
	c := openCatalog(t, lost, nil)
	if _, err := c.Create("orders", Config{}); err != nil {
		t.Fatal(err)
	}
	c.Close()
	if err := os.Remove(filepath.Join(lost, CatalogFile)); err != nil {
		t.Fatal(err)
	}
	before = treeListing(t, parent)
	if err := open(lost); !errors.Is(err, ErrCorrupt) || errors.Is(err, ErrNoCatalog) {
		t.Fatalf("partitions without a catalog: %v, want ErrCorrupt", err)
	}
	if after := treeListing(t, parent); !slices.Equal(before, after) {
		t.Fatalf("refused opens changed %s:\nbefore %q\nafter  %q", parent, before, after)
	}
}

// tornFS hands out catalog files whose first torn reads come back with a
// byte flipped, as a file read while it is being replaced might.
type tornFS struct {
	vfs.FS
	torn  atomic.Int32 // reads of the catalog still to tear
	opens atomic.Int32 // opens of the catalog
}

type tornFile struct {
	vfs.File
	tear bool
}

func (f *tornFS) OpenFile(name string, flag int, perm os.FileMode) (vfs.File, error) {
	file, err := f.FS.OpenFile(name, flag, perm)
	if err != nil || filepath.Base(name) != CatalogFile {
		return file, err
	}
	f.opens.Add(1)
	return &tornFile{File: file, tear: f.torn.Add(-1) >= 0}, nil
}

func (f *tornFile) ReadAt(p []byte, off int64) (int, error) {
	n, err := f.File.ReadAt(p, off)
	if f.tear && n > catalogHeaderSize+1 {
		p[catalogHeaderSize+1] ^= 0x20
	}
	return n, err
}

// TestCatalogReadOnlyRetriesTornRead: a read-only open rereads a catalog
// that fails its checksum and succeeds once a read is whole; one that
// stays bad is ErrCorrupt after readOnlyAttempts reads. A writable open
// does not retry: nobody else writes its catalog.
func TestCatalogReadOnlyRetriesTornRead(t *testing.T) {
	dir := t.TempDir()
	c := openCatalog(t, dir, nil)
	orders, err := c.Create("orders", Config{Partitions: 2})
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	before := treeListing(t, dir)

	for torn := int32(0); torn <= readOnlyAttempts; torn++ {
		fsys := &tornFS{FS: newReadOnlyFS(t)}
		fsys.torn.Store(torn)
		r, err := OpenCatalog(dir, &Options{ReadOnly: true, FS: fsys})
		wantOpens := min(torn+1, readOnlyAttempts)
		if got := fsys.opens.Load(); got != wantOpens {
			t.Errorf("%d torn reads: catalog read %d times, want %d", torn, got, wantOpens)
		}
		if torn >= readOnlyAttempts {
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "read 4 times") {
				t.Fatalf("%d torn reads: %v, want ErrCorrupt after 4 reads", torn, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%d torn reads: %v", torn, err)
		}
		if in, err := r.Describe("orders"); err != nil || !infoEqual(in, orders) {
			t.Fatalf("%d torn reads: %+v, %v", torn, in, err)
		}
		r.Close()
	}
	if after := treeListing(t, dir); !slices.Equal(before, after) {
		t.Fatalf("read-only opens changed the directory")
	}

	fsys := &tornFS{FS: vfs.Default}
	fsys.torn.Store(1)
	if _, err := OpenCatalog(dir, &Options{FS: fsys}); !errors.Is(err, ErrCorrupt) || fsys.opens.Load() != 1 {
		t.Fatalf("writable open of a torn read: %v after %d reads, want ErrCorrupt after 1", err, fsys.opens.Load())
	}
}

// TestCatalogReadOnlyBesideWriter: read-only opens run while a writable
// catalog of the same directory creates, grows, alters and deletes topics
// and allocates producer ids. Every open succeeds and sees exactly one
// catalog the writer committed, never a mix, and the directory the writer
// leaves needs no repair afterwards (the readers removed nothing of its).
func TestCatalogReadOnlyBesideWriter(t *testing.T) {
	dir := fastTempDir(t)
	w := openCatalog(t, dir, &Options{ProducerIDBlock: 3})
	defer w.Close()

	// committed holds every catalog the writer has had, encoded; the
	// writer adds each before the next change can start.
	var committedMu sync.Mutex // guards committed
	committed := map[string]bool{}
	record := func() {
		w.catalogMu.Lock()
		data, err := encodeCatalog(w.state)
		w.catalogMu.Unlock()
		if err != nil {
			t.Error(err)
			return
		}
		committedMu.Lock()
		committed[string(data)] = true
		committedMu.Unlock()
	}
	record()

	const rounds = 60
	var writerDone atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer writerDone.Store(true)
		for i := range rounds {
			name := fmt.Sprintf("t%d", i%7)
			steps := []func() error{
				func() error {
					_, err := w.Create(name, Config{Partitions: int32(i%3 + 1), RetentionAge: time.Duration(i%7+1) * time.Minute})
					return err
				},
				func() error { _, err := w.AllocateProducerID(); return err },
				func() error { _, err := w.AddPartitions(name, int32(i%3+2)); return err },
				func() error {
					_, err := w.Alter(name, Config{RetentionAge: time.Duration(i%7+1) * time.Minute, SegmentBytes: 1 << 20})
					return err
				},
			}
			if i%2 == 1 {
				steps = append(steps, func() error { return w.Delete(name) })
			}
			for _, step := range steps {
				// Rounds reuse names: a topic may exist already, or have
				// as many partitions as the grow asks for.
				if err := step(); err != nil && !errors.Is(err, ErrExists) && !errors.Is(err, ErrInvalidPartitions) {
					t.Errorf("writer round %d (%s): %v", i, name, err)
					return
				}
				record()
			}
		}
	}()

	var seen []string
	opens := 0
	lastPID := int64(-1)
	for !writerDone.Load() || opens == 0 {
		r, err := OpenCatalog(dir, &Options{ReadOnly: true, FS: newReadOnlyFS(t)})
		if err != nil {
			t.Errorf("read-only open %d beside the writer: %v", opens, err)
			break
		}
		opens++
		list, err := r.List()
		if err != nil {
			t.Fatal(err)
		}
		for _, in := range list {
			got, err := r.Describe(in.Name)
			if err != nil || !infoEqual(got, in) {
				t.Errorf("open %d lists %+v but describes %+v, %v", opens, in, got, err)
			}
			// Each name always gets the same retention, whatever round
			// made it, so a mixed-up entry shows.
			var i int
			if _, err := fmt.Sscanf(in.Name, "t%d", &i); err != nil || in.Config.RetentionAge != time.Duration(i+1)*time.Minute {
				t.Errorf("open %d: unexpected topic %+v", opens, in)
			}
		}
		if r.state.nextProducerID < lastPID {
			t.Errorf("open %d: producer-id mark went back from %d to %d", opens, lastPID, r.state.nextProducerID)
		}
		lastPID = r.state.nextProducerID
		data, err := encodeCatalog(r.state)
		if err != nil {
			t.Fatal(err)
		}
		seen = append(seen, string(data))
		r.Close()
	}
	wg.Wait()
	t.Logf("%d read-only opens beside %d writer rounds", opens, rounds)

	distinct := map[string]bool{}
	for i, s := range seen {
		if !committed[s] {
			t.Fatalf("read-only open %d saw a catalog the writer never committed:\n%s", i, s)
		}
		distinct[s] = true
	}
	t.Logf("the reads saw %d distinct catalogs of %d committed", len(distinct), len(committed))

	w.Close()
	again := openCatalog(t, dir, nil)
	defer again.Close()
	if rec := again.Recovery(); !recoveryEqual(rec, Recovery{}) {
		t.Fatalf("after the run the directory needed repair: %+v", rec)
	}
}

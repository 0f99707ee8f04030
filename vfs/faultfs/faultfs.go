package faultfs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"

	"syscall"

	"github.com/foliolog/folio/vfs"
)

// FS is an FS over real files that records what a power cut would
// keep, injects failures through a hook, and can simulate a power cut or a
// process crash on the real disk. See the package documentation for the
// model. All methods are safe for concurrent use.
type FS struct {
	hook atomic.Pointer[Hook]

	// gen is the current handle generation: PowerCut and Crash end one, and
	// every handle opened in an earlier generation is dead. It only changes
	// with cutMu held for writing, so reading it under cutMu (either mode)
	// is stable; it is atomic so that a dead handle can be refused before
	// its hook runs, without a lock.
	gen atomic.Uint64

	// cutMu keeps PowerCut and Crash (writers) apart from every operation
	// between its hook and its return (readers), so a cut never sees half an
	// operation and no operation sees half a restore. It also guards deaths.
	cutMu sync.RWMutex
	// deaths[g] says why generation g ended (ErrPowerCut or ErrCrashed).
	deaths []error

	// nsMu guards the model: byPath, handles, nextID and every inode's
	// fields except syncMu and spare. Lock order: cutMu, inode.syncMu, nsMu.
	// The hook is never called with any of them held.
	nsMu sync.Mutex
	// byPath maps the live absolute path of every file and directory the
	// FS knows to its identity; renames move entries, so an inode keeps
	// its durable state whatever it is called now.
	byPath  map[string]*inode
	handles map[*faultFile]struct{}
	nextID  uint64
}

// inode is the identity of one file or directory, independent of its name.
type inode struct {
	id   uint64
	dir  bool
	perm os.FileMode
	// path is the live path, "" once removed (or replaced by a rename).
	path string

	// For files. captured false means the file has not been opened for
	// writing since the FS saw it (or since the last power cut), so its
	// bytes on disk are its durable content; otherwise durable is the
	// content as of its last successful Sync (or of its creation: empty).
	captured bool
	durable  []byte

	// syncMu serialises Syncs of this file, so that an older snapshot can
	// never replace a newer one; it also guards spare, the buffer the next
	// snapshot is read into (the previous durable slice, recycled).
	syncMu sync.Mutex
	spare  []byte

	// For directories. listed false means nothing in the directory has
	// been touched through the FS: everything in it on disk is durable.
	// Once listed, names holds the entries as of the last successful SyncDir
	// (initially the entries on disk when it was first listed; none for a
	// directory the FS created).
	listed bool
	names  map[string]*inode
}

// New returns a FS with no hook. It serves any path; the
// directories it is used in are typically a test's t.TempDir().
func New() *FS {
	return &FS{
		byPath:  make(map[string]*inode),
		handles: make(map[*faultFile]struct{}),
	}
}

// SetHook installs h, replacing any previous hook; nil removes it.
// Operations already past their hook are not affected.
func (fs *FS) SetHook(h func(Op) error) {
	if h == nil {
		fs.hook.Store(nil)
		return
	}
	hk := Hook(h)
	fs.hook.Store(&hk)
}

// OpenHandles returns how many files opened through the FS are open
// and alive, which lets a test check that the code under test closed them.
func (fs *FS) OpenHandles() int {
	fs.nsMu.Lock()
	defer fs.nsMu.Unlock()
	return len(fs.handles)
}

// enter is the start of every hooked operation: it refuses a handle from
// an earlier generation, calls the hook with no lock held, then takes cutMu
// for reading and refuses the operation if a cut ended generation gen in
// the meantime. On a nil err the caller must release cutMu.RUnlock. The
// hook's verdict is returned as injected for the caller to apply.
func (fs *FS) enter(op Op, gen uint64) (injected, err error) {
	if fs.gen.Load() != gen {
		fs.cutMu.RLock()
		defer fs.cutMu.RUnlock()
		return nil, fs.deadErrLocked(op.Kind.String(), op.Path, gen)
	}
	if h := fs.hook.Load(); h != nil {
		injected = (*h)(op)
	}
	fs.cutMu.RLock()
	if fs.gen.Load() != gen {
		defer fs.cutMu.RUnlock()
		return nil, fs.deadErrLocked(op.Kind.String(), op.Path, gen)
	}
	return injected, nil
}

// enterNS begins a namespace operation: enter (the hook, then cutMu held
// shared), a hook's injected error dressed as the OS's, then nsMu. On
// success the caller must call release, which drops both locks.
func (fs *FS) enterNS(op Op) (release func(), err error) {
	injected, err := fs.enter(op, fs.gen.Load())
	if err != nil {
		return nil, err
	}
	if injected != nil {
		fs.cutMu.RUnlock()
		return nil, injectedErr(op, injected)
	}
	fs.nsMu.Lock()
	return func() {
		fs.nsMu.Unlock()
		fs.cutMu.RUnlock()
	}, nil
}

// deadErrLocked reports why generation gen ended. cutMu must be held.
func (fs *FS) deadErrLocked(opName, path string, gen uint64) error {
	reason := ErrPowerCut
	if gen < uint64(len(fs.deaths)) {
		reason = fs.deaths[gen]
	}
	return &os.PathError{Op: opName, Path: path, Err: reason}
}

// injectedErr dresses a hook's error like the OS error the operation
// would have returned, so callers see the same shapes as with OSFS.
func injectedErr(op Op, err error) error {
	if op.Kind == OpRename {
		return vfs.MarkNoSpace(&os.LinkError{Op: "rename", Old: op.Path, New: op.NewPath, Err: err})
	}
	return vfs.MarkNoSpace(&os.PathError{Op: op.Kind.String(), Path: op.Path, Err: err})
}

func absPath(name string) (string, error) {
	p, err := filepath.Abs(name)
	if err != nil {
		return "", &os.PathError{Op: "abs", Path: name, Err: err}
	}
	return p, nil
}

// OpenFile opens name like os.OpenFile. A newly created file exists at
// once but survives a power cut only after SyncDir of its directory, and
// then with the content of its last Sync.
func (fs *FS) OpenFile(name string, flag int, perm os.FileMode) (vfs.File, error) {
	abs, err := absPath(name)
	if err != nil {
		return nil, err
	}
	op := Op{Kind: OpOpen, Path: abs}
	if flag&os.O_CREATE != 0 {
		op.Kind = OpCreate
	}
	release, err := fs.enterNS(op)
	if err != nil {
		return nil, err
	}
	defer release()
	ino, err := fs.prepareLocked(abs)
	if err != nil {
		return nil, err
	}
	modifies := flag&(os.O_WRONLY|os.O_RDWR|os.O_TRUNC) != 0
	if ino != nil && modifies {
		if err := fs.captureLocked(ino); err != nil {
			return nil, err
		}
	}
	// Sync snapshots the file through its own descriptor, so a write-only
	// handle is opened read-write underneath; Read and ReadAt still refuse
	// it, as the OS would.
	writeOnly := flag&(os.O_WRONLY|os.O_RDWR) == os.O_WRONLY
	realFlag := flag
	if writeOnly {
		realFlag = flag&^os.O_WRONLY | os.O_RDWR
	}
	real, err := vfs.Default.OpenFile(abs, realFlag, perm)
	if err != nil {
		return nil, err
	}
	if ino == nil {
		ino = fs.newInodeLocked(abs, false, perm)
		ino.captured = true // durable content of a new file: empty
	}
	h := &faultFile{fs: fs, real: real, f: real.OS(), ino: ino, name: name, abs: abs, gen: fs.gen.Load(), writeOnly: writeOnly}
	fs.handles[h] = struct{}{}
	return h, nil
}

// prepareLocked lists the parent directory of abs (so its durable entries
// are known before anything in it changes) and returns the inode at abs, or
// nil if nothing is there. A missing parent is not an error here: the OS
// call that follows reports it in its own words.
func (fs *FS) prepareLocked(abs string) (*inode, error) {
	if _, err := fs.listDirLocked(filepath.Dir(abs)); err != nil {
		if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			return nil, nil
		}
		return nil, err
	}
	return fs.lookupLocked(abs)
}

// captureLocked records the durable content of a file that is about to
// change for the first time (opened for writing, removed, or replaced by a
// rename): until now its bytes on disk were its durable content.
func (fs *FS) captureLocked(ino *inode) error {
	if ino.dir || ino.captured {
		return nil
	}
	data, err := os.ReadFile(ino.path)
	if err != nil {
		return fmt.Errorf("vfs: faultfs: capture durable content of %s: %w", ino.path, err)
	}
	ino.durable = data
	ino.captured = true
	return nil
}

func (fs *FS) newInodeLocked(path string, dir bool, perm os.FileMode) *inode {
	fs.nextID++
	ino := &inode{id: fs.nextID, dir: dir, perm: perm.Perm(), path: path}
	fs.byPath[path] = ino
	return ino
}

// lookupLocked returns the inode at abs, or nil if nothing is there. An
// entry that appeared behind the FS's back since its directory was
// listed is adopted as pre-existing, hence durable.
func (fs *FS) lookupLocked(abs string) (*inode, error) {
	if ino := fs.byPath[abs]; ino != nil {
		return ino, nil
	}
	fi, err := os.Lstat(abs)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	ino := fs.newInodeLocked(abs, fi.IsDir(), fi.Mode())
	if parent := fs.byPath[filepath.Dir(abs)]; parent != nil && parent.listed {
		parent.names[filepath.Base(abs)] = ino
	}
	return ino, nil
}

// trackedAncestorLocked reports whether p or any directory above it is
// known to the FS.
func (fs *FS) trackedAncestorLocked(p string) bool {
	for {
		if fs.byPath[p] != nil {
			return true
		}
		q := filepath.Dir(p)
		if q == p {
			return false
		}
		p = q
	}
}

// listDirLocked makes dir a listed directory: its current entries become
// its durable entries, as everything the FS has not changed is
// durable. A directory below a known one is listed through its parent, so
// that only directories with no known ancestor (roots) are taken on trust:
// a root cannot have been renamed or removed through the FS, because
// that would have listed its parent first.
func (fs *FS) listDirLocked(dir string) (*inode, error) {
	ino := fs.byPath[dir]
	if ino == nil {
		parent := filepath.Dir(dir)
		if parent != dir && fs.trackedAncestorLocked(parent) {
			if _, err := fs.listDirLocked(parent); err != nil {
				return nil, err
			}
			var err error
			if ino, err = fs.lookupLocked(dir); err != nil {
				return nil, err
			}
			if ino == nil {
				return nil, &os.PathError{Op: "open", Path: dir, Err: os.ErrNotExist}
			}
		} else {
			fi, err := os.Stat(dir)
			if err != nil {
				return nil, err
			}
			if !fi.IsDir() {
				return nil, &os.PathError{Op: "open", Path: dir, Err: syscall.ENOTDIR}
			}
			entries, err := os.ReadDir(dir)
			if err != nil {
				return nil, err
			}
			ino = fs.newInodeLocked(dir, true, fi.Mode())
			return ino, fs.adoptEntriesLocked(ino, entries)
		}
	}
	if !ino.dir {
		return nil, &os.PathError{Op: "open", Path: dir, Err: syscall.ENOTDIR}
	}
	if ino.listed {
		return ino, nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	return ino, fs.adoptEntriesLocked(ino, entries)
}

func (fs *FS) adoptEntriesLocked(d *inode, entries []os.DirEntry) error {
	names := make(map[string]*inode, len(entries))
	for _, e := range entries {
		p := filepath.Join(d.path, e.Name())
		child := fs.byPath[p]
		if child == nil {
			fi, err := e.Info()
			if errors.Is(err, os.ErrNotExist) {
				continue // removed behind our back while listing
			}
			if err != nil {
				return err
			}
			child = fs.newInodeLocked(p, fi.IsDir(), fi.Mode())
		}
		names[e.Name()] = child
	}
	d.names = names
	d.listed = true
	return nil
}

// liveNamesLocked returns the entries of the listed directory d as they are
// on disk now.
func (fs *FS) liveNamesLocked(d *inode) (map[string]*inode, error) {
	entries, err := os.ReadDir(d.path)
	if err != nil {
		return nil, err
	}
	names := make(map[string]*inode, len(entries))
	for _, e := range entries {
		child, err := fs.lookupLocked(filepath.Join(d.path, e.Name()))
		if err != nil {
			return nil, err
		}
		if child != nil {
			names[e.Name()] = child
		}
	}
	return names, nil
}

// unlinkLocked forgets the live path of ino (and of everything below it,
// for a directory, though a removed directory is empty).
func (fs *FS) unlinkLocked(ino *inode) {
	old := ino.path
	delete(fs.byPath, old)
	ino.path = ""
	if ino.dir {
		prefix := old + string(filepath.Separator)
		for p, c := range fs.byPath {
			if len(p) > len(prefix) && p[:len(prefix)] == prefix {
				delete(fs.byPath, p)
				c.path = ""
			}
		}
	}
}

// moveLocked records that ino now lives at newPath (and so does everything
// below it, for a directory).
func (fs *FS) moveLocked(ino *inode, newPath string) {
	old := ino.path
	delete(fs.byPath, old)
	ino.path = newPath
	fs.byPath[newPath] = ino
	if !ino.dir {
		return
	}
	prefix := old + string(filepath.Separator)
	type move struct {
		c *inode
		p string
	}
	var moves []move
	for p, c := range fs.byPath {
		if len(p) > len(prefix) && p[:len(prefix)] == prefix {
			moves = append(moves, move{c, newPath + p[len(old):]})
			delete(fs.byPath, p)
		}
	}
	for _, m := range moves {
		m.c.path = m.p
		fs.byPath[m.p] = m.c
	}
}

// Rename renames like os.Rename. The new name, and the disappearance of the
// old one, survive a power cut only after SyncDir of the respective
// directory; a replaced file keeps its durable content until then.
func (fs *FS) Rename(oldpath, newpath string) error {
	absOld, err := absPath(oldpath)
	if err != nil {
		return err
	}
	absNew, err := absPath(newpath)
	if err != nil {
		return err
	}
	op := Op{Kind: OpRename, Path: absOld, NewPath: absNew}
	release, err := fs.enterNS(op)
	if err != nil {
		return err
	}
	defer release()
	src, err := fs.prepareLocked(absOld)
	if err != nil {
		return err
	}
	dst, err := fs.prepareLocked(absNew)
	if err != nil {
		return err
	}
	if dst != nil && dst != src {
		// The target is about to be unlinked; keep what a cut would bring back.
		if dst.dir {
			if _, err := fs.listDirLocked(absNew); err != nil {
				return err
			}
		} else if err := fs.captureLocked(dst); err != nil {
			return err
		}
	}
	if err := os.Rename(absOld, absNew); err != nil {
		return vfs.MarkNoSpace(err)
	}
	if src != nil && src == dst {
		return nil
	}
	if dst != nil {
		fs.unlinkLocked(dst)
	}
	if src == nil {
		// Appeared behind our back between the lookup and the rename.
		_, err := fs.lookupLocked(absNew)
		return err
	}
	fs.moveLocked(src, absNew)
	return nil
}

// Remove removes a file or an empty directory like os.Remove. The removal
// survives a power cut only after SyncDir of the directory holding it.
func (fs *FS) Remove(name string) error {
	abs, err := absPath(name)
	if err != nil {
		return err
	}
	op := Op{Kind: OpRemove, Path: abs}
	release, err := fs.enterNS(op)
	if err != nil {
		return err
	}
	defer release()
	ino, err := fs.prepareLocked(abs)
	if err != nil {
		return err
	}
	if ino != nil {
		if ino.dir {
			if _, err := fs.listDirLocked(abs); err != nil {
				return err
			}
		} else if err := fs.captureLocked(ino); err != nil {
			return err
		}
	}
	if err := os.Remove(abs); err != nil {
		return err
	}
	if ino != nil {
		fs.unlinkLocked(ino)
	}
	return nil
}

// MkdirAll creates path and its missing parents like os.MkdirAll. Each new
// directory survives a power cut only after SyncDir of its parent.
func (fs *FS) MkdirAll(path string, perm os.FileMode) error {
	abs, err := absPath(path)
	if err != nil {
		return err
	}
	op := Op{Kind: OpMkdir, Path: abs}
	release, err := fs.enterNS(op)
	if err != nil {
		return err
	}
	defer release()
	// Find the deepest existing ancestor; everything below it is new.
	var missing []string
	existing := abs
	for {
		fi, err := os.Stat(existing)
		if err == nil {
			if !fi.IsDir() {
				return vfs.MarkNoSpace(os.MkdirAll(abs, perm)) // reports ENOTDIR
			}
			break
		}
		if !errors.Is(err, os.ErrNotExist) {
			return err
		}
		missing = append(missing, existing)
		parent := filepath.Dir(existing)
		if parent == existing {
			break
		}
		existing = parent
	}
	if len(missing) == 0 {
		return nil
	}
	if _, err := fs.listDirLocked(existing); err != nil {
		return err
	}
	mkErr := os.MkdirAll(abs, perm)
	for i := len(missing) - 1; i >= 0; i-- {
		fi, err := os.Lstat(missing[i])
		if err != nil {
			break // MkdirAll stopped above this one
		}
		d := fs.newInodeLocked(missing[i], true, fi.Mode())
		d.listed = true
		d.names = map[string]*inode{}
	}
	return vfs.MarkNoSpace(mkErr)
}

// ReadDir lists a directory like os.ReadDir.
func (fs *FS) ReadDir(name string) ([]os.DirEntry, error) {
	fs.cutMu.RLock()
	defer fs.cutMu.RUnlock()
	return os.ReadDir(name)
}

// Stat describes a file like os.Stat.
func (fs *FS) Stat(name string) (os.FileInfo, error) {
	fs.cutMu.RLock()
	defer fs.cutMu.RUnlock()
	return os.Stat(name)
}

// SyncDir makes the current entries of dir durable. Like Sync, it does
// not fsync the real disk (see the package documentation).
func (fs *FS) SyncDir(dir string) error {
	abs, err := absPath(dir)
	if err != nil {
		return err
	}
	op := Op{Kind: OpSyncDir, Path: abs}
	injected, err := fs.enter(op, fs.gen.Load())
	if err != nil {
		return err
	}
	defer fs.cutMu.RUnlock()
	if injected != nil {
		return injectedErr(op, injected)
	}
	return fs.syncDirEntered(abs)
}

// syncDirEntered makes the current entries of dir its durable entries.
// cutMu must be held for reading.
func (fs *FS) syncDirEntered(abs string) error {
	fs.nsMu.Lock()
	defer fs.nsMu.Unlock()
	d, err := fs.listDirLocked(abs)
	if err != nil {
		return err
	}
	names, err := fs.liveNamesLocked(d)
	if err != nil {
		return err
	}
	d.names = names
	return nil
}

// Durable returns the content the file at path would have after a power
// cut now, and false if the file would not exist (or path is a
// directory). The slice is a copy. Paths the FS has never seen count
// as durable as they are on disk.
func (fs *FS) Durable(path string) (data []byte, ok bool) {
	abs, err := absPath(path)
	if err != nil {
		return nil, false
	}
	fs.nsMu.Lock()
	defer fs.nsMu.Unlock()
	ino, rest, ok := fs.durableLookupLocked(abs)
	if !ok {
		return nil, false
	}
	if ino == nil {
		fi, err := os.Stat(rest)
		if err != nil || fi.IsDir() {
			return nil, false
		}
		data, err := os.ReadFile(rest)
		return data, err == nil
	}
	if ino.dir {
		return nil, false
	}
	if ino.captured {
		return bytes.Clone(ino.durable), true
	}
	data, err = os.ReadFile(ino.path)
	return data, err == nil
}

// DurableNames returns the sorted entry names that the directory dir would
// hold after a power cut now, and false if dir itself would not survive.
func (fs *FS) DurableNames(dir string) (names []string, ok bool) {
	abs, err := absPath(dir)
	if err != nil {
		return nil, false
	}
	fs.nsMu.Lock()
	defer fs.nsMu.Unlock()
	ino, rest, ok := fs.durableLookupLocked(abs)
	if !ok {
		return nil, false
	}
	if ino != nil && !ino.dir {
		return nil, false
	}
	if ino == nil || !ino.listed {
		if ino != nil {
			rest = ino.path
		}
		entries, err := os.ReadDir(rest)
		if err != nil {
			return nil, false
		}
		for _, e := range entries {
			names = append(names, e.Name())
		}
		return names, true
	}
	return sortedNames(fs.durableTreeLocked()[ino]), true
}

// durableLookupLocked resolves abs in the durable namespace, as PowerCut
// would rebuild it (see restore). It returns the inode durable at abs, or a
// nil inode and the live path to read when abs lies in territory the
// FS has never changed (outside any known directory, or inside a
// directory never listed).
func (fs *FS) durableLookupLocked(abs string) (ino *inode, rest string, ok bool) {
	// The topmost known ancestor is a root: listed, and never moved.
	var chain []string
	for p := abs; ; {
		chain = append(chain, p)
		q := filepath.Dir(p)
		if q == p {
			break
		}
		p = q
	}
	var cur *inode
	i := len(chain) - 1
	for ; i >= 0; i-- {
		if cur = fs.byPath[chain[i]]; cur != nil {
			break
		}
	}
	if cur == nil {
		return nil, abs, true
	}
	tree := fs.durableTreeLocked()
	for i--; i >= 0; i-- {
		if !cur.dir {
			return nil, "", false
		}
		if !cur.listed {
			if cur.path == "" {
				return nil, "", false
			}
			rel, err := filepath.Rel(chain[i+1], abs)
			if err != nil {
				return nil, "", false
			}
			return nil, filepath.Join(cur.path, rel), true
		}
		next := tree[cur][filepath.Base(chain[i])]
		if next == nil {
			return nil, "", false
		}
		cur = next
	}
	return cur, "", true
}

// durableTreeLocked returns the durable entries of every reachable listed
// directory, as PowerCut would restore them.
func (fs *FS) durableTreeLocked() map[*inode]map[string]*inode {
	r := &restore{
		tree:   map[*inode]map[string]*inode{},
		refs:   map[*inode]int{},
		needed: map[*inode]bool{},
	}
	roots := fs.rootsLocked()
	for _, root := range roots {
		r.needed[root] = true
	}
	for _, root := range roots {
		r.canon(root)
	}
	return r.tree
}

// Unsynced returns how many bytes of the file at path differ from its
// durable content (bytes past the end of the shorter of the two count as
// differing), so zero means a Sync now would change nothing. It says
// nothing about whether the file's name is durable; see DurableNames.
func (fs *FS) Unsynced(path string) (int64, error) {
	abs, err := absPath(path)
	if err != nil {
		return 0, err
	}
	fs.nsMu.Lock()
	defer fs.nsMu.Unlock()
	cur, err := os.ReadFile(abs)
	if err != nil {
		return 0, err
	}
	ino := fs.byPath[abs]
	if ino == nil || !ino.captured {
		return 0, nil
	}
	return diffBytes(cur, ino.durable), nil
}

func diffBytes(a, b []byte) int64 {
	if len(a) < len(b) {
		a, b = b, a
	}
	n := int64(len(a) - len(b))
	for i := range b {
		if a[i] != b[i] {
			n++
		}
	}
	return n
}

// Crash simulates a crash of the process: every open handle dies (later
// calls on it return ErrCrashed) but everything written stays, in the page
// cache as far as durability goes, so a later PowerCut still drops what
// was never synced. As with PowerCut, the dead handles' descriptors are
// closed by their Close, not by the crash.
func (fs *FS) Crash() {
	fs.cutMu.Lock()
	defer fs.cutMu.Unlock()
	fs.nsMu.Lock()
	defer fs.nsMu.Unlock()
	fs.killLocked(ErrCrashed)
}

// killLocked ends the current handle generation. Both cutMu (for writing)
// and nsMu must be held.
//
// The dead handles' descriptors stay open until their owners Close them.
// Closing them here would race with the owners: OS() hands out the
// *os.File, and its users (mmap-go's MapRegion, which reads Fd) touch the
// descriptor outside any FS operation, so cutMu cannot keep a cut
// away from them. A close under such a user is a data race on the
// *os.File, and worse, the number it read may already name a file opened
// since, which it would then map. Every call through the File interface
// refuses a dead handle anyway; through OS() the dead process can still
// map or read the file, as it could before the cut, and the caveats on
// mappings made before a cut apply to those too.
func (fs *FS) killLocked(reason error) {
	clear(fs.handles)
	fs.deaths = append(fs.deaths, reason)
	fs.gen.Add(1)
}

// readAllAt reads the whole file into buf's storage: a snapshot taken with
// positional reads, so concurrent Writes through the shared offset are not
// disturbed.
func readAllAt(f *os.File, buf []byte) ([]byte, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	size := int(fi.Size())
	buf = slices.Grow(buf[:0], size)[:size]
	n, err := f.ReadAt(buf, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return buf[:n], nil
}

var _ vfs.FS = (*FS)(nil)

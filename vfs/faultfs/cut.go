package faultfs

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
)

// PowerCut simulates losing power: every open handle dies (later calls on
// it return ErrPowerCut; its descriptor stays open, for code that may be
// using it through OS(), until the handle is closed) and the real disk is
// put back into its durable state. Each known directory gets back exactly
// its durable entries (entries created since its last SyncDir are removed,
// entries renamed or removed since are put back), and each surviving file
// gets back the content of its last Sync, with its size. Afterwards that
// state is the new durable baseline and the FS is ready for use
// again, so a test can reopen whatever it was testing on the same FS.
//
// PowerCut waits for operations in progress (past their hook) to finish;
// operations still in their hook fail with ErrPowerCut when they resume.
// Mappings of the files made before the cut are not invalidated: the
// restore writes and truncates the real files, so such a mapping may see
// the restored bytes, or fault beyond a shortened end. The code under test
// must abandon them, as it would its memory after a real power cut.
//
// If the disk cannot be restored the error wraps ErrRestore and the
// directories are left in an unspecified state.
func (fs *FS) PowerCut() error {
	fs.cutMu.Lock()
	defer fs.cutMu.Unlock()
	fs.nsMu.Lock()
	defer fs.nsMu.Unlock()
	fs.killLocked(ErrPowerCut)

	r := &restore{
		fs:      fs,
		tree:    map[*inode]map[string]*inode{},
		refs:    map[*inode]int{},
		needed:  map[*inode]bool{},
		cur:     map[*inode]string{},
		keptAt:  map[*inode]entry{},
		stashed: map[*inode]string{},
		placed:  map[*inode]bool{},
	}
	roots := fs.rootsLocked()
	for _, root := range roots {
		r.needed[root] = true
		r.cur[root] = root.path
	}
	for _, root := range roots {
		r.canon(root)
	}
	r.captureShared()
	for _, root := range roots {
		stash, err := os.MkdirTemp(root.path, ".faultfs-cut-")
		if err != nil {
			r.fail(err)
			continue
		}
		r.stashes = append(r.stashes, stash)
		r.clear(root, stash)
	}
	for _, root := range roots {
		r.place(root)
	}
	for _, stash := range r.stashes {
		if err := os.RemoveAll(stash); err != nil {
			r.fail(err)
		}
	}
	fs.rebuildLocked(roots, r.tree)
	if len(r.errs) > 0 {
		return fmt.Errorf("%w: %w", ErrRestore, errors.Join(r.errs...))
	}
	return nil
}

// rootsLocked returns the listed directories with no known ancestor, sorted
// by path: the places from which the durable tree is rebuilt. They cannot
// have moved (see listDirLocked).
func (fs *FS) rootsLocked() []*inode {
	var roots []*inode
	for p, ino := range fs.byPath {
		if !ino.listed {
			continue
		}
		parent := filepath.Dir(p)
		if parent == p || !fs.trackedAncestorLocked(parent) {
			roots = append(roots, ino)
		}
	}
	slices.SortFunc(roots, func(a, b *inode) int {
		if a.path < b.path {
			return -1
		}
		if a.path > b.path {
			return 1
		}
		return 0
	})
	return roots
}

type entry struct {
	dir  *inode
	name string
}

// restore carries one PowerCut through its phases:
//
//  1. canon: walk the durable entries from the roots in name order. A
//     directory can have one parent, so a directory durable under two names
//     (possible when a rename is synced on one side only) keeps the first;
//     a file durable under two names becomes two files.
//  2. clear: walk the live tree. Every entry that is not its directory's
//     durable entry of that name goes: into a stash directory if it is
//     needed elsewhere, else deleted.
//  3. place: walk the durable tree again, moving stashed entries home,
//     recreating removed ones, and restoring every file's durable bytes.
type restore struct {
	fs *FS
	// tree is the durable tree: each reachable listed directory's entries.
	tree map[*inode]map[string]*inode
	// refs counts the durable names of each file.
	refs map[*inode]int
	// needed holds every inode in tree.
	needed map[*inode]bool
	// cur is where a directory really is during the restore; byPath still
	// maps the live paths from before the cut, which name the children.
	cur map[*inode]string
	// keptAt is the durable entry an inode was found live at and left in.
	keptAt map[*inode]entry
	// stashed is where an inode moved out of the way waits.
	stashed map[*inode]string
	// placed holds the files that have a durable name back; further names
	// get copies.
	placed  map[*inode]bool
	stashes []string
	errs    []error
}

func (r *restore) fail(err error) { r.errs = append(r.errs, err) }

func sortedNames(m map[string]*inode) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

func (r *restore) canon(d *inode) {
	entries := make(map[string]*inode, len(d.names))
	r.tree[d] = entries
	for _, n := range sortedNames(d.names) {
		c := d.names[n]
		if c.dir {
			if r.needed[c] {
				continue // a second parent: the first one keeps it
			}
			r.needed[c] = true
			entries[n] = c
			if c.listed {
				r.canon(c)
			}
			continue
		}
		r.needed[c] = true
		r.refs[c]++
		entries[n] = c
	}
}

// captureShared reads, while the disk is untouched, the content of every
// file that will be needed under more than one name: the restore will copy
// it.
func (r *restore) captureShared() {
	for ino, n := range r.refs {
		if n > 1 && !ino.captured && ino.path != "" {
			if err := r.fs.captureLocked(ino); err != nil {
				r.fail(err)
			}
		}
	}
}

// clear makes the live entries of the listed directory d (found at
// r.cur[d]) a subset of its durable entries, moving out of the way
// everything needed elsewhere.
func (r *restore) clear(d *inode, stash string) {
	at := r.cur[d]
	entries, err := os.ReadDir(at)
	if err != nil {
		r.fail(err)
		return
	}
	durable := r.tree[d]
	for _, e := range entries {
		name := e.Name()
		real := filepath.Join(at, name)
		if slices.Contains(r.stashes, real) {
			continue
		}
		live := r.fs.byPath[filepath.Join(d.path, name)]
		want := durable[name]
		if live == nil {
			// Not made through the FS: leave it, unless it is in the
			// way of a durable entry.
			if want != nil {
				r.remove(real)
			}
			continue
		}
		r.cur[live] = real
		if live == want {
			r.keptAt[live] = entry{d, name}
			if live.dir && live.listed {
				r.clear(live, stash)
			}
			continue
		}
		if r.needed[live] {
			to := filepath.Join(stash, strconv.FormatUint(live.id, 10))
			if err := os.Rename(real, to); err != nil {
				r.fail(err)
				continue
			}
			r.cur[live] = to
			r.stashed[live] = to
			if live.dir && live.listed {
				r.clear(live, stash)
			}
			continue
		}
		if live.dir && live.listed {
			r.evacuate(live, stash)
		}
		r.remove(real)
	}
}

// evacuate moves everything needed out of the listed directory d, which is
// about to be deleted.
func (r *restore) evacuate(d *inode, stash string) {
	at := r.cur[d]
	entries, err := os.ReadDir(at)
	if err != nil {
		r.fail(err)
		return
	}
	for _, e := range entries {
		real := filepath.Join(at, e.Name())
		live := r.fs.byPath[filepath.Join(d.path, e.Name())]
		if live == nil {
			continue
		}
		r.cur[live] = real
		if r.needed[live] {
			to := filepath.Join(stash, strconv.FormatUint(live.id, 10))
			if err := os.Rename(real, to); err != nil {
				r.fail(err)
				continue
			}
			r.cur[live] = to
			r.stashed[live] = to
			if live.dir && live.listed {
				r.clear(live, stash)
			}
		} else if live.dir && live.listed {
			r.evacuate(live, stash)
		}
	}
}

func (r *restore) remove(p string) {
	if err := os.RemoveAll(p); err != nil {
		r.fail(err)
	}
}

// place puts the durable entries of the listed directory d, now at its
// durable path r.cur[d], back in place, with their durable bytes.
func (r *restore) place(d *inode) {
	entries := r.tree[d]
	for _, n := range sortedNames(entries) {
		c := entries[n]
		target := filepath.Join(r.cur[d], n)
		inPlace := r.keptAt[c] == entry{d, n}
		switch {
		case inPlace:
		case r.stashed[c] != "":
			if err := os.Rename(r.stashed[c], target); err != nil {
				r.fail(err)
				continue
			}
			delete(r.stashed, c)
		case c.dir:
			if err := os.Mkdir(target, c.perm|0o700); err != nil {
				r.fail(err)
				continue
			}
		default:
			// Removed, or durable under another name too: a new file.
			if !c.captured {
				r.fail(fmt.Errorf("vfs: faultfs: durable content of %s is unknown", target))
				continue
			}
			if err := os.WriteFile(target, c.durable, c.perm|0o600); err != nil {
				r.fail(err)
				continue
			}
			if r.keptAt[c] != (entry{}) || r.placed[c] {
				// The original lives on under its other name; this copy
				// is a separate file from now on.
				r.fs.nextID++
				entries[n] = &inode{id: r.fs.nextID, perm: c.perm}
			}
			r.placed[c] = true
			continue
		}
		r.cur[c] = target
		if c.dir {
			if c.listed {
				r.place(c)
			}
			continue
		}
		r.placed[c] = true
		if err := restoreContent(c, target); err != nil {
			r.fail(err)
		}
	}
}

// restoreContent gives the file at path the durable bytes of c, writing
// only from the first byte that differs.
func restoreContent(c *inode, path string) error {
	if !c.captured {
		return nil // never changed through the FS: disk is durable
	}
	cur, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if bytes.Equal(cur, c.durable) {
		return nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	i := 0
	for i < len(cur) && i < len(c.durable) && cur[i] == c.durable[i] {
		i++
	}
	if _, err := f.WriteAt(c.durable[i:], int64(i)); err != nil {
		f.Close()
		return err
	}
	if err := f.Truncate(int64(len(c.durable))); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// rebuildLocked makes the restored durable tree the live model: paths
// follow the durable names and every file's disk content is now its
// durable content, so no snapshot needs to be kept.
func (fs *FS) rebuildLocked(roots []*inode, tree map[*inode]map[string]*inode) {
	fs.byPath = make(map[string]*inode, len(fs.byPath))
	var walk func(d *inode)
	walk = func(d *inode) {
		fs.byPath[d.path] = d
		entries, ok := tree[d]
		if !ok {
			return
		}
		d.names = entries
		for n, c := range entries {
			c.path = filepath.Join(d.path, n)
			if c.dir {
				walk(c)
				continue
			}
			fs.byPath[c.path] = c
			c.captured, c.durable, c.spare = false, nil, nil
		}
	}
	for _, root := range roots {
		walk(root)
	}
}

package faultfs

import (
	"path/filepath"
	"slices"
)

// UnsyncedEntries returns, sorted, the names in dir whose entry a power cut
// now would change: created, removed or renamed since the directory's last
// SyncDir.
func (fs *FS) UnsyncedEntries(dir string) ([]string, error) {
	abs, err := absPath(dir)
	if err != nil {
		return nil, err
	}
	fs.cutMu.RLock()
	defer fs.cutMu.RUnlock()
	fs.nsMu.Lock()
	defer fs.nsMu.Unlock()
	d, err := fs.listDirLocked(abs)
	if err != nil {
		return nil, err
	}
	live, err := fs.liveNamesLocked(d)
	if err != nil {
		return nil, err
	}
	var out []string
	for name, ino := range live {
		if d.names[name] != ino {
			out = append(out, name)
		}
	}
	for name := range d.names {
		if _, ok := live[name]; !ok {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out, nil
}

// SyncEntry makes the current state of the one entry name of dir durable
// (present as it is now, or absent), leaving the directory's other
// unsynced changes as they are. It is not an operation of the code under
// test (no hook runs): a test calls it just before PowerCut to model a file
// system that wrote some of a directory's changes ahead of others, which
// POSIX allows until SyncDir. Code whose promise rests on the order of two
// changes in one directory must SyncDir between them; a test that persists
// the later change alone finds out if it does not.
func (fs *FS) SyncEntry(dir, name string) error {
	abs, err := absPath(dir)
	if err != nil {
		return err
	}
	fs.cutMu.RLock()
	defer fs.cutMu.RUnlock()
	fs.nsMu.Lock()
	defer fs.nsMu.Unlock()
	d, err := fs.listDirLocked(abs)
	if err != nil {
		return err
	}
	ino, err := fs.lookupLocked(filepath.Join(abs, name))
	if err != nil {
		return err
	}
	names := make(map[string]*inode, len(d.names)+1)
	for k, v := range d.names {
		names[k] = v
	}
	if ino == nil {
		delete(names, name)
	} else {
		names[name] = ino
	}
	d.names = names
	return nil
}

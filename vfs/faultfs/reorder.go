package faultfs

import (
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
// unsynced changes as they are. A rename within dir is one change: the
// entry it came from or went to is made durable with it, since file
// systems make such a rename atomic. SyncEntry is not an operation of the
// code under test (no hook runs): a test calls it just before PowerCut to
// model a file system that wrote some of a directory's changes ahead of
// others, which POSIX allows until SyncDir. Code whose promise rests on the
// order of two changes in one directory must SyncDir between them; a test
// that persists the later change alone finds out if it does not.
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
	live, err := fs.liveNamesLocked(d)
	if err != nil {
		return err
	}
	// The names one change spans: name, and transitively every other name
	// that the same file had durably or has now (the other half of a
	// rename within dir).
	todo, group := []string{name}, map[string]bool{name: true}
	for len(todo) > 0 {
		n := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		for _, ino := range []*inode{live[n], d.names[n]} {
			if ino == nil {
				continue
			}
			for _, m := range [2]map[string]*inode{live, d.names} {
				for other, o := range m {
					if o == ino && !group[other] {
						group[other] = true
						todo = append(todo, other)
					}
				}
			}
		}
	}
	names := make(map[string]*inode, len(d.names)+len(group))
	for k, v := range d.names {
		names[k] = v
	}
	for n := range group {
		if ino := live[n]; ino != nil {
			names[n] = ino
		} else {
			delete(names, n)
		}
	}
	d.names = names
	return nil
}

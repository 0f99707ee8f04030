package folio

import (
	"errors"
	"fmt"
	"os"

	"github.com/foliolog/folio/log"
	"github.com/foliolog/folio/topic"
	"github.com/foliolog/folio/vfs"
)

// readOnlyFS is the file layer of a read-only Broker: it passes reads
// through and refuses every change with ErrReadOnly. Whatever a lower layer
// would repair at open (a torn tail, an orphaned partition directory of a
// create in progress in the live writer) it cannot touch; such an open
// fails instead of damaging the directory a live Broker is writing.
type readOnlyFS struct {
	fs vfs.FS
}

const writeFlags = os.O_WRONLY | os.O_RDWR | os.O_CREATE | os.O_TRUNC | os.O_APPEND

func (r readOnlyFS) refuse(op, path string) error {
	return fmt.Errorf("%w: %s %s", ErrReadOnly, op, path)
}

func (r readOnlyFS) OpenFile(name string, flag int, perm os.FileMode) (vfs.File, error) {
	if flag&writeFlags != 0 {
		return nil, r.refuse("open for writing", name)
	}
	return r.fs.OpenFile(name, flag, perm)
}

func (r readOnlyFS) Rename(oldpath, newpath string) error { return r.refuse("rename", oldpath) }
func (r readOnlyFS) Remove(name string) error             { return r.refuse("remove", name) }
func (r readOnlyFS) SyncDir(dir string) error             { return r.refuse("sync", dir) }

// MkdirAll succeeds for a directory that exists, as os.MkdirAll does, so
// that openers which make sure of their directory still work.
func (r readOnlyFS) MkdirAll(path string, perm os.FileMode) error {
	if fi, err := r.fs.Stat(path); err == nil && fi.IsDir() {
		return nil
	}
	return r.refuse("mkdir", path)
}

func (r readOnlyFS) ReadDir(name string) ([]os.DirEntry, error) { return r.fs.ReadDir(name) }
func (r readOnlyFS) Stat(name string) (os.FileInfo, error)      { return r.fs.Stat(name) }

var _ vfs.FS = readOnlyFS{}

// Refresh brings a read-only Broker up to date with its directory, for a
// tool that follows a live writer in another process: it reads the topic
// catalog again (new topics and partitions appear, deleted topics go, and
// their consumers get ErrUnknownTopic) and has every partition's log look
// again (new records, rolled and deleted segments). No notification crosses
// processes, so a follower calls Refresh at an interval of its choosing;
// consumers waiting in Poll wake when a Refresh makes records visible. Only
// complete batches that pass their checks become visible. On a writable
// Broker, whose view is always current, Refresh does nothing.
func (b *Broker) Refresh() error {
	if b.closed.Load() {
		return ErrClosed
	}
	if !b.readOnly {
		return nil
	}
	b.topicsMu.Lock()
	defer b.topicsMu.Unlock()
	if b.closed.Load() {
		return ErrClosed
	}
	cat, err := topic.OpenCatalog(b.dir, &topic.Options{FS: b.fs, Now: b.opts.Now, ReadOnly: true})
	if err != nil {
		return fmt.Errorf("folio: refreshing %s: %w", b.dir, err)
	}
	infos, err := cat.List()
	_ = cat.Close() // a read-only catalog is a snapshot: List is all it gives
	if err != nil {
		return fmt.Errorf("folio: refreshing %s: %w", b.dir, err)
	}
	old := *b.topics.Load()
	next := make(map[string]*topicState, len(infos))
	var errs []error
	for _, in := range infos {
		ts := &topicState{info: in, parts: make([]*brokerPart, in.Config.Partitions)}
		if prev := old[in.Name]; prev != nil && prev.info.ID == in.ID {
			copy(ts.parts, prev.parts)
		}
		for i := range ts.parts {
			if ts.parts[i] != nil {
				if err := ts.parts[i].Refresh(); err != nil {
					errs = append(errs, fmt.Errorf("folio: %w", err))
				}
				continue
			}
			p, err := b.openPartition(in, int32(i), log.State{Clean: true})
			if err != nil {
				errs = append(errs, err)
				ts.parts = ts.parts[:i] // serve the partitions that opened
				break
			}
			ts.parts[i] = p
		}
		next[in.Name] = ts
	}
	// Topics the writer deleted (or deleted and created again) go.
	for name, ts := range old {
		if cur := next[name]; cur != nil && cur.info.ID == ts.info.ID {
			continue
		}
		for _, p := range ts.parts {
			if err := p.CloseDeleted(); err != nil && !errors.Is(err, log.ErrClosed) {
				errs = append(errs, err)
			}
		}
	}
	b.topics.Store(&next)
	b.topicsGen.Add(1)
	return errors.Join(errs...)
}

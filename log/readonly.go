package log

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"sync"

	"github.com/google/btree"

	"github.com/foliolog/folio/segment"
	"github.com/foliolog/folio/vfs"
)

// roLog is the state of a read-only log (Options.ReadOnly). Its segments
// are package segment's, opened with segment.OpenReadOnly (the last one
// followed), in the same btree and snapshots as a writable log's, so reads
// take the writable log's paths; only Refresh changes them.
type roLog struct {
	// refreshMu serialises Refresh and Close: it guards closed and every
	// change of l.tree and of what is published (the snapshot, the log
	// end with its mark, the high watermark). Readers do not take it.
	refreshMu     sync.Mutex
	closed        bool
	recoveryPoint int64 // what the owner's State said; see DurableEndOffset
}

// openReadOnly opens the log in dir for reading beside a live writer (see
// Options.ReadOnly). It changes nothing on disk.
func openReadOnly(fsys vfs.FS, dir string, o Options, st State) (*Log, error) {
	caps := o.Caps
	if caps == nil {
		caps = NewResourceCaps(0)
	}
	l := &Log{
		fs:        fsys,
		dir:       filepath.Clean(dir),
		opts:      o,
		caps:      caps,
		tree:      btree.NewG[*segEntry](16, lessEntry),
		hwWake:    newNotifier(),
		endWake:   newNotifier(),
		quit:      make(chan struct{}),
		sealKick:  make(chan struct{}, 1),
		flushKick: make(chan struct{}, 1),
		flushDone: make(chan struct{}),
		ro:        &roLog{recoveryPoint: max(st.RecoveryPoint, 0)},
	}
	l.live.Store(newLiveOptions(o))
	l.idle.L = &l.appendMu
	l.hwWake.level = l.waitLevel
	l.endWake.level = l.endWaitLevel
	l.recovery.Clean = st.Clean
	fi, err := fsys.Stat(l.dir)
	if err != nil {
		return nil, fmt.Errorf("log: open %s read-only: %w", l.dir, err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("log: open %s read-only: not a directory", l.dir)
	}
	// The first listing starts from the owner's log start offset; later
	// ones only move it up.
	start := max(st.LogStartOffset, 0)
	l.ro.refreshMu.Lock()
	defer l.ro.refreshMu.Unlock()
	l.publishRO(l.tree, start, mark{offset: start, segBase: -1})
	if err := l.refreshLocked(); err != nil {
		l.closeEntries(l.snap.Load().bases)
		return nil, err
	}
	return l, nil
}

// Refresh brings a read-only log up to date with its directory: it lists
// the segments again (the writer rolled, or retention deleted some) and
// finds the valid end of the last one again, then publishes the new log
// start, log end and high watermark, waking Wait and WaitChan callers if
// the end moved. Only complete batches that pass every check of recovery
// (CRC included) become visible; a batch the writer is still writing shows
// up at a later Refresh.
//
// A read-only log learns of another process's appends only through
// Refresh: there is no notification across processes, so a consumer that
// follows a live writer calls Refresh at an interval (and Wait or WaitChan
// then wake as in one process). A Refresh costs a directory listing, a
// stat, and reading the bytes appended since the last one.
//
// On a writable log Refresh does nothing: its view is always current. It
// returns ErrClosed after Close.
func (l *Log) Refresh() error {
	if l.ro == nil {
		if l.closed.Load() {
			return ErrClosed
		}
		return nil
	}
	l.ro.refreshMu.Lock()
	defer l.ro.refreshMu.Unlock()
	if l.ro.closed {
		return ErrClosed
	}
	return l.refreshLocked()
}

// refreshLocked lists the directory and publishes a new view. refreshMu
// must be held. A file the writer removed between the listing and the
// look at it (a truncation that restarted the log, say) is a race, not an
// error: the next listing shows the new state, so it lists again a few
// times before giving up.
func (l *Log) refreshLocked() error {
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		if err = l.refreshOnce(); !errors.Is(err, fs.ErrNotExist) {
			break
		}
	}
	return err
}

func (l *Log) refreshOnce() error {
	sn := l.snap.Load()
	bases, err := l.listBases()
	if err != nil {
		return err
	}
	old := make(map[int64]*segEntry, len(sn.bases))
	for _, e := range sn.bases {
		old[e.base] = e
	}
	var oldLast *segEntry
	if n := len(sn.bases); n > 0 {
		oldLast = sn.bases[n-1]
	}
	tree := btree.NewG[*segEntry](16, lessEntry)
	var fresh []*segEntry
	for i, b := range bases {
		isLast := i == len(bases)-1
		e := old[b]
		if e != nil && (e == oldLast) != isLast {
			// The writer rolled past what was the last segment, which is
			// complete now and read up to its size; or a truncation made
			// an older segment the last again, to follow from scratch.
			e = nil
		}
		if e == nil {
			seg, err := segment.OpenReadOnly(l.fs, l.dir, b, isLast, l.segOpts())
			if err != nil {
				l.closeEntries(fresh)
				return err
			}
			e = l.newEntry(seg)
			fresh = append(fresh, e)
		}
		tree.ReplaceOrInsert(e)
	}
	// Every segment is under the caps, the followed one too: closed when
	// idle, it is loaded again (and followed from its files) by the next
	// read or Refresh, so a read-only open of many partitions stays within
	// the descriptor budget as a writable one does.
	for _, e := range fresh {
		l.caps.setEligible(&e.capEntry)
	}
	start, end := sn.start, l.end.Load()
	m := mark{offset: end, segBase: -1}
	if last, ok := tree.Max(); ok {
		l.caps.acquire(&last.capEntry)
		pos, next, err := last.seg.Refresh()
		l.caps.release(&last.capEntry)
		if err != nil {
			// The new segments are not published; drop them.
			l.closeEntries(fresh)
			return err
		}
		first, _ := tree.Min()
		start = min(max(start, first.base), next)
		m = mark{offset: next, segBase: last.base, pos: pos}
	} else {
		// Nothing to read: a writer that restarts the log empty removes
		// every segment before creating the next one.
		start = end
	}
	l.tree = tree
	l.publishRO(tree, start, m)
	var dropped []*segEntry
	for _, e := range sn.bases {
		if x, ok := tree.Get(e); !ok || x != e {
			dropped = append(dropped, e)
		}
	}
	l.closeEntries(dropped)
	return nil
}

// listBases returns the base offsets of the directory's .log files,
// ascending. Files in transit (.deleted, .cleaned, .swap) are the writer's
// business and ignored.
func (l *Log) listBases() ([]int64, error) {
	ents, err := l.fs.ReadDir(l.dir)
	if err != nil {
		return nil, fmt.Errorf("log: list %s: %w", l.dir, err)
	}
	var bases []int64
	for _, de := range ents {
		base, suffix, ok := segment.ParseFileName(de.Name())
		if ok && !de.IsDir() && suffix == segment.LogSuffix {
			bases = append(bases, base)
		}
	}
	slices.Sort(bases)
	return bases, nil
}

// publishRO installs tree (which must not change afterwards) with the log
// start and moves the log end, its mark and the high watermark to m,
// waking waiters if it moved. refreshMu must be held: it makes Refresh the
// one writer of endPub, as appendMu does in a writable log.
func (l *Log) publishRO(tree *btree.BTreeG[*segEntry], start int64, m mark) {
	l.snap.Store(newSnapshot(tree, start))
	l.end.Store(m.offset)
	l.endPub.store(m)
	l.endWake.notify()
	l.durable.Store(min(max(l.ro.recoveryPoint, start), m.offset))
	if cur := l.hw.Load(); cur != nil && *cur == m {
		return
	}
	l.hw.Store(&m)
	l.hwWake.notify()
}

// closeEntries drops segments for good (their views stay valid).
func (l *Log) closeEntries(es []*segEntry) {
	for _, e := range es {
		l.caps.forget(&e.capEntry)
		// Nothing was written through these files: closing loses nothing.
		_ = e.seg.Close()
	}
}

// closeReadOnly is Close of a read-only log.
func (l *Log) closeReadOnly() error {
	l.ro.refreshMu.Lock()
	if l.ro.closed {
		l.ro.refreshMu.Unlock()
		return ErrClosed
	}
	l.ro.closed = true
	l.closed.Store(true)
	sn := l.snap.Load()
	l.ro.refreshMu.Unlock()
	l.hwWake.broadcast()
	l.endWake.broadcast()
	var errs []error
	for _, e := range sn.bases {
		l.caps.forget(&e.capEntry)
		errs = append(errs, e.seg.Close())
	}
	return errors.Join(errs...)
}

// readOnlyErr returns ErrReadOnly from the calls that would write.
func (l *Log) readOnlyErr(op string) error {
	return fmt.Errorf("%w: %s of %s", ErrReadOnly, op, l.dir)
}

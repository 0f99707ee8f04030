package log

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/btree"

	"github.com/foliolog/folio/readpath"
	"github.com/foliolog/folio/segment"
	"github.com/foliolog/folio/vfs"
)

// roLog is the state of a read-only log (Options.ReadOnly): the segments as
// the directory last listed them and the valid end of the last one. It
// changes only in Refresh.
type roLog struct {
	// refreshMu serialises Refresh and Close: it guards closed and every
	// change of view. Readers do not take it; they load view.
	refreshMu     sync.Mutex
	closed        bool
	recoveryPoint int64 // what the owner's State said; see DurableEndOffset

	view atomic.Pointer[roView]
}

// roView is what readers of a read-only log work on: immutable once
// published.
type roView struct {
	segs  []*roSeg // ascending base offsets; the last one is the writer's active segment
	start int64
	end   roEnd // in the last segment: its valid end
}

func (v *roView) last() *roSeg {
	if len(v.segs) == 0 {
		return nil
	}
	return v.segs[len(v.segs)-1]
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
		quit:      make(chan struct{}),
		sealKick:  make(chan struct{}, 1),
		flushKick: make(chan struct{}, 1),
		flushDone: make(chan struct{}),
		ro:        &roLog{recoveryPoint: max(st.RecoveryPoint, 0)},
	}
	l.idle.L = &l.appendMu
	l.hwWake.level = l.waitLevel
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
	l.ro.view.Store(&roView{start: max(st.LogStartOffset, 0), end: roEnd{pos: 0, next: max(st.LogStartOffset, 0)}})
	l.ro.refreshMu.Lock()
	defer l.ro.refreshMu.Unlock()
	if err := l.refreshLocked(); err != nil {
		l.closeROSegs(l.ro.view.Load().segs)
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
	old := l.ro.view.Load()
	bases, err := l.listBases()
	if err != nil {
		return err
	}
	oldByBase := make(map[int64]*roSeg, len(old.segs))
	for _, s := range old.segs {
		oldByBase[s.base] = s
	}
	oldLast := old.last()
	segs := make([]*roSeg, 0, len(bases))
	var dropped []*roSeg
	var becameSealed []*roSeg
	keep := map[*roSeg]bool{}
	for i, b := range bases {
		isLast := i == len(bases)-1
		s := oldByBase[b]
		if s != nil && !isLast && s == oldLast {
			// The writer rolled past what was the last segment: it is
			// complete now, and read up to its size from here on.
			fresh, err := s.seal()
			if err != nil {
				return err
			}
			if !fresh {
				s = nil // its file was replaced meanwhile
			} else {
				becameSealed = append(becameSealed, s)
			}
		}
		if s != nil && isLast && s != oldLast {
			// A truncation made an older segment the last again: learn
			// its end from scratch.
			s = nil
		}
		if s == nil {
			mapSize := int64(0)
			if isLast && l.opts.ReadPath == readpath.Mmap {
				mapSize = l.opts.SegmentBytes
			}
			s = newROSeg(l.fs, l.dir, b, l.opts.ReadPath, mapSize, &l.openSealed)
		}
		keep[s] = true
		segs = append(segs, s)
	}
	for _, s := range old.segs {
		if !keep[s] {
			dropped = append(dropped, s)
		}
	}

	v := &roView{segs: segs, start: old.start}
	if last := v.last(); last == nil {
		// Nothing to read: a writer that restarts the log empty removes
		// every segment before creating the next one.
		v.start = old.end.next
		v.end = roEnd{pos: 0, next: old.end.next}
	} else {
		from := roEnd{pos: 0, next: last.base}
		if last == oldLast {
			from = old.end
		}
		v.end, err = l.lastEnd(last, from)
		if errors.Is(err, errReplaced) {
			// The writer replaced the file (a truncation that copied the
			// kept prefix aside): read the new one from scratch.
			fresh := newROSeg(l.fs, l.dir, last.base, l.opts.ReadPath, last.mapSize, &l.openSealed)
			if last == oldLast {
				dropped = append(dropped, last)
			}
			segs[len(segs)-1] = fresh
			last = fresh
			v.end, err = l.lastEnd(last, roEnd{pos: 0, next: last.base})
		}
		if err != nil {
			// The new segments are not published; drop them.
			var fresh []*roSeg
			for _, s := range segs {
				if oldByBase[s.base] != s {
					fresh = append(fresh, s)
				}
			}
			l.closeROSegs(fresh)
			return err
		}
		v.start = min(max(v.start, segs[0].base), v.end.next)
	}
	l.publishRO(v)
	for _, s := range becameSealed {
		if s.loaded() {
			l.caps.add(&s.capEntry)
		} else {
			l.caps.setEligible(&s.capEntry)
		}
	}
	for _, s := range segs[:max(len(segs)-1, 0)] {
		if oldByBase[s.base] != s {
			l.caps.setEligible(&s.capEntry)
		}
	}
	l.closeROSegs(dropped)
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

// lastEnd finds the valid end of the last segment, going on from a known
// valid end when the file is the same one and has not shrunk below it.
// The last segment is not under the caps: like the writer's active one it
// keeps its files open.
func (l *Log) lastEnd(s *roSeg, from roEnd) (roEnd, error) {
	f, err := s.acquire()
	if err != nil {
		return roEnd{}, err
	}
	defer s.filesMu.RUnlock()
	fi, err := l.fs.Stat(s.path)
	if err != nil {
		return roEnd{}, fmt.Errorf("log: stat %s: %w", s.path, err)
	}
	if !os.SameFile(fi, f.id) {
		return roEnd{}, fmt.Errorf("%w: %s", errReplaced, s.path)
	}
	size := fi.Size()
	if from.pos > 0 && from.pos <= size {
		end, err := s.walkValid(f, from, size)
		if err != nil || end.pos > from.pos || size == from.pos {
			return end, err
		}
		// Nothing new passed although the file holds more: either the
		// writer is mid-batch, or it truncated and wrote again over the
		// bytes after from. Only a fresh look can tell.
	}
	return s.findEnd(f, size)
}

// errReplaced: the last segment's file is not the one its roSeg opened.
var errReplaced = errors.New("log: segment file replaced")

// seal turns what was the last segment into one read up to its file's size,
// and reports false if its file was replaced (it must then be read anew).
func (s *roSeg) seal() (fresh bool, err error) {
	s.filesMu.Lock()
	defer s.filesMu.Unlock()
	if s.files == nil {
		return true, nil // the next load stats it
	}
	fi, err := s.fs.Stat(s.path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("log: stat %s: %w", s.path, err)
	}
	if !os.SameFile(fi, s.files.id) {
		return false, nil
	}
	s.files.size = fi.Size()
	return true, nil
}

// publishRO installs a new view and moves the offsets readers see.
// refreshMu must be held.
func (l *Log) publishRO(v *roView) {
	l.ro.view.Store(v)
	l.snap.Store(newSnapshot(l.tree, v.start))
	l.end.Store(v.end.next)
	l.durable.Store(min(max(l.ro.recoveryPoint, v.start), v.end.next))
	var base int64 = -1
	if last := v.last(); last != nil {
		base = last.base
	}
	m := mark{offset: v.end.next, segBase: base, pos: v.end.pos}
	if cur := l.hw.Load(); cur != nil && *cur == m {
		return
	}
	l.hw.Store(&m)
	l.hwWake.notify()
}

// closeROSegs drops segments for good (their views stay valid).
func (l *Log) closeROSegs(segs []*roSeg) {
	for _, s := range segs {
		l.caps.forget(&s.capEntry)
		// Nothing was written through these files: closing loses nothing.
		_ = s.close()
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
	v := l.ro.view.Load()
	l.ro.refreshMu.Unlock()
	l.hwWake.broadcast()
	var errs []error
	for _, s := range v.segs {
		l.caps.forget(&s.capEntry)
		errs = append(errs, s.close())
	}
	return errors.Join(errs...)
}

// readOnlyErr returns ErrReadOnly from the calls that would write.
func (l *Log) readOnlyErr(op string) error {
	return fmt.Errorf("%w: %s of %s", ErrReadOnly, op, l.dir)
}

// readRO is Read of a read-only log.
func (l *Log) readRO(offset int64, maxBytes int) (*readpath.View, error) {
	for attempt := 0; ; attempt++ {
		if l.closed.Load() {
			return nil, ErrClosed
		}
		v := l.ro.view.Load()
		if offset < v.start || offset > v.end.next {
			return nil, &OffsetOutOfRangeError{Offset: offset, Start: v.start, End: v.end.next}
		}
		if offset >= v.end.next {
			return nil, ErrNoData
		}
		view, err := l.readROView(v, offset, maxBytes)
		if err == nil || attempt > 0 {
			return view, err
		}
		switch {
		case errors.Is(err, errSegGone):
			// A Refresh or Close dropped the segment: look again.
		case errors.Is(err, fs.ErrNotExist):
			// The writer deleted the segment (retention) since the last
			// listing: list again, and the log start moves past it.
			if rerr := l.Refresh(); rerr != nil {
				return nil, errors.Join(err, rerr)
			}
		default:
			return nil, err
		}
	}
}

func (l *Log) readROView(v *roView, offset int64, maxBytes int) (*readpath.View, error) {
	i := floorRO(v.segs, offset)
	for ; i < len(v.segs); i++ {
		s := v.segs[i]
		limit := int64(-1)
		if i == len(v.segs)-1 {
			limit = v.end.pos
		}
		l.caps.acquire(&s.capEntry)
		view, err := s.read(max(offset, s.base), maxBytes, limit)
		l.caps.release(&s.capEntry)
		if err == nil {
			return view, nil
		}
		if !errors.Is(err, errNotInSegment) {
			return nil, markCorrupt(fmt.Errorf("log: read %s at %d: %w", l.dir, offset, err))
		}
	}
	return nil, ErrNoData
}

// floorRO returns the index of the segment with the largest base at or
// below offset, else 0.
func floorRO(segs []*roSeg, offset int64) int {
	i, found := slices.BinarySearchFunc(segs, offset, func(s *roSeg, o int64) int {
		switch {
		case s.base < o:
			return -1
		case s.base > o:
			return 1
		}
		return 0
	})
	if found {
		return i
	}
	return max(i-1, 0)
}

// offsetForTimeRO is OffsetForTime of a read-only log.
func (l *Log) offsetForTimeRO(t time.Time) (int64, bool, error) {
	ts := t.UnixMilli()
	for attempt := 0; ; attempt++ {
		if l.closed.Load() {
			return 0, false, ErrClosed
		}
		v := l.ro.view.Load()
		off, ok, err := l.offsetForTimeView(v, ts)
		if err == nil || attempt > 0 {
			return off, ok, err
		}
		switch {
		case errors.Is(err, errSegGone):
		case errors.Is(err, fs.ErrNotExist):
			if rerr := l.Refresh(); rerr != nil {
				return 0, false, errors.Join(err, rerr)
			}
		default:
			return 0, false, err
		}
	}
}

func (l *Log) offsetForTimeView(v *roView, ts int64) (int64, bool, error) {
	for i, s := range v.segs {
		if i+1 < len(v.segs) && v.segs[i+1].base <= v.start {
			continue // wholly below the log start
		}
		limit := int64(-1)
		if i == len(v.segs)-1 {
			limit = v.end.pos
		}
		l.caps.acquire(&s.capEntry)
		off, ok, err := s.offsetForTime(ts, limit)
		l.caps.release(&s.capEntry)
		if err != nil {
			return 0, false, markCorrupt(fmt.Errorf("log: offset for time %d in %s: %w", ts, l.dir, err))
		}
		if ok {
			off = max(off, v.start)
			if off >= v.end.next {
				return 0, false, nil
			}
			return off, true, nil
		}
	}
	return 0, false, nil
}

// statsRO fills the parts of Stats that a read-only log knows.
func (l *Log) statsRO(st *Stats) {
	v := l.ro.view.Load()
	st.Segments = len(v.segs)
	for i, s := range v.segs {
		if i == len(v.segs)-1 {
			st.Bytes += v.end.pos
			continue
		}
		if size, ok := s.loadedSize(); ok {
			st.Bytes += size
			continue
		}
		if fi, err := l.fs.Stat(s.path); err == nil {
			st.Bytes += fi.Size()
		}
	}
}

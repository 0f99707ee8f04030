package segment

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/foliolog/folio/errs"
	"github.com/foliolog/folio/index"
	"github.com/foliolog/folio/record"
	"github.com/foliolog/folio/vfs"
)

// A read-only segment (OpenReadOnly) reads a segment that a writer in
// another process owns. It opens every file O_RDONLY and never writes,
// creates, renames or removes one: an index file is a hint, used once it
// passes the checks a writable segment applies (the O(1) sanity check at
// open, the last entries against the .log, every entry a lookup uses
// against the batch it points at), and rebuilt in memory from the .log when
// it fails them. The live writer's active index always does (its
// preallocated tail is zeros), so a followed segment reads its index files
// as far as their entries are in order, checks the last ones, and indexes
// in memory the batches after them, and those Refresh makes visible.

// OpenReadOnly returns the segment with base offset base in dir for
// reading beside its writer (the log's Options.ReadOnly). Like Open it
// touches nothing until first use; every method that would write (Append,
// Activate, Seal, TruncateTo, Recover, Delete) returns ErrReadOnly.
//
// With follow false the segment is one its writer is done with (sealed, or
// rolled past): it reads up to its .log's size when loaded, as a sealed
// segment does. With follow true it is the writer's active segment, still
// growing: only the valid batches (every check of Recover, CRC included)
// are visible, up to the .log's size when loaded, and Refresh makes those
// written since visible. A followed segment is mapped at MaxSegmentBytes
// (Options.ReadPath Mmap), so that the mapping covers it as it grows.
func OpenReadOnly(fsys vfs.FS, dir string, base int64, follow bool, opts *Options) (*Segment, error) {
	s, err := newSegment(fsys, dir, base, opts)
	if err != nil {
		return nil, err
	}
	s.ro, s.follow = true, follow
	s.sealed.Store(true)
	return s, nil
}

// ReadOnly reports whether the segment was opened with OpenReadOnly.
func (s *Segment) ReadOnly() bool { return s.ro }

func (s *Segment) readOnlyErr(op string) error {
	return fmt.Errorf("%w: %s of %s", ErrReadOnly, op, s.logPath)
}

// Refresh brings a followed read-only segment up to date with its .log:
// the valid batches the writer appended since the last look become
// visible, and it returns where they end (pos, the size of the visible
// batches) and the offset after the last (next; the base offset when
// there is none). A batch still being written shows up at a later Refresh.
// A .log that the writer cut, or replaced by another file (a truncation
// that copied the kept prefix aside), is read again from the start; views
// already handed out keep the old bytes. A .log the writer removed is an
// error matching fs.ErrNotExist. Refresh of a segment not followed only
// loads it.
func (s *Segment) Refresh() (pos, next int64, err error) {
	s.appendMu.Lock()
	defer s.appendMu.Unlock()
	s.resMu.Lock()
	err = s.loadLocked()
	f := s.files
	s.resMu.Unlock()
	if err != nil {
		return 0, 0, err
	}
	t := s.tip.Load()
	if !s.ro || !s.follow {
		return t.size, t.next, nil
	}
	fi, err := s.fs.Stat(s.logPath)
	if err != nil {
		return 0, 0, fmt.Errorf("segment: stat %s: %w", s.logPath, err)
	}
	if os.SameFile(fi, f.id) && fi.Size() >= t.size {
		if fi.Size() == t.size {
			return t.size, t.next, nil
		}
		grew, err := s.followLocked(f, t, fi.Size())
		if err != nil || grew {
			t = s.tip.Load()
			return t.size, t.next, err
		}
		// Nothing new passed although the file holds more: the writer is
		// mid-batch, or it cut the file and wrote again over the bytes
		// after the end. Only a fresh look tells.
	}
	s.resMu.Lock()
	defer s.resMu.Unlock()
	if s.closed.Load() {
		return 0, 0, fmt.Errorf("%w: %s", ErrClosed, s.logPath)
	}
	if s.files != nil {
		err = s.closeFiles(s.files)
		s.files = nil
	}
	if err = errors.Join(err, s.loadLocked()); err != nil {
		return 0, 0, err
	}
	t = s.tip.Load()
	return t.size, t.next, nil
}

// followLocked makes visible the valid batches from t.size up to size
// (the .log's size now) and indexes them in memory, and reports whether
// there were any. appendMu must be held.
func (s *Segment) followLocked(f *files, t *tip, size int64) (grew bool, err error) {
	x := &indexer{interval: int64(s.opts.IndexIntervalBytes), since: s.sinceIndex, t: *t}
	type entry struct {
		pos int64
		h   record.Batch
		t   tip
	}
	var entries []entry
	end, err := s.walkValid(f.scanFile(), t.size, t.next-1, size, func(pos int64, h record.Batch) {
		if x.observe(pos, h) {
			entries = append(entries, entry{pos: pos, h: append(record.Batch(nil), h...), t: x.t})
		}
	})
	if err != nil || end == t.size {
		return false, err
	}
	// Published before the entries, as Append does: a reader that found an
	// entry then loads a tip that covers its batch.
	s.tip.Store(&x.t)
	s.sinceIndex = x.since
	for _, e := range entries {
		if err := appendEntries(f.off, f.time, e.pos, e.h, &e.t); err != nil && !errors.Is(err, index.ErrFull) {
			// The indexes are hints: a lookup scans further without them.
			return true, fmt.Errorf("segment: index %s in memory: %w", s.logPath, err)
		}
	}
	return true, nil
}

// walkValid walks the batches of the .log r from position from, whose
// batch must start above offset prevLast, up to size, checking each as
// Recover does (CRC included), calls fn for each that passes, and returns
// where the last one that passes ends. It stops at the first that fails or
// is not whole yet; only I/O errors are errors.
func (s *Segment) walkValid(r io.ReaderAt, from, prevLast, size int64, fn func(pos int64, h record.Batch)) (int64, error) {
	if from >= size {
		return from, nil
	}
	q := newSeqReader(r, size)
	defer q.free()
	var hdr [record.HeaderSize]byte
	pos := from
	for pos < size {
		_, cause, err := s.checkBatch(q, pos, prevLast, false, hdr[:])
		if err != nil {
			return pos, fmt.Errorf("segment: read %s: %w", s.logPath, err)
		}
		if cause != nil {
			break
		}
		h := record.Batch(hdr[:])
		fn(pos, h)
		prevLast = h.LastOffset()
		pos += int64(h.Size())
	}
	return pos, nil
}

// loadReadOnlyLocked is loadLocked of a read-only segment. resMu must be
// held exclusively.
func (s *Segment) loadReadOnlyLocked() error {
	f := &files{}
	if err := s.openSource(f, s.follow); err != nil {
		return err
	}
	var fi os.FileInfo
	var err error
	if rf := f.scanFile(); rf != nil {
		fi, err = rf.Stat()
	} else {
		fi, err = s.fs.Stat(s.logPath)
	}
	if err != nil {
		return errors.Join(fmt.Errorf("segment: stat %s: %w", s.logPath, err), s.closeFiles(f))
	}
	if fi.Size() > MaxSegmentBytesLimit {
		return errors.Join(errs.Corruptf(ErrCorrupt, s.logPath, -1, "%d bytes, above the %d a segment can index", fi.Size(), MaxSegmentBytesLimit), s.closeFiles(f))
	}
	f.id = fi
	var t *tip
	if s.follow {
		t, err = s.loadFollowed(f, fi.Size())
	} else {
		t, err = s.openIndexes(f, fi.Size(), false) // rebuilt in memory if need be
	}
	if err != nil {
		return errors.Join(err, s.closeFiles(f))
	}
	s.files = f
	s.tip.Store(t)
	return nil
}

// loadFollowed loads the writer's active segment, whose .log is size bytes
// now: its index files as far as their entries are in order, cut back to
// the last offset entry that checks out against the .log (of the last
// three); from that entry's batch a walk with every check of Recover finds
// the end of the valid batches, indexing them in memory as it goes.
func (s *Segment) loadFollowed(f *files, size int64) (*tip, error) {
	offs, err := index.ReadOffsetEntries(s.fs, s.offPath, s.base)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	times, err := index.ReadTimeEntries(s.fs, s.timePath, s.base)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	sc := s.newScanner(f.scanFile(), size)
	k := len(offs) - 1
	for ; k >= 0 && k >= len(offs)-3; k-- {
		if s.entryMatches(&sc, offs[k]) {
			break
		}
	}
	sc.free()
	if k < len(offs)-3 {
		k = -1
	}
	offs = offs[:k+1]
	from, prevLast := int64(0), s.base-1
	if k >= 0 {
		// The batch at the entry ends at its offset; the walk checks it
		// again with its CRC.
		from = offs[k].Position
	}
	end, err := s.walkValid(f.scanFile(), from, prevLast, size, func(int64, record.Batch) {})
	if err != nil {
		return nil, err
	}
	if k >= 0 && end == from {
		// The indexed batch itself fails: trust nothing of the index.
		offs, from = nil, 0
		if end, err = s.walkValid(f.scanFile(), 0, prevLast, size, func(int64, record.Batch) {}); err != nil {
			return nil, err
		}
	}
	for len(times) > 0 && len(offs) > 0 && times[len(times)-1].Offset > offs[len(offs)-1].Offset {
		times = times[:len(times)-1] // entries go in at the offset entries' points
	}
	if len(offs) == 0 {
		times = nil
	}
	f.off, err = index.NewOffsetInMemory(s.offPath, s.base, offs, s.indexOpts())
	if err == nil {
		f.time, err = index.NewTimeInMemory(s.timePath, s.base, times, s.indexOpts())
	}
	if err != nil {
		return nil, err
	}
	c := s.pinned(f, &tip{size: end})
	defer c.free()
	// The largest timestamp is found from the batch of the last time
	// entry when that comes before the last offset entry: the writer
	// appends a time entry just after the offset entry of the same batch,
	// so a look between the two sees an offset entry whose time entry is
	// not there yet, and the batches before it may hold the maximum.
	t, err := c.restore(true)
	if errors.Is(err, errStaleIndex) {
		s.rebuilds.Add(1)
		x, err := s.rebuildInMemory(f, c.sc)
		if err != nil {
			return nil, err
		}
		s.sinceIndex = x.since
		return &x.t, nil
	}
	if err != nil {
		return nil, err
	}
	s.sinceIndex = t.size
	if e, ok := f.off.LastEntry(); ok {
		s.sinceIndex = t.size - e.Position
	}
	return t, nil
}

// rebuildInMemory replaces f's indexes with ones built in memory from the
// batch headers below sc.limit, by the index rule; a segment not followed
// gets the final time entry and sealed indexes, as a sealed segment's.
func (s *Segment) rebuildInMemory(f *files, sc *scanner) (*indexer, error) {
	x := s.newIndexer()
	p := s.newPlan()
	if _, err := sc.walk(0, func(pos int64, h record.Batch) bool {
		if x.observe(pos, h) {
			p.add(pos, h, &x.t)
		}
		return true
	}); err != nil {
		return nil, err
	}
	if !s.follow {
		p.seal(&x.t)
	}
	if err := s.closeIndexes(f); err != nil {
		return nil, err
	}
	off, err := index.NewOffsetInMemory(s.offPath, s.base, p.offs, s.indexOpts())
	if err != nil {
		return nil, err
	}
	tm, err := index.NewTimeInMemory(s.timePath, s.base, p.times, s.indexOpts())
	if err != nil {
		return nil, err
	}
	if !s.follow {
		if err := errors.Join(off.Seal(), tm.Seal()); err != nil {
			return nil, err
		}
	}
	f.off, f.time = off, tm
	f.gen++
	return x, nil
}

package segment

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/foliolog/folio/index"
	"github.com/foliolog/folio/record"
	"github.com/foliolog/folio/vfs"
)

// indexer applies the index rule (see the package documentation) to a
// sequence of batches, the same way for Append, Recover and rebuilds.
type indexer struct {
	interval int64
	since    int64 // bytes since the last offset-index entry
	t        tip
}

func (s *Segment) newIndexer() *indexer {
	return &indexer{
		interval: int64(s.opts.IndexIntervalBytes),
		t:        tip{next: s.base, maxTs: index.NoTimestamp, maxTsOffset: -1},
	}
}

// observe accounts for the batch h at pos and reports whether it gets an
// index entry. It does not touch the indexes.
func (x *indexer) observe(pos int64, h record.Batch) (entry bool) {
	if ts := h.MaxTimestamp(); ts > x.t.maxTs {
		x.t.maxTs, x.t.maxTsOffset = ts, h.LastOffset()
	}
	entry = x.since > x.interval
	if entry {
		x.since = 0
	}
	x.since += int64(h.Size())
	x.t.size = pos + int64(h.Size())
	x.t.next = h.LastOffset() + 1
	return entry
}

// appendEntries adds the entries for the indexed batch h at pos: the
// batch's last offset at its position, and the maximum timestamp so far
// (which the time index skips unless it grew).
func appendEntries(off *index.OffsetIndex, tm *index.TimeIndex, pos int64, h record.Batch, t *tip) error {
	if err := off.Append(h.LastOffset(), pos); err != nil {
		return err
	}
	if t.maxTs > index.NoTimestamp {
		return tm.Append(t.maxTs, t.maxTsOffset)
	}
	return nil
}

// freshIndexes replaces both index files of f with empty writable ones.
func (s *Segment) freshIndexes(f *files) error {
	var errs []error
	if f.off != nil {
		errs = append(errs, f.off.Close())
		f.off = nil
	}
	if f.time != nil {
		errs = append(errs, f.time.Close())
		f.time = nil
	}
	for _, p := range []string{s.offPath, s.timePath} {
		if err := s.fs.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("segment: remove %s: %w", p, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	off, err := index.OpenOffset(s.fs, s.offPath, s.base, true, s.indexOpts())
	if err != nil {
		return err
	}
	tm, err := index.OpenTime(s.fs, s.timePath, s.base, true, s.indexOpts())
	if err != nil {
		return errors.Join(err, off.Close())
	}
	f.off, f.time = off, tm
	f.gen++
	f.checked.Store(nil) // empty, filled from the log
	return nil
}

// indexCheck is the state of the check of a sealed segment's index
// entries by the reads that walk it from its start: the batches before
// position pos, whose last offset is last, were walked, and the first
// off offset-index and time time-index entries matched them.
type indexCheck struct {
	pos, last int64
	off, time int
}

// checkEntries checks the index entries that the batches [pos, end) of a
// sealed segment account for, when the reads before checked every entry
// before pos (a read continuing a walk from the segment's start), and
// returns errStaleIndex on the first that does not match, so that the
// caller rebuilds the indexes from the log.
//
// Why: the open's check of an index is O(1) (its size, its first and last
// entries) and a lookup checks only the entry it uses, so an entry
// damaged in the middle of an index (a flipped byte) may never be met: an
// entry moved out of order is no binary search's answer, and reads from a
// segment's start use no lookup. Such an entry costs nothing, but folio
// verify reports it for ever. Reads that walk the whole segment, as a
// consumer from the start or a catching-up follower does, check each
// entry against the batch it names, as segment.Verify does: an offset
// entry must name a batch's start and last offset (never the first
// batch's), a time entry a batch's last offset and maximum timestamp, in
// the order of the batches, and a walk that reaches the segment's end
// must have used every entry. Each walk's part is checked once per load,
// after the read's own walk brought its headers in; other reads pay one
// atomic load.
func (c *cursor) checkEntries(pos, end int64) error {
	ck := c.f.checked.Load()
	if ck == nil || ck.pos != pos {
		return nil
	}
	off, tm := c.f.off, c.f.time
	next := *ck
	var bad error
	_, err := c.sc.walk(pos, func(p int64, h record.Batch) bool {
		if p >= end {
			return false
		}
		for ; next.off < off.Entries(); next.off++ {
			e := off.Entry(next.off)
			if e.Position > p {
				break
			}
			if e.Position < p || !offsetEntryFits(e, h) {
				bad = fmt.Errorf("%w: %s: entry %d (offset %d, position %d) is not the batch at %d ending at offset %d",
					errStaleIndex, c.s.offPath, next.off, e.Offset, e.Position, p, h.LastOffset())
				return false
			}
		}
		for ; next.time < tm.Entries(); next.time++ {
			e := tm.Entry(next.time)
			if e.Offset > h.LastOffset() {
				break
			}
			if !timeEntryFits(e, h) {
				bad = fmt.Errorf("%w: %s: entry %d (timestamp %d, offset %d) is not the batch at %d ending at offset %d with max timestamp %d",
					errStaleIndex, c.s.timePath, next.time, e.Timestamp, e.Offset, p, h.LastOffset(), h.MaxTimestamp())
				return false
			}
		}
		next.pos, next.last = p+int64(h.Size()), h.LastOffset()
		return true
	})
	switch {
	case bad != nil:
		return bad
	case err != nil || next.pos != end:
		return nil // the read's walk checked these headers; leave it to the next read
	case end >= c.t.size && (next.off < off.Entries() || next.time < tm.Entries()):
		return fmt.Errorf("%w: %s: entries %d of %d offset and %d of %d time entries name no batch of the segment",
			errStaleIndex, c.s.offPath, next.off, off.Entries(), next.time, tm.Entries())
	case end >= c.t.size:
		c.f.checked.CompareAndSwap(ck, nil) // every entry checked
	default:
		c.f.checked.CompareAndSwap(ck, &next)
	}
	return nil
}

// indexPlan holds, in memory, the entries the index rule gives a sequence
// of batches: what a rebuild appends to empty index files. It applies the
// index package's acceptance rules (the time index skips a timestamp that
// is not above its last one; a full index takes nothing more, and a batch
// whose offset entry does not fit gets no time entry either, as
// appendEntries stops there), so the files it writes are exactly those an
// entry-by-entry rebuild would make, and an index already holding them can
// be kept as it is.
type indexPlan struct {
	offs    []index.OffsetEntry
	times   []index.TimeEntry
	offCap  int // entries an index of MaxIndexBytes holds
	timeCap int
}

func (s *Segment) newPlan() *indexPlan {
	return &indexPlan{
		offCap:  int(s.opts.MaxIndexBytes / index.OffsetEntrySize),
		timeCap: int(s.opts.MaxIndexBytes / index.TimeEntrySize),
	}
}

// add records the entries of the indexed batch h at pos, given the state
// t after it (the maximum timestamp so far), as appendEntries would.
func (p *indexPlan) add(pos int64, h record.Batch, t *tip) {
	if len(p.offs) >= p.offCap {
		return
	}
	p.offs = append(p.offs, index.OffsetEntry{Offset: h.LastOffset(), Position: pos})
	p.addTime(t.maxTs, t.maxTsOffset)
}

func (p *indexPlan) addTime(ts, offset int64) {
	last := int64(index.NoTimestamp)
	if n := len(p.times); n > 0 {
		last = p.times[n-1].Timestamp
	}
	if ts > last && len(p.times) < p.timeCap {
		p.times = append(p.times, index.TimeEntry{Timestamp: ts, Offset: offset})
	}
}

// seal adds the final time entry a sealed segment gets (see Seal).
func (p *indexPlan) seal(t *tip) { p.addTime(t.maxTs, t.maxTsOffset) }

// rebuildIndexes rebuilds both indexes of f from the batch headers below
// sc.limit, applying the index rule, and returns the resulting state. With
// seal the indexes get the final time entry and are opened read-only (a
// sealed segment's); otherwise they are opened writable. A full index stops
// taking entries (lookups then scan further, still correctly). Readers must
// be excluded (resMu held exclusively, or f not yet published). An error
// after the scan may leave f without indexes (see dropFilesLocked).
func (s *Segment) rebuildIndexes(f *files, sc *scanner, seal bool) (*indexer, error) {
	x := s.newIndexer()
	p := s.newPlan()
	_, err := sc.walk(0, func(pos int64, h record.Batch) bool {
		if x.observe(pos, h) {
			p.add(pos, h, &x.t)
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	if seal {
		p.seal(&x.t)
	}
	if err := s.closeIndexes(f); err != nil {
		return nil, err
	}
	if err := s.writeIndexFiles(p); err != nil {
		return nil, err
	}
	if err := s.openIndexFiles(f, !seal); err != nil {
		return nil, err
	}
	return x, nil
}

// closeIndexes closes f's indexes, if open; Close waits out lookups still
// inside them.
func (s *Segment) closeIndexes(f *files) error {
	var errs []error
	if f.off != nil {
		errs = append(errs, f.off.Close())
		f.off = nil
	}
	if f.time != nil {
		errs = append(errs, f.time.Close())
		f.time = nil
	}
	return errors.Join(errs...)
}

// openIndexFiles opens both index files into f, writable or read-only,
// and marks the indexes rebuilt (gen).
func (s *Segment) openIndexFiles(f *files, writable bool) error {
	off, err := index.OpenOffset(s.fs, s.offPath, s.base, writable, s.indexOpts())
	if err != nil {
		return err
	}
	tm, err := index.OpenTime(s.fs, s.timePath, s.base, writable, s.indexOpts())
	if err != nil {
		return errors.Join(err, off.Close())
	}
	f.off, f.time = off, tm
	f.gen++
	f.checked.Store(nil) // built from the log, or about to be
	return nil
}

// writeIndexFiles makes both index files hold exactly p's entries, trimmed
// and durable (fsynced). A file that holds them already is left as it is
// and only fsynced: recovery after a crash mostly finds sealed segments
// whose indexes are right, and rewriting them would cost a create or a
// truncation, and writeback, per file. Otherwise the file is rewritten in
// place (its entries reset, the new ones appended, trimmed by Seal), and
// only a file the index package cannot open writable (one that fails its
// sanity check) is emptied first. The indexes must not be open in f.
func (s *Segment) writeIndexFiles(p *indexPlan) error {
	_, err := s.writeIndexFilesDefer(p, false)
	return err
}

// writeIndexFilesDefer is writeIndexFiles; with deferSync a file that
// holds p's entries already is not fsynced but returned, for the caller
// to fsync.
func (s *Segment) writeIndexFilesDefer(p *indexPlan, deferSync bool) ([]string, error) {
	var unsynced []string
	openOff := func(writable bool) (*index.OffsetIndex, error) {
		return index.OpenOffset(s.fs, s.offPath, s.base, writable, s.indexOpts())
	}
	same, err := writeIndexFile(s, s.offPath, p.offs, openOff, func(x *index.OffsetIndex, e index.OffsetEntry) error {
		return x.Append(e.Offset, e.Position)
	}, deferSync)
	if err != nil {
		return nil, err
	}
	if same {
		unsynced = append(unsynced, s.offPath)
	}
	openTime := func(writable bool) (*index.TimeIndex, error) {
		return index.OpenTime(s.fs, s.timePath, s.base, writable, s.indexOpts())
	}
	same, err = writeIndexFile(s, s.timePath, p.times, openTime, func(x *index.TimeIndex, e index.TimeEntry) error {
		return x.Append(e.Timestamp, e.Offset)
	}, deferSync)
	if err != nil {
		return nil, err
	}
	if same {
		unsynced = append(unsynced, s.timePath)
	}
	return unsynced, nil
}

// indexFile is what writeIndexFile needs of an *index.OffsetIndex or
// *index.TimeIndex with entries of type E.
type indexFile[E comparable] interface {
	Entries() int
	Entry(i int) E
	Reset() error
	Seal() error
	Close() error
}

// writeIndexFile is writeIndexFiles for the one index file at path: open
// opens it, add appends one entry.
// With deferSync, a file that holds want already is left unsynced, and
// unsynced reports it.
func writeIndexFile[E comparable, X indexFile[E]](s *Segment, path string, want []E, open func(writable bool) (X, error), add func(X, E) error, deferSync bool) (unsynced bool, err error) {
	same, err := fileHolds(want, open)
	if err != nil {
		return false, fmt.Errorf("segment: check %s: %w", path, err)
	}
	if same {
		if deferSync {
			return true, nil
		}
		return false, s.syncFile(path)
	}
	x, err := open(true)
	if errors.Is(err, index.ErrCorrupt) {
		// Not an index the package will write into: empty it in place,
		// keeping the file, and start from nothing.
		if err := s.emptyFile(path); err != nil {
			return false, err
		}
		x, err = open(true)
	}
	if err != nil {
		return false, fmt.Errorf("segment: rebuild %s: %w", path, err)
	}
	err = x.Reset()
	for i := 0; err == nil && i < len(want); i++ {
		err = add(x, want[i])
	}
	if err == nil {
		err = x.Seal()
	}
	if err = errors.Join(err, x.Close()); err != nil {
		return false, fmt.Errorf("segment: rebuild %s: %w", path, err)
	}
	return false, nil
}

// fileHolds reports whether the index file passes its sanity check and
// holds exactly want, opening it read-only. A missing or corrupt file does
// not.
func fileHolds[E comparable, X indexFile[E]](want []E, open func(writable bool) (X, error)) (bool, error) {
	x, err := open(false)
	if err != nil {
		if errors.Is(err, index.ErrCorrupt) || errors.Is(err, fs.ErrNotExist) {
			return false, nil
		}
		return false, err
	}
	same := x.Entries() == len(want)
	for i := 0; same && i < len(want); i++ {
		same = x.Entry(i) == want[i]
	}
	return same, x.Close()
}

// emptyFile truncates the file at path to zero bytes.
func (s *Segment) emptyFile(path string) error {
	f, err := s.fs.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return openError("open", path, err)
	}
	err = f.Truncate(0)
	if cerr := f.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("segment: empty %s: %w", path, err)
	}
	return nil
}

// syncFile fsyncs the file at path through a read-only handle: an index
// kept as it was may still have pages that a crashed process wrote and
// that never reached the disk.
func (s *Segment) syncFile(path string) error { return SyncPath(s.fs, path) }

// SyncPath opens the file at path read-only, fsyncs it and closes it: how
// the indexes RecoverDeferIndexSync left unsynced are made durable.
func SyncPath(fsys vfs.FS, path string) error {
	f, err := fsys.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return openError("open", path, err)
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("segment: fsync %s: %w", path, err)
	}
	return nil
}

// entryMatches reports whether the offset-index entry e describes a real
// batch of the log below sc.limit: its position holds a valid header whose
// last offset is e's offset. A rule-made entry never has position 0 (the
// first batch is never indexed), so position 0 does not match either.
func (s *Segment) entryMatches(sc *scanner, e index.OffsetEntry) bool {
	if e.Position <= 0 || e.Position >= sc.limit || e.Offset < s.base {
		return false
	}
	h, err := sc.header(e.Position)
	return err == nil && offsetEntryFits(e, h)
}

// offsetEntryFits is what an offset-index entry e must say of h, the valid
// batch starting at e.Position, for the segment to use it: h ends at e's
// offset, and it is not the first batch (the index rule never indexes
// position 0, which is the implicit entry).
func offsetEntryFits(e index.OffsetEntry, h record.Batch) bool {
	return e.Position > 0 && h.LastOffset() == e.Offset
}

// timeEntryFits is what a time-index entry e must say of h, the valid batch
// ending at e's offset: its MaxTimestamp is e's timestamp (the running
// maximum first reached e's timestamp in h).
func timeEntryFits(e index.TimeEntry, h record.Batch) bool {
	return h.LastOffset() == e.Offset && h.MaxTimestamp() == e.Timestamp
}

// errStaleIndex reports an index entry that does not match the log; the
// caller rebuilds the indexes and retries.
var errStaleIndex = errors.New("segment: index entry does not match the log")

// cursor is one lookup's view of a loaded segment. Its tip and scanner are
// pinned lazily, after the cursor's first index lookup: the appender
// publishes a tip before it indexes the batch, so an entry a lookup
// returned describes bytes below the size of any tip loaded after that
// lookup, and checking the entry against that size cannot fail for an
// entry that is merely new.
type cursor struct {
	s  *Segment
	f  *files
	t  *tip
	sc *scanner // &scan once pinned
	// mapped lets the scanner read headers from f's read mapping: set by
	// withCursor, which runs the cursor inside readpath.Guard.
	mapped bool
	scan   scanner
}

// pinned returns a cursor over the first limit bytes, for callers that
// hold appendMu (no concurrent appends). It reads headers with pread.
func (s *Segment) pinned(f *files, t *tip) *cursor {
	c := &cursor{s: s, f: f, t: t, scan: s.newScanner(f.scanFile(), t.size)}
	c.sc = &c.scan
	return c
}

func (c *cursor) pin() {
	if c.t != nil {
		return
	}
	c.t = c.s.tip.Load()
	if data := c.mappedLog(); data != nil && int64(len(data)) >= c.t.size {
		c.scan = c.s.mappedScanner(data, c.t.size)
	} else {
		c.scan = c.s.newScanner(c.f.scanFile(), c.t.size)
	}
	c.sc = &c.scan
}

// mappedLog returns the .log's read mapping if this cursor may scan it.
func (c *cursor) mappedLog() []byte {
	if !c.mapped || c.f.hdr == nil {
		return nil
	}
	return c.f.hdr.bytes()
}

func (c *cursor) free() {
	if c.sc != nil {
		c.sc.free()
	}
}

// locate finds the batch that holds offset (the first batch whose last
// offset is at or above it) below the pinned size: an offset-index lookup,
// then a forward scan of headers. It returns errStaleIndex when the entry
// the lookup gave does not match the log, and found == false when no batch
// below the limit reaches offset.
func (c *cursor) locate(offset int64) (pos int64, h record.Batch, found bool, err error) {
	s := c.s
	e := c.f.off.Lookup(offset)
	c.pin()
	start := int64(0)
	if e.Position != 0 || e.Offset != s.base {
		if e.Offset > offset || !s.entryMatches(c.sc, e) {
			return 0, nil, false, fmt.Errorf("%w: %s: lookup(%d) gave offset %d at position %d", errStaleIndex, s.offPath, offset, e.Offset, e.Position)
		}
		start = e.Position
	}
	var hit record.Batch
	pos, err = c.sc.walk(start, func(_ int64, b record.Batch) bool {
		if b.LastOffset() >= offset {
			hit = b
			return false
		}
		return true
	})
	if err != nil {
		if e2, ok := c.f.off.UpperBound(offset); ok && errors.Is(err, ErrCorrupt) && s.entryMatches(c.sc, e2) {
			// Damage between the entry before offset and offset: the
			// batch the next entry points at holds offset when it starts
			// at or below it (batches after damage stay readable where
			// the sparse index knows them).
			if h, herr := c.sc.header(e2.Position); herr == nil && h.BaseOffset() <= offset && e2.Position > start {
				return e2.Position, h, true, nil
			}
		}
		return 0, nil, false, err
	}
	return pos, hit, hit != nil, nil
}

// damageBefore reports whether the batches from the last offset-index
// entry below offset that matches the log (or from the segment's start)
// run into damage before the batch holding offset. A mismatch that is
// only an index's (garbage or stale entries over an intact log) finds no
// damage, so the caller still rebuilds such an index.
func (c *cursor) damageBefore(offset int64) bool {
	start := int64(0)
	for i := c.f.off.Entries() - 1; i >= 0; i-- {
		if e := c.f.off.Entry(i); e.Offset < offset && c.s.entryMatches(c.sc, e) {
			start = e.Position
			break
		}
	}
	_, err := c.sc.walk(start, func(_ int64, b record.Batch) bool { return b.LastOffset() < offset })
	return err != nil && errors.Is(err, ErrCorrupt)
}

// restore derives the tip of the log from the indexes' last entries and a
// scan of the batches after the last offset-index entry, which is about
// IndexIntervalBytes plus a batch. c must be pinned at the .log's size. It
// returns errStaleIndex when a last entry does not match the log.
//
// With fromTimeEntry the scan for the maximum timestamp starts at the batch
// of the time index's last entry when that comes earlier, as Kafka's
// loadLargestTimestamp does after a truncation (the last time entry may
// then have been made at an index point that the truncation removed).
func (c *cursor) restore(fromTimeEntry bool) (*tip, error) {
	s, f, sc := c.s, c.f, c.sc
	t := &tip{size: sc.limit, next: s.base, maxTs: index.NoTimestamp, maxTsOffset: -1}
	start := int64(0)
	if e, ok := f.off.LastEntry(); ok {
		if !s.entryMatches(sc, e) {
			return nil, fmt.Errorf("%w: %s: last entry offset %d at position %d", errStaleIndex, s.offPath, e.Offset, e.Position)
		}
		start = e.Position
	}
	damagedTimeEntry := false
	if te, ok := f.time.LastEntry(); ok {
		pos, h, found, err := c.locate(te.Offset)
		switch {
		case err != nil && (errors.Is(err, ErrCorrupt) || errors.Is(err, errStaleIndex)) && c.damageBefore(te.Offset):
			// The batches leading to the entry's offset run into damage
			// (a header that does not check), which a read there reports.
			// The entry cannot be matched against its batch, but the
			// offset index's last entry did match, so the indexes are the
			// writer's: keep the entry as written rather than refuse the
			// segment, whose batches before and after the damage stay
			// readable. Rebuilding the indexes would stop at the damage
			// and lose the entries past it.
			damagedTimeEntry = true
		case err != nil:
			return nil, err
		case !found || !timeEntryFits(te, h):
			return nil, fmt.Errorf("%w: %s: last entry (%d, %d) has no matching batch", errStaleIndex, s.timePath, te.Timestamp, te.Offset)
		}
		// The last entry stands for the segment's largest timestamp, so it
		// must also be above the entry before it: an earlier entry copied
		// over it matches a batch but would understate MaxTimestamp.
		if n := f.time.Entries(); n >= 2 {
			if prev := f.time.Entry(n - 2); prev.Timestamp >= te.Timestamp || prev.Offset > te.Offset {
				return nil, fmt.Errorf("%w: %s: last entry (%d, %d) not above the one before it (%d, %d)",
					errStaleIndex, s.timePath, te.Timestamp, te.Offset, prev.Timestamp, prev.Offset)
			}
		}
		t.maxTs, t.maxTsOffset = te.Timestamp, te.Offset
		if fromTimeEntry && !damagedTimeEntry && pos < start {
			start = pos
		}
	}
	if f.time.Entries() == 0 && f.off.Entries() > 0 {
		// Entries go into both indexes at the same points, so an empty
		// time index beside offset entries was lost or the segment holds
		// no timestamps at all: either way the largest timestamp can lie
		// before the last offset entry, so walk the whole log for it.
		start = 0
	}
	// A batch before the time index's last entry cannot hold a larger
	// timestamp than the entry's (the entry is where the running maximum
	// was, or the final maximum): a header that says so is damaged (its
	// CRC fails; a read reports it), and taking its timestamp would put
	// the final time entry of the seal before the last one.
	indexed := t.maxTsOffset
	_, err := sc.walk(start, func(_ int64, h record.Batch) bool {
		t.next = h.LastOffset() + 1
		if ts := h.MaxTimestamp(); ts > t.maxTs && h.LastOffset() >= indexed {
			t.maxTs, t.maxTsOffset = ts, h.LastOffset()
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	if damagedTimeEntry && (t.maxTsOffset < s.base || t.maxTsOffset >= t.next) {
		return nil, fmt.Errorf("%w: %s: last entry (%d, %d) lies outside the segment's offsets [%d, %d)",
			errStaleIndex, s.timePath, t.maxTs, t.maxTsOffset, s.base, t.next)
	}
	return t, nil
}

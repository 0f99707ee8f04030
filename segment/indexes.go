package segment

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/foliolog/folio/index"
	"github.com/foliolog/folio/record"
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
	return nil
}

// rebuildIndexes recreates both indexes of f from the batch headers below
// sc.limit, applying the index rule, and returns the resulting state. With
// seal it adds the final time entry and seals both. A full index stops
// taking entries (lookups then scan further, still correctly).
func (s *Segment) rebuildIndexes(f *files, sc *scanner, seal bool) (*indexer, error) {
	if err := s.freshIndexes(f); err != nil {
		return nil, err
	}
	x := s.newIndexer()
	var ierr error
	_, err := sc.walk(0, func(pos int64, h record.Batch) bool {
		if x.observe(pos, h) && ierr == nil {
			if err := appendEntries(f.off, f.time, pos, h, &x.t); err != nil && !errors.Is(err, index.ErrFull) {
				ierr = err
			}
		}
		return true
	})
	if err = errors.Join(err, ierr); err != nil {
		return nil, err
	}
	if seal {
		if err := s.sealIndexes(f, &x.t); err != nil {
			return nil, err
		}
	}
	return x, nil
}

// sealIndexes adds the final time entry and seals both indexes.
func (s *Segment) sealIndexes(f *files, t *tip) error {
	if t.maxTs > index.NoTimestamp {
		if err := f.time.Append(t.maxTs, t.maxTsOffset); err != nil && !errors.Is(err, index.ErrFull) {
			return fmt.Errorf("segment: final time index entry of %s: %w", s.logPath, err)
		}
	}
	return errors.Join(f.off.Seal(), f.time.Seal())
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
	return err == nil && h.LastOffset() == e.Offset
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
	sc *scanner
}

// pinned returns a cursor over the first limit bytes, for callers that
// hold appendMu (no concurrent appends).
func (s *Segment) pinned(f *files, t *tip) *cursor {
	return &cursor{s: s, f: f, t: t, sc: s.newScanner(f.scanFile(), t.size)}
}

func (c *cursor) pin() {
	if c.t == nil {
		c.t = c.s.tip.Load()
		c.sc = c.s.newScanner(c.f.scanFile(), c.t.size)
	}
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
		return 0, nil, false, err
	}
	return pos, hit, hit != nil, nil
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
	if te, ok := f.time.LastEntry(); ok {
		pos, h, found, err := c.locate(te.Offset)
		if err != nil {
			return nil, err
		}
		if !found || h.LastOffset() != te.Offset || h.MaxTimestamp() != te.Timestamp {
			return nil, fmt.Errorf("%w: %s: last entry (%d, %d) has no matching batch", errStaleIndex, s.timePath, te.Timestamp, te.Offset)
		}
		t.maxTs, t.maxTsOffset = te.Timestamp, te.Offset
		if fromTimeEntry && pos < start {
			start = pos
		}
	}
	_, err := sc.walk(start, func(_ int64, h record.Batch) bool {
		t.next = h.LastOffset() + 1
		if ts := h.MaxTimestamp(); ts > t.maxTs {
			t.maxTs, t.maxTsOffset = ts, h.LastOffset()
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	return t, nil
}

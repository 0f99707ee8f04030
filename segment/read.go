package segment

import (
	"errors"
	"fmt"
	"sync"

	"github.com/foliolog/folio/errs"
	"github.com/foliolog/folio/index"
	"github.com/foliolog/folio/readpath"
	"github.com/foliolog/folio/record"
)

// Read returns a view of whole batches starting with the batch that holds
// offset: as many consecutive batches as fit in maxBytes, and always at
// least that first batch, however large (Kafka's KIP-74). Only bytes below
// maxPosition are visible (maxPosition < 0 means everything written), which
// lets the log hide batches at or beyond its high watermark.
//
// It returns ErrOffsetOutOfRange for an offset below the base offset, at or
// beyond NextOffset, or whose batch does not end by maxPosition. The view
// comes from Options.ReadPath; the caller must Release it. It stays
// readable after the segment is closed, deleted or truncated (see
// TruncateTo).
//
// When a batch after the first fails its checks, Read returns the view of
// the good batches before it together with the error (ErrCorrupt, an
// *errs.Corruption naming the file and the bad batch's position), as
// io.Reader returns data with an error: the caller can deliver the records
// before the damage, and must release the view. A view is returned only
// with nil or such an error.
//
// The view's Framing holds the record counts of its batch headers, read
// by the walk that framed it (see readpath.Framing).
func (s *Segment) Read(offset int64, maxBytes int, maxPosition int64) (*readpath.View, error) {
	return s.read(maxBytes, maxPosition, func(c *cursor) (int64, record.Batch, error) {
		pos, h, found, err := c.locate(offset)
		if err != nil {
			return 0, nil, err
		}
		if !found || offset < s.base {
			return 0, nil, s.outOfRange(offset, c.t)
		}
		return pos, h, nil
	})
}

// ReadAt is Read from the batch at byte position pos of the .log, which
// the caller knows starts a batch (the log's walk over a damaged segment
// found it, where a lookup by offset would pass over it by a damaged
// length field): the view holds whole batches from there, up to maxBytes
// (always that first one) and below maxPosition (< 0: everything written).
// It returns ErrCorrupt when no batch header checks at pos.
func (s *Segment) ReadAt(pos int64, maxBytes int, maxPosition int64) (*readpath.View, error) {
	return s.read(maxBytes, maxPosition, func(c *cursor) (int64, record.Batch, error) {
		c.pin()
		h, err := c.sc.header(pos)
		if err != nil {
			return 0, nil, err
		}
		return pos, h, nil
	})
}

// read returns the view of the batches from the one first finds, as Read
// describes.
func (s *Segment) read(maxBytes int, maxPosition int64, first func(c *cursor) (int64, record.Batch, error)) (*readpath.View, error) {
	var v *readpath.View
	var damage error
	err := s.withCursor(func(c *cursor) error {
		v, damage = nil, nil // fn may run twice (see withCursor)
		pos, h, err := first(c)
		if err != nil {
			return err
		}
		limit := c.t.size
		if maxPosition >= 0 {
			limit = min(limit, maxPosition)
		}
		end := pos + int64(h.Size())
		if end > limit {
			return fmt.Errorf("%w: %s: the batch at offset %d ends at %d, beyond the visible %d", ErrOffsetOutOfRange, s.logPath, h.BaseOffset(), end, limit)
		}
		budget := int64(max(maxBytes, 0))
		// The walk that frames the view also counts its records, so that a
		// fetch can report what it delivered without a second walk.
		fr := readpath.Framing{
			Records:   int64(h.NumRecords()),
			FirstBase: h.BaseOffset(), FirstLast: h.LastOffset(), FirstRecords: h.NumRecords(),
			LastOffset: h.LastOffset(),
		}
		for end < limit {
			h, err := c.sc.header(end)
			if err != nil {
				damage = err
				break
			}
			next := end + int64(h.Size())
			if next > limit || next-pos > budget {
				break
			}
			if h.BaseOffset() <= fr.LastOffset {
				// Offsets that do not ascend: a base offset (outside
				// the CRC) is damaged, here or before. The view ends
				// before the batch; a read from it tells.
				break
			}
			end = next
			fr.Records += int64(h.NumRecords())
			fr.LastOffset = h.LastOffset()
		}
		if err := c.checkEntries(pos, end); err != nil {
			return err
		}
		if c.f.src == nil {
			// Only a failed TruncateTo leaves an active segment without
			// its reader; Recover reopens it.
			return fmt.Errorf("segment: read %s: no reader after an earlier failure: %w", s.logPath, s.failure())
		}
		v, err = c.f.src.View(pos, int(end-pos))
		if err != nil {
			return fmt.Errorf("segment: read %s [%d, %d): %w", s.logPath, pos, end, err)
		}
		v.SetFraming(fr)
		return nil
	})
	if err != nil {
		if v != nil {
			v.Release() // a fault after the view was taken
		}
		return nil, err
	}
	return v, damage
}

// FindPosition returns the position of the batch that holds offset (the
// first batch whose last offset is at or above it): an offset-index
// lookup, then a forward scan of batch headers. It returns
// ErrOffsetOutOfRange unless BaseOffset <= offset < NextOffset.
func (s *Segment) FindPosition(offset int64) (int64, error) {
	var pos int64
	err := s.withCursor(func(c *cursor) error {
		p, _, found, err := c.locate(offset)
		if err != nil {
			return err
		}
		if !found || offset < s.base {
			return s.outOfRange(offset, c.t)
		}
		pos = p
		return nil
	})
	return pos, err
}

// OffsetForTime returns the base offset of the first batch whose
// MaxTimestamp is at or after ts, with ok == false when no batch has one: a
// time-index lookup, then a forward scan of batch headers. The first record
// with a timestamp at or after ts is in that batch, possibly after its base
// offset (headers do not say which record; a consumer starting at the
// returned offset skips the earlier ones). The scan has no early exit on
// MaxTimestamp, so the answer does not depend on the time index being
// complete.
func (s *Segment) OffsetForTime(ts int64) (offset int64, ok bool, err error) {
	err = s.withCursor(func(c *cursor) error {
		start, err := c.timeStart(ts)
		if err != nil {
			return err
		}
		_, err = c.sc.walk(start, func(_ int64, h record.Batch) bool {
			if h.MaxTimestamp() >= ts {
				offset, ok = h.BaseOffset(), true
				return false
			}
			return true
		})
		return err
	})
	return offset, ok, err
}

// timeStart returns where the scan for ts starts: the batch of the time
// index's entry for ts. Every batch before it has a max timestamp below
// the entry's (the entry's offset is where the running maximum first
// reached it), so the answer cannot lie earlier.
func (c *cursor) timeStart(ts int64) (int64, error) {
	s := c.s
	te := c.f.time.Lookup(ts)
	if te.Timestamp == index.NoTimestamp && te.Offset == s.base {
		c.pin()
		return 0, nil
	}
	pos, h, found, err := c.locate(te.Offset)
	if err != nil {
		return 0, err
	}
	if te.Timestamp > ts || !found || !timeEntryFits(te, h) {
		return 0, fmt.Errorf("%w: %s: lookup(%d) gave (%d, %d), which no batch matches", errStaleIndex, s.timePath, ts, te.Timestamp, te.Offset)
	}
	return pos, nil
}

func (s *Segment) outOfRange(offset int64, t *tip) error {
	return fmt.Errorf("%w: %s: offset %d outside [%d, %d)", ErrOffsetOutOfRange, s.logPath, offset, s.base, t.next)
}

// cursorPool recycles readers' cursors: a cursor escapes to the heap (fn
// is not known), and a random one-batch read is short enough for its
// allocation to show. fn must not keep the cursor.
var cursorPool = sync.Pool{New: func() any { return new(cursor) }}

// withCursor runs fn with the segment loaded and resMu held shared. If fn
// finds an index entry that does not match the log, the indexes are
// rebuilt and fn runs once more.
func (s *Segment) withCursor(fn func(c *cursor) error) error {
	for attempt := 0; ; attempt++ {
		f, err := s.acquire()
		if err != nil {
			return err
		}
		gen := f.gen
		c := cursorPool.Get().(*cursor)
		*c = cursor{s: s, f: f, mapped: f.hdr != nil}
		if c.mapped {
			// Header scans read the mapping: a file cut behind the
			// segment's back faults there, and Guard makes that an error.
			err = readpath.Guard(func() error { return fn(c) })
			if errors.Is(err, readpath.ErrFault) {
				err = errs.Corrupt(ErrCorrupt, s.logPath, -1, err)
			}
		} else {
			err = fn(c)
		}
		c.free()
		*c = cursor{}
		cursorPool.Put(c)
		s.resMu.RUnlock()
		if !errors.Is(err, errStaleIndex) {
			return err
		}
		if attempt > 0 {
			// A freshly rebuilt index cannot disagree with the log it was
			// built from unless the log changed under it.
			return errs.Corrupt(ErrCorrupt, s.logPath, -1, err)
		}
		if err := s.repairIndexes(f, gen); err != nil {
			return err
		}
	}
}

// repairIndexes rebuilds the indexes after a reader found an entry that
// does not match the log, unless another caller replaced or rebuilt them
// since the reader saw generation gen of f.
func (s *Segment) repairIndexes(f *files, gen uint64) error {
	s.appendMu.Lock()
	defer s.appendMu.Unlock()
	s.resMu.Lock()
	defer s.resMu.Unlock()
	if s.closed.Load() {
		return fmt.Errorf("%w: %s", ErrClosed, s.logPath)
	}
	if s.files != f || f.gen != gen {
		return nil // reloaded or rebuilt meanwhile: the retry sees that
	}
	s.rebuilds.Add(1)
	c := s.pinned(f, s.tip.Load())
	defer c.free()
	var x *indexer
	var err error
	if s.ro {
		x, err = s.rebuildInMemory(f, c.sc) // nothing goes to disk
	} else {
		x, err = s.rebuildIndexes(f, c.sc, s.sealed.Load())
	}
	if err != nil {
		return s.dropFilesLocked(f, err)
	}
	s.sinceIndex = x.since
	return nil
}

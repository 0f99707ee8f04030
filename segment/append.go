package segment

import (
	"fmt"
	"math"

	"github.com/foliolog/folio/index"
	"github.com/foliolog/folio/record"
)

// Append writes b, one batch whose offsets are already assigned, at the end
// of the .log and returns the position it starts at. b must be a valid
// batch (header and CRC are checked: the bytes come from callers), its base
// offset above the previous batch's last offset and not below the segment's
// base, and its record count at most lastOffsetDelta+1. A batch that would
// overflow the segment's 4-byte relative offsets returns ErrOffsetOverflow,
// one that would take it past MaxSegmentBytes (or need an entry in a full
// index) ErrSegmentFull: the caller rolls to a new segment. Neither changes
// the segment.
//
// The batch is visible to readers once Append returns (earlier, in fact:
// after the write and before indexing). It is durable only after Sync or
// Seal. A failed write makes the segment fail-stop: Append then returns
// ErrFailed until Recover.
func (s *Segment) Append(b record.Batch) (int64, error) {
	s.appendMu.Lock()
	defer s.appendMu.Unlock()
	if err := s.checkClosed(); err != nil {
		return 0, err
	}
	if err := s.failure(); err != nil {
		return 0, err
	}
	if s.ro {
		return 0, s.readOnlyErr("append")
	}
	if s.sealed.Load() {
		return 0, fmt.Errorf("%w: append to %s", ErrSealed, s.logPath)
	}
	if len(b) > s.opts.MaxBatchBytes {
		return 0, fmt.Errorf("%w: %d bytes, the limit is %d (%s)", ErrBatchTooLarge, len(b), s.opts.MaxBatchBytes, s.logPath)
	}
	if err := b.Validate(); err != nil {
		return 0, fmt.Errorf("%w: append to %s: %w", ErrInvalidBatch, s.logPath, err)
	}
	t := s.tip.Load()
	if err := s.checkNext(b, t.next); err != nil {
		return 0, fmt.Errorf("append to %s: %w", s.logPath, err)
	}
	pos := t.size
	if int64(len(b)) > s.opts.MaxSegmentBytes-pos {
		return 0, fmt.Errorf("%w: %s holds %d bytes, a %d-byte batch would pass %d", ErrSegmentFull, s.logPath, pos, len(b), s.opts.MaxSegmentBytes)
	}
	if s.files == nil {
		// Closed idle (CloseIdle): reopen for writing.
		s.resMu.Lock()
		err := s.reloadLocked()
		s.resMu.Unlock()
		if err != nil {
			return 0, err
		}
	}
	f := s.files
	x := indexer{interval: int64(s.opts.IndexIntervalBytes), since: s.sinceIndex, t: *t}
	entry := x.observe(pos, b)
	if entry && (f.off.Full() || f.time.Full()) {
		return 0, fmt.Errorf("%w: %s: %w", ErrSegmentFull, s.logPath, index.ErrFull)
	}
	if n, err := f.log.WriteAt(b, pos); err != nil || n != len(b) {
		if err == nil {
			err = fmt.Errorf("short write: %d of %d bytes", n, len(b))
		}
		return 0, s.fail(fmt.Errorf("segment: write %s at %d: %w", s.logPath, pos, err))
	}
	if !s.unsynced.Load() {
		s.unsynced.Store(true)
	}
	nt := x.t
	s.tip.Store(&nt)
	s.sinceIndex = x.since
	if entry {
		if err := appendEntries(f.off, f.time, pos, b, &nt); err != nil {
			// The batch is written and visible, but the index no longer
			// follows the rule: stop here and let recovery rebuild.
			return 0, s.fail(fmt.Errorf("segment: index %s at %d: %w", s.logPath, pos, err))
		}
	}
	return pos, nil
}

// checkNext checks b's offsets against the segment: its base offset at or
// above next (and the segment's base), its last offset representable
// relative to the base, and a record count of at most lastOffsetDelta+1
// (every record has its own offset delta; compaction may leave fewer, even
// none). CheckHeader has already refused negative deltas and counts.
func (s *Segment) checkNext(b record.Batch, next int64) error {
	base, delta := b.BaseOffset(), int64(b.LastOffsetDelta())
	switch {
	case base < s.base:
		return fmt.Errorf("%w: base offset %d below the segment base %d", ErrOffsetNotAscending, base, s.base)
	case base < next:
		return fmt.Errorf("%w: base offset %d, the next offset is %d", ErrOffsetNotAscending, base, next)
	case base > math.MaxInt64-delta || base+delta-s.base > math.MaxInt32:
		return fmt.Errorf("%w: last offset %d+%d, segment base %d", ErrOffsetOverflow, base, delta, s.base)
	case int64(b.NumRecords()) > delta+1:
		return fmt.Errorf("%w: %d records for %d offsets", ErrInvalidBatch, b.NumRecords(), delta+1)
	}
	return nil
}

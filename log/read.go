package log

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/foliolog/folio/errs"
	"github.com/foliolog/folio/readpath"
	"github.com/foliolog/folio/record"
	"github.com/foliolog/folio/segment"
)

// Read returns a view of whole batches of one segment, starting with the
// batch that holds offset: as many as fit in maxBytes, and always that
// first one, however large. Only records below the high watermark are
// visible. The view comes from Options.ReadPath; its bytes are valid until
// the caller releases it, and stay valid even if retention deletes or
// TruncateTo cuts the segment meanwhile. The first batch may start below
// offset (a batch is never split); a consumer skips the records before it.
//
// Read takes no lock the appender holds. It returns an
// *OffsetOutOfRangeError for an offset below the log start or beyond the
// log end, and ErrNoData for an offset at or beyond the high watermark
// (Wait for it). Read is ReadBounded with BoundHighWatermark.
func (l *Log) Read(offset int64, maxBytes int) (*readpath.View, error) {
	return l.ReadBounded(offset, maxBytes, BoundHighWatermark)
}

// Bound is the end a read stops at.
type Bound uint8

const (
	// BoundHighWatermark stops at the high watermark: what consumers may
	// see (Kafka's fetch isolation of a consumer).
	BoundHighWatermark Bound = iota
	// BoundLogEnd stops at the log end: every batch appended, including
	// those not yet fsynced under FlushSync or not yet replicated under
	// ExternalHighWatermark, which is what a follower copies (Kafka's
	// FetchLogEnd). A reader that acts on such records may see them taken
	// back by a power cut or a truncation.
	BoundLogEnd
)

func (b Bound) String() string {
	switch b {
	case BoundHighWatermark:
		return "high watermark"
	case BoundLogEnd:
		return "log end"
	}
	return fmt.Sprintf("Bound(%d)", uint8(b))
}

// ReadBounded is Read with the end it stops at chosen: it returns ErrNoData
// for an offset at or beyond that end, and otherwise works as Read. A
// read-only log has one end for both bounds, the end of its last complete
// valid batch.
func (l *Log) ReadBounded(offset int64, maxBytes int, bound Bound) (*readpath.View, error) {
	for attempt := 0; ; attempt++ {
		if l.closed.Load() {
			return nil, ErrClosed
		}
		sn := l.snap.Load()
		var limit *mark
		var end int64
		switch bound {
		case BoundHighWatermark:
			limit, end = l.hw.Load(), l.end.Load()
		case BoundLogEnd:
			m := l.endPub.load()
			limit, end = &m, m.offset
		default:
			return nil, fmt.Errorf("log: read %s: unknown bound %d", l.dir, bound)
		}
		if offset < sn.start || offset > end {
			return nil, &OffsetOutOfRangeError{Offset: offset, Start: sn.start, End: end}
		}
		if offset >= limit.offset {
			return nil, ErrNoData
		}
		v, err := l.readSnapshot(sn, limit, offset, maxBytes)
		if err == nil || attempt > 0 {
			return v, err
		}
		if again, err := l.lookAgain(err); !again {
			return nil, err
		}
	}
}

// lookAgain reports whether a read that failed with err should look again
// with a fresh snapshot: a segment in it was deleted or closed after the
// snapshot was taken (segment.ErrClosed), or, in a read-only log, the
// writer removed a segment's files since the last listing (fs.ErrNotExist,
// from a segment loading its files), in which case it lists again first
// and the log start moves past what is gone. Otherwise it returns err.
func (l *Log) lookAgain(err error) (bool, error) {
	if errors.Is(err, segment.ErrClosed) {
		return true, nil
	}
	if l.ro != nil && errors.Is(err, fs.ErrNotExist) {
		if rerr := l.Refresh(); rerr != nil {
			return false, errors.Join(err, rerr)
		}
		return true, nil
	}
	return false, err
}

// markSeq publishes a mark to readers that take no lock, without an
// allocation per change (the high watermark's atomic pointer allocates
// one, which the log end, moving on every append, should not): a sequence
// counter, odd while the one writer (holding appendMu) changes the fields,
// which readers retry around. Every field is an atomic, so the reads are
// not races.
type markSeq struct {
	seq                  atomic.Uint64
	offset, segBase, pos atomic.Int64
}

// store publishes m. appendMu must be held.
func (s *markSeq) store(m mark) {
	s.seq.Add(1)
	s.offset.Store(m.offset)
	s.segBase.Store(m.segBase)
	s.pos.Store(m.pos)
	s.seq.Add(1)
}

// load returns the mark last stored.
func (s *markSeq) load() mark {
	for {
		v := s.seq.Load()
		if v&1 == 0 {
			m := mark{offset: s.offset.Load(), segBase: s.segBase.Load(), pos: s.pos.Load()}
			if s.seq.Load() == v {
				return m
			}
		}
		runtime.Gosched() // a writer is between its stores
	}
}

// readSnapshot finds the segment holding offset in sn and reads it up to
// limit (the high watermark or the log end), moving on to the next segment
// if offset falls in a gap after a segment's last batch.
func (l *Log) readSnapshot(sn *snapshot, limit *mark, offset int64, maxBytes int) (*readpath.View, error) {
	e := floorEntry(sn, offset)
	for e != nil {
		if e.base > limit.segBase {
			return nil, ErrNoData
		}
		maxPos := int64(-1)
		if e.base == limit.segBase {
			maxPos = limit.pos
		}
		l.caps.acquire(&e.capEntry)
		v, err := e.seg.Read(max(offset, e.base), maxBytes, maxPos)
		l.caps.release(&e.capEntry)
		if v != nil {
			if f := e.filled.Load(); f != nil {
				if v, err, ok := l.checkFilled(e, *f, v, max(offset, e.base), maxBytes, maxPos); ok {
					return v, err
				}
			}
			if fr, ok := v.Framing(); ok && fr.LastOffset >= l.afterSegment(sn, e) {
				// A batch whose offsets reach the next segment or the
				// log end: its base offset (outside the CRC) is
				// damaged. The walk passes over it.
				v.Release()
				return l.readDamaged(e, offset, maxBytes, maxPos, l.afterSegment(sn, e), nil)
			}
			if d := e.damaged.Load(); d != nil && misled(*d, v, max(offset, e.base)) {
				// Damage was located here, and the lookup passed over
				// offset: it may have done so by a damaged length field,
				// over valid batches. The walk finds them.
				v.Release()
				return l.readDamaged(e, offset, maxBytes, maxPos, l.afterSegment(sn, e), nil)
			}
			// With err, the batches before a damaged one: deliver them, and
			// the read that starts at the damaged batch reports it.
			return v, nil
		}
		if !errors.Is(err, segment.ErrOffsetOutOfRange) {
			if !errors.Is(err, segment.ErrCorrupt) {
				return nil, markCorrupt(fmt.Errorf("log: read at offset %d: %w", offset, err))
			}
			return l.readDamaged(e, offset, maxBytes, maxPos, l.afterSegment(sn, e), err)
		}
		if e.base == limit.segBase {
			// The batch holding offset ends beyond the visible bytes.
			return nil, ErrNoData
		}
		n := nextEntry(sn, e)
		if err := l.checkGap(e, n, offset); err != nil {
			return nil, err
		}
		e = n
	}
	return nil, ErrNoData
}

// misled reports whether a read of offset that returned v may have been
// misled by damage in a segment with the damaged batches ds: v starts at
// one of them although offset lies past its range, or its first batch
// starts past offset.
func misled(ds []damageAt, v *readpath.View, offset int64) bool {
	for _, d := range ds {
		if d.pos == v.Pos() && offset >= d.resume {
			return true
		}
	}
	past := false
	_ = readpath.Guard(func() error {
		b, err := v.Bytes()
		if err == nil && len(b) >= record.HeaderSize {
			past = record.Batch(b).BaseOffset() > offset
		}
		return nil
	})
	return past
}

// floorEntry returns the segment with the largest base at or below offset,
// else the first one (nil for an empty log).
func floorEntry(sn *snapshot, offset int64) *segEntry {
	if i := basesAtOrBelow(sn.bases, offset); i > 0 {
		return sn.bases[i-1]
	}
	if len(sn.bases) > 0 {
		return sn.bases[0]
	}
	return nil
}

// nextEntry returns the segment after e in sn, or nil.
func nextEntry(sn *snapshot, e *segEntry) *segEntry {
	if i := basesAtOrBelow(sn.bases, e.base); i < len(sn.bases) {
		return sn.bases[i]
	}
	return nil
}

// basesAtOrBelow returns how many of bases (ascending) start at or below
// offset.
func basesAtOrBelow(bases []*segEntry, offset int64) int {
	lo, hi := 0, len(bases)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if bases[mid].base <= offset {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

// OffsetForTime returns the first offset whose batch has a timestamp at or
// after t (Kafka's ListOffsets by time), with ok false when no visible
// record has one. The offset is a batch's base offset, or the log start
// offset if that is later; records before the one matching t may share the
// batch.
func (l *Log) OffsetForTime(t time.Time) (offset int64, ok bool, err error) {
	for attempt := 0; ; attempt++ {
		offset, ok, err = l.offsetForTime(t.UnixMilli())
		if err == nil || attempt > 0 || l.closed.Load() {
			return offset, ok, err
		}
		// A segment was deleted under the snapshot (by retention, or by the
		// writer of a read-only log): the answer moved on; ask the new
		// snapshot.
		if again, err := l.lookAgain(err); !again {
			return 0, false, err
		}
	}
}

func (l *Log) offsetForTime(ts int64) (offset int64, ok bool, err error) {
	if l.closed.Load() {
		return 0, false, ErrClosed
	}
	sn := l.snap.Load()
	hw := l.hw.Load()
	var (
		found bool
		ferr  error
	)
	sn.segs.Ascend(func(e *segEntry) bool {
		if e.base >= hw.offset {
			return false
		}
		l.caps.acquire(&e.capEntry)
		defer l.caps.release(&e.capEntry)
		next, err := e.seg.NextOffset()
		if err != nil {
			ferr = err
			return false
		}
		if next <= sn.start {
			return true
		}
		maxTs, err := e.seg.MaxTimestamp()
		if err != nil {
			ferr = err
			return false
		}
		if maxTs < ts {
			return true
		}
		o, hit, err := e.seg.OffsetForTime(ts)
		if err != nil {
			ferr = err
			return false
		}
		if hit {
			offset, found = max(o, sn.start), true
			return false
		}
		return true
	})
	if ferr != nil {
		return 0, false, markCorrupt(fmt.Errorf("log: offset for time %d: %w", ts, ferr))
	}
	if !found || offset >= hw.offset {
		return 0, false, nil
	}
	return offset, true, nil
}

// Wait returns nil as soon as a record at or beyond offset is visible
// (offset is below the high watermark), ctx.Err() when ctx ends first, and
// ErrClosed when the log closes, and an error wrapping ErrTruncated when a
// TruncateTo during the wait cut the log below offset (the position waited
// at is gone; a read finds it out of range). It does not poll: appenders
// and flushes wake it when the high watermark moves.
func (l *Log) Wait(ctx context.Context, offset int64) error {
	if offset < l.hw.Load().offset {
		return nil
	}
	gen := l.truncGen.Load()
	defer l.hwWake.unregister()
	for {
		ch := l.hwWake.register()
		if l.closed.Load() {
			return ErrClosed
		}
		if offset < l.hw.Load().offset {
			return nil
		}
		if l.truncGen.Load() != gen {
			if end := l.end.Load(); offset > end {
				return fmt.Errorf("%w: waiting for offset %d, the log now ends at %d", ErrTruncated, offset, end)
			}
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
		l.hwWake.unregister()
	}
}

// Waiters returns how many readers wait on the log for its high watermark
// to move: Wait calls and WaitChan registrations not yet woken or
// cancelled. Each of them is woken by the next advance (or Close). For
// monitoring, and for tests that must know a reader waits before they act.
func (l *Log) Waiters() int {
	return int(l.hwWake.waiters.Load() + l.hwWake.chanWaiters.Load())
}

// markFor returns the mark of the batch boundary at or below offset in sn:
// the base offset and position of the batch holding offset, or the log end
// when offset is the log end. appendMu must be held (the end is read from
// endMark).
func (l *Log) markFor(sn *snapshot, offset int64) (mark, error) {
	if offset >= l.endMark.offset {
		return l.endMark, nil
	}
	e := floorEntry(sn, offset)
	for e != nil {
		m, err := l.batchMark(e, max(offset, e.base))
		if err == nil {
			return m, nil
		}
		if !errors.Is(err, segment.ErrOffsetOutOfRange) {
			return mark{}, markCorrupt(fmt.Errorf("log: find offset %d: %w", offset, err))
		}
		e = nextEntry(sn, e)
	}
	return l.endMark, nil
}

// batchMark returns the mark of the start of the batch holding offset in e.
func (l *Log) batchMark(e *segEntry, offset int64) (mark, error) {
	l.caps.acquire(&e.capEntry)
	defer l.caps.release(&e.capEntry)
	v, err := e.seg.Read(offset, 0, -1)
	if v != nil && err != nil {
		// Damage after the batch holding offset is not this call's
		// business: the mark is that batch's start.
		err = nil
	}
	if err != nil {
		return mark{}, err
	}
	defer v.Release()
	var base int64
	err = readpath.Guard(func() error {
		b, err := v.Bytes()
		if err != nil {
			return err
		}
		if len(b) < record.HeaderSize {
			return errs.Corruptf(ErrCorrupt, e.seg.String(), v.Pos(), "%d bytes, short of a batch header", len(b))
		}
		base = record.Batch(b).BaseOffset()
		return nil
	})
	if err != nil {
		return mark{}, err
	}
	return mark{offset: base, segBase: e.base, pos: v.Pos()}, nil
}

// SetHighWatermark sets the high watermark of a log opened with
// Options.ExternalHighWatermark (replication computes it from the
// followers). Within one leader epoch (SetLeaderEpoch) it only moves
// forward: a value below the last one set in the same epoch is refused
// (ErrBadHighWatermark), so that what consumers were shown is never taken
// back while a leader holds its place; a new epoch may start lower (a new
// leader's high watermark can lag), and a truncation pulls it down with the
// log end. The value restored at Open (State.HighWatermark) does not count
// as set. The visible high watermark is the smaller of this value and
// the durable end under FlushSync, the log end under the other policies.
// It returns ErrBadHighWatermark for a value below the log start or beyond
// the log end. A watermark inside a batch is rounded down to that batch's
// base offset: readers never see part of a batch, and HighWatermark then
// reports the rounded value.
func (l *Log) SetHighWatermark(offset int64) error {
	if l.ro != nil {
		return l.readOnlyErr("SetHighWatermark")
	}
	if !l.opts.ExternalHighWatermark {
		return fmt.Errorf("%w: the log sets its own (Options.ExternalHighWatermark is off)", ErrBadHighWatermark)
	}
	l.lockAppend()
	defer l.appendMu.Unlock()
	if l.closing {
		return ErrClosed
	}
	sn := l.snap.Load()
	if offset < sn.start || offset > l.next {
		return fmt.Errorf("%w: %d outside [%d, %d]", ErrBadHighWatermark, offset, sn.start, l.next)
	}
	epoch := l.epoch.Load()
	if offset < l.extHW.offset && l.extHWSet && epoch == l.extHWEpoch {
		return fmt.Errorf("%w: %d is below %d, set in leader epoch %d, which still holds", ErrBadHighWatermark, offset, l.extHW.offset, epoch)
	}
	m, err := l.markFor(sn, offset)
	if err != nil {
		return err
	}
	l.extHW = m
	l.extHWSet, l.extHWEpoch = true, epoch
	l.publishHWLocked()
	return nil
}

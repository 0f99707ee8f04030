package log

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/foliolog/folio/record"
	"github.com/foliolog/folio/segment"
)

// Append assigns offsets to the batches, stamps them with the leader epoch
// (and, with Options.LogAppendTime, the append time), writes them to the
// active segment, rolling to a new one when needed, and returns the first
// and last offset assigned.
//
// Append rewrites the batches in place: their base offset and leader epoch
// fields (both outside the CRC), and for log-append-time the timestamp
// fields and the CRC. The caller must not touch them during the call.
//
// Every batch is checked (header, size, CRC) before anything is written, so
// a refused append (ErrInvalidBatch) changes nothing. Append returns only
// after the bytes are written to the file; what else it waits for depends
// on Options.FlushPolicy:
//   - FlushSync: until an fsync covers the records (shared with concurrent
//     appenders). A nil error means the records survive a power cut.
//   - FlushEveryN(n): until an fsync covers them if n or more records were
//     unsynced after this append.
//   - FlushInterval, FlushNone: nothing more.
//
// An error from the write or the fsync puts the log in the failed state
// (ErrFailed): the records may or may not be on disk, later appends are
// refused, and reopening recovers. first and last are set whenever offsets
// were assigned, even with such an error.
func (l *Log) Append(batches ...record.Batch) (first, last int64, err error) {
	first, last, w, err := l.AppendNoWait(batches...)
	if err != nil {
		return first, last, err
	}
	return first, last, w.Wait()
}

// AckWait is what an append written by AppendNoWait waits for before its
// acknowledgement: the fsync its flush policy asks, if any. Wait must be
// called exactly once (the log keeps what a truncation did for waiters it
// has not seen return); the zero AckWait waits for nothing.
type AckWait struct {
	l           *Log
	target, gen int64
}

// Wait returns once the append's records are covered by the fsync the
// flush policy asks, leading a group commit if none running covers them,
// with the error Append would have returned: a failed fsync (ErrFailed),
// or ErrTruncated if a truncation cut the records meanwhile.
func (w AckWait) Wait() error {
	if w.l == nil {
		return nil
	}
	l := w.l
	err := l.syncTo(w.target, w.gen)
	l.appendMu.Lock()
	l.syncWaiters--
	l.appendMu.Unlock()
	return err
}

// Pending reports whether Wait has anything to wait for.
func (w AckWait) Pending() bool { return w.l != nil }

// AppendNoWait is Append returning once the bytes are written, with what
// the acknowledgement still waits for (AckWait.Wait: under FlushSync, an
// fsync covering the records). An appender that writes its next batches
// before waiting for the last ones' fsync lets that batch's fsync start
// beside the running one (group commits overlap) instead of after it; its
// success still counts only once the running one has ended too
// (syncActive). On an error there is nothing to wait for.
func (l *Log) AppendNoWait(batches ...record.Batch) (first, last int64, w AckWait, err error) {
	if l.ro != nil {
		return -1, -1, AckWait{}, l.readOnlyErr("Append")
	}
	if len(batches) == 0 {
		return -1, -1, AckWait{}, fmt.Errorf("%w: no batches", ErrInvalidBatch)
	}
	// One batch goes through the segment's own full check before it is
	// written; several must all pass before the first is written, and a
	// batch whose CRC Append recomputes must pass before it is blessed.
	// One load of the options in force serves the whole append, so that
	// a concurrent Reconfigure never splits it between two settings.
	c := &l.cur().o
	full := len(batches) > 1 || c.LogAppendTime
	for i, b := range batches {
		if err := l.checkBatch(b, full, c); err != nil {
			return -1, -1, AckWait{}, fmt.Errorf("log: append to %s, batch %d of %d: %w", l.dir, i, len(batches), err)
		}
	}
	if err := l.beforeWrite(); err != nil {
		return -1, -1, AckWait{}, err
	}

	l.lockAppend()
	if err := l.appendErrLocked(); err != nil {
		l.appendMu.Unlock()
		return -1, -1, AckWait{}, err
	}
	now := l.opts.Now()
	epoch := l.epoch.Load()
	first = l.next
	if epoch != l.epochs.latest.Load() {
		l.epochs.assign(epoch, first) // before the bytes: see persistEpochs
	}
	for i, b := range batches {
		if err := l.appendOneLocked(b, now, epoch, c); err != nil {
			if l.next > first {
				// Earlier batches are in and visible under the weaker
				// policies; say which offsets they took.
				last = l.next - 1
			} else {
				first, last = -1, -1
			}
			l.afterAppendLocked()
			l.appendMu.Unlock()
			return first, last, AckWait{}, fmt.Errorf("log: append to %s, batch %d of %d: %w", l.dir, i, len(batches), err)
		}
	}
	last = l.next - 1
	return first, last, l.finishAppendLocked(), nil
}

// checkBatch refuses what the segment would refuse, before anything is
// written, under the options c in force. full adds the CRC check.
func (l *Log) checkBatch(b record.Batch, full bool, c *Options) error {
	size, err := record.CheckHeader(b)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidBatch, err)
	}
	if size != len(b) {
		return fmt.Errorf("%w: length field says %d bytes, have %d", ErrInvalidBatch, size, len(b))
	}
	if len(b) > c.MaxBatchBytes {
		return fmt.Errorf("%w: %d bytes, the limit is %d", ErrBatchTooLarge, len(b), c.MaxBatchBytes)
	}
	if int64(b.NumRecords()) > int64(b.LastOffsetDelta())+1 {
		return fmt.Errorf("%w: %d records for %d offsets", ErrInvalidBatch, b.NumRecords(), int64(b.LastOffsetDelta())+1)
	}
	if full {
		if err := b.Validate(); err != nil {
			return fmt.Errorf("%w: %w", ErrInvalidBatch, err)
		}
	}
	if c.Compact {
		return checkKeys(b)
	}
	return nil
}

// appendErrLocked says why appends are refused now, if they are.
func (l *Log) appendErrLocked() error {
	if l.closing {
		return ErrClosed
	}
	return l.err()
}

// appendOneLocked writes one batch, rolling first when the active segment
// should roll or turns out full, under the options c in force. appendMu
// must be held (a roll drops it for a while).
func (l *Log) appendOneLocked(b record.Batch, now time.Time, epoch int32, c *Options) error {
	if !l.activated {
		// The first write since a clean open: only now does the last
		// segment get its write handle and full-size indexes.
		if err := l.activateActive(); err != nil {
			return l.fail(fmt.Errorf("log: reopen %s for appending: %w", l.active.seg, err))
		}
		l.activated = true
	}
	if l.shouldRollLocked(b, now, c) {
		if err := l.rollLocked(); err != nil {
			return err
		}
	}
	b.SetBaseOffset(l.next)
	b.SetPartitionLeaderEpoch(epoch)
	if c.LogAppendTime {
		b.SetLogAppendTime(now.UnixMilli())
	}
	pos, err := l.appendActive(b)
	if (errors.Is(err, segment.ErrSegmentFull) || errors.Is(err, segment.ErrOffsetOverflow)) && l.endMark.pos > 0 {
		// A full index is not predictable from outside the segment: roll
		// now and write the batch (same offsets) to the new one.
		if err := l.rollLocked(); err != nil {
			return err
		}
		pos, err = l.appendActive(b)
	}
	if err != nil {
		if isRefusal(err) {
			return fmt.Errorf("%w: %w", ErrInvalidBatch, err)
		}
		return l.fail(err)
	}
	l.next = b.LastOffset() + 1
	l.endMark = mark{offset: l.next, segBase: l.active.base, pos: pos + int64(len(b))}
	return nil
}

// isRefusal reports whether a segment's Append error means it wrote nothing
// and stays healthy.
func isRefusal(err error) bool {
	if errors.Is(err, segment.ErrFailed) || errors.Is(err, segment.ErrClosed) {
		return false
	}
	return errors.Is(err, segment.ErrInvalidBatch) || errors.Is(err, segment.ErrBatchTooLarge) ||
		errors.Is(err, segment.ErrOffsetNotAscending) || errors.Is(err, segment.ErrOffsetOverflow) ||
		errors.Is(err, segment.ErrSegmentFull)
}

// shouldRollLocked applies Kafka's roll rules that can be checked before
// writing: the batch would take the segment past SegmentBytes, the segment
// is older than SegmentAge, or the batch's last offset would not fit the
// segment's 4-byte relative offsets. An empty segment never rolls. (A full
// index shows as the segment refusing the batch.)
func (l *Log) shouldRollLocked(b record.Batch, now time.Time, c *Options) bool {
	size := l.endMark.pos
	if size == 0 {
		return false
	}
	switch {
	case size+int64(len(b)) > c.SegmentBytes:
		return true
	case c.SegmentAge > 0 && now.Sub(l.activeAt) > c.SegmentAge:
		return true
	case l.next+int64(b.LastOffsetDelta())-l.active.base > math.MaxInt32:
		return true
	}
	return false
}

// rollLocked creates the next segment at the log end, makes it active and
// hands the old one to be sealed in the background. appendMu must be held;
// it is dropped while the files are created and the directory fsynced, with
// busy set so that other appenders, truncation and Close wait, while
// group commits and readers go on.
func (l *Log) rollLocked() error {
	base := l.next
	l.busy = true
	l.appendMu.Unlock()
	seg, err := segment.Create(l.fs, l.dir, base, l.segOpts())
	l.appendMu.Lock()
	l.busy = false
	l.idle.Broadcast()
	if err != nil {
		return l.fail(fmt.Errorf("log: roll to a segment at %d: %w", base, err))
	}
	e := l.newEntry(seg)
	l.caps.add(&e.capEntry) // it holds its files: counted from now
	old := l.active
	l.tree.ReplaceOrInsert(e)
	l.active = e
	l.activated = true
	l.pending = append(l.pending, old)
	l.activeAt = l.opts.Now()
	l.endMark = mark{offset: l.next, segBase: base, pos: 0}
	l.publishLocked(l.snap.Load().start)
	l.rolls.Add(1)
	if l.cur().o.FlushPolicy.mode != flushSync {
		// Under FlushSync the appender's own group commit seals it.
		kick(l.sealKick)
	}
	return nil
}

// afterAppendLocked publishes the new log end and says whether the caller
// must wait for an fsync, and of what.
func (l *Log) afterAppendLocked() (target, gen int64, needSync bool) {
	l.end.Store(l.next)
	p := l.cur().o.FlushPolicy
	switch p.mode {
	case flushSync:
		needSync = true
	case flushEveryN:
		needSync = l.next-l.durMark.offset >= p.n
	case flushInterval:
		if !l.armed && l.next > l.durMark.offset {
			l.armed = true
			kick(l.flushKick)
		}
	}
	l.publishHWLocked()
	return l.next, l.truncGen.Load(), needSync
}

func (l *Log) newEntry(seg *segment.Segment) *segEntry {
	return &segEntry{capEntry: capEntry{closer: seg, owner: &l.openSealed}, base: seg.BaseOffset(), seg: seg}
}

// finishAppendLocked ends an append that holds appendMu: it publishes what
// was written, releases appendMu, and returns the wait for the fsync the
// flush policy asks before an acknowledgement (counted in syncWaiters
// until AckWait.Wait returns).
func (l *Log) finishAppendLocked() AckWait {
	target, gen, needSync := l.afterAppendLocked()
	if needSync {
		l.syncWaiters++
	}
	l.appendMu.Unlock()
	if !needSync {
		return AckWait{}
	}
	return AckWait{l: l, target: target, gen: gen}
}

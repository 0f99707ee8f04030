package log

import (
	"errors"
	"fmt"
	"time"

	"github.com/foliolog/folio/errs"
	"github.com/foliolog/folio/record"
	"github.com/foliolog/folio/segment"
	"github.com/twmb/franz-go/pkg/kerr"
)

// ErrNotAtLogEnd is returned by AppendFollower for batches that do not
// start at the log end, or do not follow each other offset for offset: a
// follower's log is the leader's, copied in order. Kafka: the follower's
// UnexpectedAppendOffsetException; the code here is OFFSET_OUT_OF_RANGE.
var ErrNotAtLogEnd = errs.New("log: follower batch not at the log end", kerr.OffsetOutOfRange)

// AppendFollower appends batches copied from the partition's leader, as a
// Kafka follower does: their offsets and partition leader epochs stay as
// the leader wrote them (nothing in the batch is rewritten), the first
// must start at the log end and each next one right after the one before
// (else ErrNotAtLogEnd, nothing written), and their leader epochs may not
// fall below the latest of the log's lineage (ErrEpochRegressed). A batch
// that opens a new epoch adds it to the leader-epoch cache at its base
// offset. A roll puts the new segment at the base offset of the batch that
// does not fit. Every batch is fully checked (CRC included) before any is
// written; the flush policy applies as for Append, and so do the failed
// state and the return values.
func (l *Log) AppendFollower(batches ...record.Batch) (first, last int64, err error) {
	if l.ro != nil {
		return -1, -1, l.readOnlyErr("AppendFollower")
	}
	if len(batches) == 0 {
		return -1, -1, fmt.Errorf("%w: no batches", ErrInvalidBatch)
	}
	c := &l.cur().o // one load for the whole append, as in Append
	for i, b := range batches {
		if err := l.checkBatch(b, true, c); err != nil {
			return -1, -1, fmt.Errorf("log: follower append to %s, batch %d of %d: %w", l.dir, i, len(batches), err)
		}
		if i > 0 && b.BaseOffset() != batches[i-1].LastOffset()+1 {
			return -1, -1, fmt.Errorf("%w: %s: batch %d starts at %d, the one before ends at %d", ErrNotAtLogEnd, l.dir, i, b.BaseOffset(), batches[i-1].LastOffset())
		}
		if i > 0 && b.PartitionLeaderEpoch() < batches[i-1].PartitionLeaderEpoch() {
			return -1, -1, fmt.Errorf("%w: %s: batch %d has epoch %d after %d", ErrEpochRegressed, l.dir, i, b.PartitionLeaderEpoch(), batches[i-1].PartitionLeaderEpoch())
		}
	}
	if err := l.beforeWrite(); err != nil {
		return -1, -1, err
	}

	l.lockAppend()
	if err := l.appendErrLocked(); err != nil {
		l.appendMu.Unlock()
		return -1, -1, err
	}
	if got := batches[0].BaseOffset(); got != l.next {
		l.appendMu.Unlock()
		return -1, -1, fmt.Errorf("%w: %s: batch starts at %d, the log ends at %d", ErrNotAtLogEnd, l.dir, got, l.next)
	}
	if ep, latest := batches[0].PartitionLeaderEpoch(), l.epochs.latest.Load(); ep < latest {
		l.appendMu.Unlock()
		return -1, -1, fmt.Errorf("%w: %s: batch at %d has epoch %d, the log is at epoch %d", ErrEpochRegressed, l.dir, l.next, ep, latest)
	}
	now := l.opts.Now()
	first = l.next
	for i, b := range batches {
		if ep := b.PartitionLeaderEpoch(); ep != l.epochs.latest.Load() {
			// Before the bytes, as Append does (see persistEpochs).
			l.epochs.assign(ep, b.BaseOffset())
			if ep > l.epoch.Load() {
				// The log is at the leader's epoch now: an Append of its
				// own (after SetLeaderEpoch) never stamps a lower one.
				l.epoch.Store(ep)
			}
		}
		if err := l.appendFollowerOneLocked(b, now, c); err != nil {
			if l.next > first {
				last = l.next - 1
			} else {
				first, last = -1, -1
			}
			l.afterAppendLocked()
			l.appendMu.Unlock()
			return first, last, fmt.Errorf("log: follower append to %s, batch %d of %d: %w", l.dir, i, len(batches), err)
		}
	}
	last = l.next - 1
	return first, last, l.finishAppendLocked().Wait()
}

// appendFollowerOneLocked writes one batch as it is, at its own base offset
// (which is the log end), rolling first when the active segment should
// roll: the new segment's base is the batch's base offset. appendMu must be
// held (a roll drops it for a while).
func (l *Log) appendFollowerOneLocked(b record.Batch, now time.Time, c *Options) error {
	if !l.activated {
		if err := l.active.seg.Activate(); err != nil {
			return l.fail(fmt.Errorf("log: reopen %s for appending: %w", l.active.seg, err))
		}
		l.activated = true
	}
	if l.shouldRollLocked(b, now, c) {
		if err := l.rollLocked(); err != nil {
			return err
		}
	}
	pos, err := l.active.seg.Append(b)
	if (errors.Is(err, segment.ErrSegmentFull) || errors.Is(err, segment.ErrOffsetOverflow)) && l.endMark.pos > 0 {
		if err := l.rollLocked(); err != nil {
			return err
		}
		pos, err = l.active.seg.Append(b)
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

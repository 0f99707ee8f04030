package log

import (
	"errors"
	"fmt"
	"slices"

	"github.com/foliolog/folio/segment"
)

// TruncateTo removes every record at and after offset, across segments:
// later segments are deleted and the segment holding offset is cut and
// becomes the active one again (reactivated if it was sealed). A batch is
// never split: the batch holding offset goes whole, so the log end after the
// call may be below offset. Truncating at or past the log end does nothing;
// below the log start, the log restarts empty at offset.
//
// No file is truncated while a view of it may be read: the segment copies
// the kept prefix aside in that case (see segment.TruncateTo), so readers
// holding views keep their bytes. The cut is fsynced before TruncateTo
// returns. Appenders still waiting for an fsync of records it removed get
// ErrTruncated. Replication uses this to drop a diverged tail.
func (l *Log) TruncateTo(offset int64) error { return l.truncate(offset, false) }

// TruncateFullyAndStartAt removes every record and restarts the log empty
// at offset, also above the log end (Kafka's truncateFullyAndStartAt): a
// follower whose log ends below the leader's log start does so at that
// start, since the leader no longer holds what lies between. The log start
// and the high watermark become offset, the leader-epoch cache is cleared.
func (l *Log) TruncateFullyAndStartAt(offset int64) error { return l.truncate(offset, true) }

func (l *Log) truncate(offset int64, startAt bool) error {
	if l.ro != nil {
		return l.readOnlyErr("TruncateTo")
	}
	if offset < 0 {
		return fmt.Errorf("%w: truncate to negative offset %d", ErrOffsetOutOfRange, offset)
	}
	if err := l.beforeWrite(); err != nil {
		return err
	}
	l.retentionMu.Lock()
	defer l.retentionMu.Unlock()
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	l.lockAppend()
	if err := l.appendErrLocked(); err != nil {
		l.appendMu.Unlock()
		return err
	}
	if offset >= l.next && !startAt {
		l.appendMu.Unlock()
		return nil
	}
	sn := l.snap.Load()
	// The segment that keeps something: the last one starting below
	// offset. Without one (or below the log start) nothing is kept.
	var floor *segEntry
	sn.segs.DescendLessOrEqual(&segEntry{base: offset - 1}, func(e *segEntry) bool {
		floor = e
		return false
	})
	full := startAt || offset < sn.start || floor == nil
	var victims []*segEntry
	l.tree.Ascend(func(e *segEntry) bool {
		if full || e.base >= offset {
			victims = append(victims, e)
		}
		return true
	})
	l.pending = slices.DeleteFunc(l.pending, func(e *segEntry) bool {
		return full || e.base >= offset || e == floor
	})
	// Readers stop seeing the removed segments now; the files go with
	// appendMu dropped (busy keeps appenders and Close out), later
	// segments first, so that a crash in between never leaves a hole
	// below segments that survive.
	for _, e := range victims {
		l.tree.Delete(e)
	}
	if !full {
		l.caps.forget(&floor.capEntry)
	}
	l.publishLocked(sn.start)
	l.busy = true
	l.appendMu.Unlock()

	var err error
	for i := len(victims) - 1; i >= 0; i-- {
		e := victims[i]
		l.caps.forget(&e.capEntry)
		if derr := e.seg.Delete(); derr != nil {
			err = errors.Join(err, l.fail(fmt.Errorf("log: truncate %s: %w", e.seg, derr)))
		}
	}
	var end mark
	if err == nil {
		if full {
			end, err = l.restart(offset)
		} else {
			end, err = l.cut(floor, offset)
		}
	}

	l.appendMu.Lock()
	l.busy = false
	l.idle.Broadcast()
	if err == nil {
		start := min(sn.start, end.offset)
		if full {
			start = offset
		}
		if full {
			l.epochs.clear()
		} else {
			l.epochs.truncateFromEnd(end.offset)
		}
		l.resetEndLocked(end, start)
		if startAt && l.durMark.offset < end.offset {
			// Nothing below the new start is held: all of it is durable.
			l.durMark = end
			l.durable.Store(end.offset)
		}
	}
	l.truncGen.Add(1)
	if l.syncWaiters > 0 {
		l.truncs = append(l.truncs, truncation{gen: l.truncGen.Load(), to: min(offset, l.next)})
	} else {
		l.truncs = l.truncs[:0]
	}
	newEnd := l.next
	l.appendMu.Unlock()
	// Waiters at offsets the log no longer reaches wake to find out
	// (their next read is out of range); the epochs cut go from the file
	// before TruncateTo returns, so a replica never restarts with epochs
	// its log does not hold.
	l.hwWake.truncated(newEnd)
	l.endWake.truncated(newEnd)
	if err == nil {
		if perr := l.persistEpochs(); perr != nil {
			err = l.fail(perr)
		}
	}
	return err
}

// cut cuts floor at offset (the segment fsyncs the cut) and returns the
// new end. syncMu must be held and busy set.
func (l *Log) cut(floor *segEntry, offset int64) (mark, error) {
	if _, err := floor.seg.TruncateTo(offset); err != nil {
		return mark{}, l.fail(fmt.Errorf("log: truncate %s to %d: %w", floor.seg, offset, err))
	}
	next, err := floor.seg.NextOffset()
	if err != nil {
		return mark{}, l.fail(fmt.Errorf("log: truncate %s: %w", floor.seg, err))
	}
	size, err := floor.seg.Size()
	if err != nil {
		return mark{}, l.fail(fmt.Errorf("log: truncate %s: %w", floor.seg, err))
	}
	l.caps.add(&floor.capEntry) // out of the caps since truncate took it
	l.appendMu.Lock()
	l.active = floor
	l.activated = true // TruncateTo reactivates a sealed segment
	l.appendMu.Unlock()
	return mark{offset: next, segBase: floor.base, pos: size}, nil
}

// restart puts an empty segment at base in place of the removed ones
// (Kafka's truncateFullyAndStartAt). syncMu must be held and busy set.
func (l *Log) restart(base int64) (mark, error) {
	seg, err := segment.Create(l.fs, l.dir, base, l.segOpts())
	if err != nil {
		return mark{}, l.fail(fmt.Errorf("log: restart at %d: %w", base, err))
	}
	e := l.newEntry(seg)
	l.caps.add(&e.capEntry)
	l.appendMu.Lock()
	l.tree.ReplaceOrInsert(e)
	l.active = e
	l.activated = true
	l.appendMu.Unlock()
	return mark{offset: base, segBase: base, pos: 0}, nil
}

// resetEndLocked moves the log end back to end after a truncation and pulls
// every offset above it down with it.
func (l *Log) resetEndLocked(end mark, start int64) {
	l.next = end.offset
	l.endMark = end
	l.end.Store(end.offset)
	l.activeAt = l.opts.Now()
	l.pullBackFirstDirtyLocked(end.offset)
	if l.durMark.offset >= end.offset {
		l.durMark = end
		l.durable.Store(end.offset)
	}
	if l.extHW.offset >= end.offset {
		l.extHW = end
	}
	if l.extHW.offset < start {
		l.extHW = mark{offset: start, segBase: -1}
	}
	l.publishLocked(start)
	l.publishHWLocked()
}

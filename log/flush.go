package log

import (
	"fmt"
	"slices"
)

// truncation records that TruncateTo cut the log to offset `to` in
// truncation generation gen, for appenders still waiting on an fsync.
type truncation struct {
	gen int64
	to  int64
}

// Sync fsyncs everything appended so far, whatever the flush policy, and
// returns when it is durable. It shares fsyncs with concurrent appenders.
// On a failed log it returns the failure (ErrFailed) and fsyncs nothing.
func (l *Log) Sync() error {
	l.appendMu.Lock()
	if err := l.appendErrLocked(); err != nil {
		l.appendMu.Unlock()
		return err
	}
	target, gen := l.next, l.truncGen.Load()
	l.syncWaiters++
	l.appendMu.Unlock()

	err := l.syncTo(target, gen)

	l.appendMu.Lock()
	l.syncWaiters--
	l.appendMu.Unlock()
	return err
}

// syncTo returns once the durable end is at or past target, running group
// commits until it is. The caller registered in syncWaiters when it read
// gen, the truncation generation its records belong to.
//
// Group commit: syncMu admits one flush at a time. A flush covers the log
// end as of its start, so appenders that wrote while one flush ran all find
// themselves covered by the next, whichever of them runs it; fsync never
// runs under appendMu, so their writes were not held up by the running one.
func (l *Log) syncTo(target, gen int64) error {
	for {
		if l.durable.Load() >= target && l.truncGen.Load() == gen {
			return nil
		}
		l.syncMu.Lock()
		done, err := l.syncStepLocked(target, gen)
		l.syncMu.Unlock()
		if done || err != nil {
			return err
		}
	}
}

// syncStepLocked is one round of syncTo under syncMu: either it finds the
// target settled, or it flushes.
func (l *Log) syncStepLocked(target, gen int64) (done bool, err error) {
	if cur := l.truncGen.Load(); cur != gen {
		for _, t := range l.truncs {
			if t.gen > gen && t.to < target {
				return true, fmt.Errorf("%w: cut to %d, the append ended at %d", ErrTruncated, t.to, target)
			}
		}
		// The truncations since left these records alone: they are
		// covered like any others.
	}
	if l.durable.Load() >= target {
		return true, nil
	}
	if err := l.err(); err != nil {
		return true, err
	}
	return false, l.flushLocked(true)
}

// flushLocked seals the segments rolled past (each Seal fsyncs its .log and
// indexes), then, with withActive, fsyncs the active segment, and advances
// the durable end to what was written when it started. syncMu must be held,
// appendMu must not: fsyncs run with appends going on.
func (l *Log) flushLocked(withActive bool) error {
	if err := l.err(); err != nil {
		return err
	}
	l.appendMu.Lock()
	pending := slices.Clone(l.pending)
	active := l.active
	target := l.endMark
	if withActive {
		l.armed = false // appends from now on schedule the next interval flush
	}
	l.appendMu.Unlock()

	var sealedTo mark
	for _, e := range pending {
		if err := e.seg.Seal(); err != nil {
			return l.fail(fmt.Errorf("log: seal %s: %w", e.seg, err))
		}
		next, err := e.seg.NextOffset()
		if err != nil {
			return l.fail(fmt.Errorf("log: seal %s: %w", e.seg, err))
		}
		size, err := e.seg.Size()
		if err != nil {
			return l.fail(fmt.Errorf("log: seal %s: %w", e.seg, err))
		}
		sealedTo = mark{offset: next, segBase: e.base, pos: size}
	}
	synced := len(pending) > 0
	if withActive && target.offset > l.durable.Load() {
		if err := active.seg.Sync(); err != nil {
			return l.fail(fmt.Errorf("log: fsync %s: %w", active.seg, err))
		}
		synced = true
	}
	if !synced {
		return nil
	}
	l.syncs.Add(1)

	l.appendMu.Lock()
	// Rolls only append to pending and truncation holds syncMu, so the
	// segments sealed here are still its head.
	l.pending = slices.Delete(l.pending, 0, len(pending))
	newDur := l.durMark
	if withActive {
		newDur = target
	} else if len(pending) > 0 && sealedTo.offset > newDur.offset {
		newDur = sealedTo
	}
	if newDur.offset >= l.durMark.offset {
		l.durMark = newDur
		l.durable.Store(newDur.offset)
	}
	l.publishHWLocked()
	l.appendMu.Unlock()

	for _, e := range pending {
		l.caps.add(&e.capEntry)
	}
	return nil
}

// sealPending seals rolled segments in the background, so that a roll does
// not wait for the old segment's fsync.
func (l *Log) sealPending() {
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	// A failure is recorded in the log's failed state; appenders see it.
	_ = l.flushLocked(false)
}

package log

import (
	"errors"
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
	if l.ro != nil {
		return l.readOnlyErr("Sync")
	}
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

// maxFlushes is how many group commits may run at once. With one, a
// record written just after an fsync started waits for that fsync, which
// does not cover it, and then for its own, which starts only then. With
// two, its fsync starts at once beside the running one, and the disk's
// queue has the next commit while the previous one completes; its success
// still counts only once the one beside it has ended (syncActive), so the
// record waits for the later of the two ends.
const maxFlushes = 2

// syncTo returns once the durable end is at or past target, running group
// commits until it is. The caller registered in syncWaiters when it read
// gen, the truncation generation its records belong to.
//
// Group commit: a caller whose records no running flush covers leads one
// (up to maxFlushes at once); the others wait for a flush to end and are
// all woken together. A flush covers the log end as of its start, so the
// appenders that wrote while one flush ran are covered by the next, which
// one of them leads at once, beside the running one, when there is room.
// Overlapping fsyncs of one file are sound: each makes durable everything
// written to the file before it started, whichever ends first, and the
// durable end only moves forward. Waiters do not queue on a lock: a queue
// would hand the lock on one waiter at a time, and the ones already
// covered would sit out the next flush before learning it. No fsync runs
// under appendMu, so a running flush holds up no write.
func (l *Log) syncTo(target, gen int64) error {
	for {
		if l.durable.Load() >= target && l.truncGen.Load() == gen {
			return nil
		}
		l.flushMu.Lock()
		if l.durable.Load() >= target && l.truncGen.Load() == gen {
			// A flush ended between the look above and the lock. Without
			// this second look, flushCovers (kept while the slower of two
			// overlapping flushes runs) would still claim these records,
			// and they would wait for that other flush to end, however
			// long its fsync takes (TestGroupCommit hung so, 3 runs in
			// 100 under -race).
			l.flushMu.Unlock()
			return nil
		}
		if l.flushes >= maxFlushes || (l.flushes > 0 && target <= l.flushCovers) {
			// A running flush covers these records, or there is no room
			// for another: wait for one to end and look again.
			done := l.flushDone
			l.flushMu.Unlock()
			<-done
			continue
		}
		l.flushes++
		// The flush will cover at least the log end as of now (flush
		// raises it to the end it reads): claimed at once, so that the
		// appenders woken with this one do not each lead another flush
		// of the same records before it says what it covers.
		l.flushCovers = max(l.flushCovers, l.end.Load())
		l.flushMu.Unlock()

		settled, err := l.syncStep(target, gen)

		l.flushMu.Lock()
		if l.flushes--; l.flushes == 0 {
			l.flushCovers = 0 // no running flush covers anything
		}
		close(l.flushDone)
		l.flushDone = make(chan struct{})
		l.flushMu.Unlock()
		if settled || err != nil {
			return err
		}
	}
}

// syncStep runs one round of syncTo: with syncMu shared when the log has
// no rolled segment waiting for its seal (the flush fsyncs the active
// .log alone), else exclusively (it seals them first).
func (l *Log) syncStep(target, gen int64) (settled bool, err error) {
	l.syncMu.RLock()
	settled, err = l.syncStepLocked(target, gen, true)
	l.syncMu.RUnlock()
	if !errors.Is(err, errRolled) {
		return settled, err
	}
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	return l.syncStepLocked(target, gen, false)
}

// errRolled is flushLocked's answer, when syncMu is held shared, to rolled
// segments that need sealing: the caller retries holding it exclusively.
var errRolled = errors.New("log: rolled segments to seal")

// syncStepLocked is one round of syncTo under syncMu (shared: held
// shared): either it finds the target settled, or it flushes.
func (l *Log) syncStepLocked(target, gen int64, shared bool) (settled bool, err error) {
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
	return false, l.flush(true, shared)
}

// flushLocked seals the segments rolled past (each Seal fsyncs its .log and
// indexes), then, with withActive, fsyncs the active segment, and advances
// the durable end to what was written when it started. syncMu must be held
// exclusively, appendMu must not: fsyncs run with appends going on.
func (l *Log) flushLocked(withActive bool) error { return l.flush(withActive, false) }

// flush is flushLocked, or with shared (syncMu held shared, by a group
// commit beside another) the fsync of the active .log alone: it returns
// errRolled, having done nothing, when there are rolled segments to seal.
// Under a shared hold the active segment cannot be sealed or cut (that
// takes syncMu exclusively), so the .log whose end it read is the one it
// fsyncs, even when a roll makes another segment active meanwhile.
func (l *Log) flush(withActive, shared bool) error {
	if err := l.err(); err != nil {
		return err
	}
	l.appendMu.Lock()
	if shared && len(l.pending) > 0 {
		l.appendMu.Unlock()
		return errRolled
	}
	pending := slices.Clone(l.pending)
	active := l.active
	target := l.endMark
	if withActive {
		l.armed = false // appends from now on schedule the next interval flush
	}
	l.appendMu.Unlock()
	if withActive {
		l.flushMu.Lock()
		l.flushCovers = max(l.flushCovers, target.offset)
		l.flushMu.Unlock()
	}
	// The epochs of every record up to target were assigned under
	// appendMu before it was read: written now, the file covers what this
	// flush makes durable.
	if err := l.persistEpochs(); err != nil {
		return l.fail(err)
	}

	var sealedTo mark
	for _, e := range pending {
		if err := l.seal(e.seg); err != nil {
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
		if err := l.syncActive(active); err != nil {
			return err
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
	if len(pending) > 0 {
		l.kickCleaner()
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

// fsyncRun is an fsync of the active .log under way, for the group commits
// beside it (syncActive).
type fsyncRun struct{ done chan struct{} }

// syncActive fsyncs the active .log, then waits for every fsync of it that
// runs beside this one to end, and fails if any failed. On Linux a
// write-back error is reported to one fsync of a file only (the first to
// look), so of two overlapping fsyncs of one file, the one that did not
// see the error may succeed though bytes it covers never reached the disk.
// An fsync's success is therefore trusted only once every fsync that
// overlapped it has ended without error (those that ended before it failed
// the log first: l.err()). One that starts after it ended cannot have
// taken its error. The later-ending of two never waits for the other, so
// no wait is circular.
func (l *Log) syncActive(e *segEntry) error {
	run := &fsyncRun{done: make(chan struct{})}
	l.flushMu.Lock()
	l.syncing = append(l.syncing, run)
	l.flushMu.Unlock()
	err := l.syncLogFile(e)
	if err != nil {
		err = l.fail(err)
	}
	l.flushMu.Lock()
	l.syncing = slices.DeleteFunc(l.syncing, func(r *fsyncRun) bool { return r == run })
	var beside *fsyncRun
	if len(l.syncing) > 0 {
		beside = l.syncing[0] // maxFlushes is 2: at most one other
	}
	l.flushMu.Unlock()
	close(run.done)
	if err != nil {
		return err
	}
	if beside != nil {
		<-beside.done
	}
	return l.err()
}

// syncLogFile fsyncs the active segment's .log and nothing else
// (segment.SyncLog). The segment's Sync would also fsync both index files,
// tripling the cost of every group commit for nothing: recovery scans the
// segment holding the recovery point, which is always the active one or a
// later one, and rebuilds its indexes, while a sealed segment's indexes
// were fsynced by Seal. Truncation holds syncMu exclusively and flushes
// hold it (shared or not), so the segment fsyncs the file it writes to now,
// also after a truncation that replaced it.
func (l *Log) syncLogFile(e *segEntry) error {
	if err := l.timeFsync(e.seg.SyncLog); err != nil {
		return fmt.Errorf("log: fsync the active segment: %w", err)
	}
	return nil
}

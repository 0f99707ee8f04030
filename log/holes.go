package log

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"path/filepath"

	"github.com/foliolog/folio/errs"
	"github.com/foliolog/folio/index"
	"github.com/foliolog/folio/record"
	"github.com/foliolog/folio/segment"
)

// The offsets of a log are contiguous from segment to segment: a roll
// starts the next segment at the log end, retention deletes the oldest
// segments first, truncation the newest first, and a cleaned segment keeps
// its last batch so that it ends where the next begins. Open checks that
// chain where it reads segments anyway (see chain checks in load and
// recover); what breaks it is damage, and Open repairs it so that the log
// keeps every record it still holds, the next append goes right after the
// real end, and the finding is reported once (RecoveryReport.Damage):
//
//   - a segment after a hole that holds no record (an empty or zero-filled
//     stray file) is removed: it holds nothing;
//   - on a clean open, a segment that holds records but starts beyond the
//     end the clean shutdown checkpointed is no part of the log: its files
//     are set aside (renamed with segment.StraySuffix), not adopted;
//   - any other hole (a segment deleted, emptied or renamed away in the
//     middle) costs exactly its range: the segments after it are kept, and
//     the range is filled with empty batches in a segment of its own, as a
//     compaction leaves batches without records, so that readers pass over
//     it and the next open and verify find the chain whole.

// holeDamage reports offsets [from, to) missing before the segment at
// base.
func (l *Log) holeDamage(from, to, base int64) {
	l.recovery.Damage = append(l.recovery.Damage, errs.Corruptf(ErrCorrupt, segment.LogPath(l.dir, base), -1,
		"offsets %d to %d are missing before this segment (the previous one ends at %d): the range is lost, filled with empty batches", from, to-1, from).AtOffset(from))
}

// removeStray deletes a segment that holds no record and starts beyond the
// end of the one before it.
func (l *Log) removeStray(e *segEntry, prevNext int64) error {
	l.tree.Delete(e)
	l.caps.forget(&e.capEntry)
	if err := e.seg.Delete(); err != nil {
		return fmt.Errorf("log: remove stray %s: %w", e.seg, err)
	}
	l.recovery.SegmentsRemoved++
	l.recovery.Damage = append(l.recovery.Damage, errs.Corruptf(ErrCorrupt, segment.LogPath(l.dir, e.base), -1,
		"a segment holding no record beyond the log end (%d): removed", prevNext))
	return nil
}

// setAside renames the files of a segment that is no part of the log with
// segment.StraySuffix and drops it from the tree.
func (l *Log) setAside(e *segEntry, why string) error {
	l.tree.Delete(e)
	l.caps.forget(&e.capEntry)
	if err := e.seg.Close(); err != nil {
		return fmt.Errorf("log: close stray %s: %w", e.seg, err)
	}
	for _, suf := range segSuffixes {
		name := filepath.Join(l.dir, segment.FileName(e.base, suf))
		if err := l.fs.Rename(name, name+segment.StraySuffix); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("log: set aside %s: %w", name, err)
		}
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		return fmt.Errorf("log: sync dir %s: %w", l.dir, err)
	}
	l.recovery.SegmentsRemoved++
	l.recovery.Damage = append(l.recovery.Damage, errs.Corruptf(ErrCorrupt, segment.LogPath(l.dir, e.base), -1,
		"%s: set aside as %s", why, segment.FileName(e.base, segment.LogSuffix+segment.StraySuffix)))
	return nil
}

// fillHole writes segments at from holding empty batches (no records)
// that cover the offsets [from, to), durably, and puts them in the tree,
// unloaded. ts is the time the batches carry (log-append time), the
// previous segment's largest, so that time retention treats them as it
// does their neighbours.
func (l *Log) fillHole(from, to, ts int64) error {
	if err := l.beforeWrite(); err != nil {
		return err
	}
	bld, err := record.NewBuilder(nil)
	if err != nil {
		return err
	}
	var buf []byte
	for base := from; base < to; {
		n := min(to-base, math.MaxInt32) // one batch, relative offsets within int32
		seg, err := segment.Create(l.fs, l.dir, base, &l.segOpts)
		if err != nil {
			return fmt.Errorf("log: fill offsets %d to %d: %w", from, to-1, err)
		}
		bld.Reset()
		bld.BaseOffset = base
		bld.ProducerID, bld.ProducerEpoch, bld.BaseSequence = -1, -1, -1
		bld.LogAppendTime, bld.AppendTime = true, max(ts, 0)
		err = bld.SetLastOffsetDelta(int32(n - 1))
		if err == nil {
			buf, err = bld.Build(buf)
		}
		if err == nil {
			_, err = seg.Append(record.Batch(buf))
		}
		if err == nil {
			err = seg.Seal()
		}
		if cerr := seg.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("log: fill offsets %d to %d: %w", from, to-1, err)
		}
		seg, err = segment.Open(l.fs, l.dir, base, &l.segOpts)
		if err != nil {
			return fmt.Errorf("log: fill offsets %d to %d: %w", from, to-1, err)
		}
		l.tree.ReplaceOrInsert(l.newEntry(seg))
		base += n
	}
	return nil
}

// checkTail checks the chain at the end of a cleanly closed log, where
// Open reads anyway: the last segment against the end the clean shutdown
// checkpointed (rp), and, only when they disagree, against the segment
// before it (which it then loads). It returns the entries, ascending, as
// they are afterwards.
func (l *Log) checkTail(entries []*segEntry, rp int64) ([]*segEntry, error) {
	for len(entries) >= 2 {
		last, prev := entries[len(entries)-1], entries[len(entries)-2]
		if err := l.loadLast(last, nil); err != nil {
			return nil, err
		}
		next, err := last.seg.NextOffset()
		if err != nil {
			return nil, fmt.Errorf("log: %w", err)
		}
		empty := next == last.base
		if rp > 0 && ((empty && last.base == rp) || (!empty && last.base < rp)) {
			return entries, nil // where the clean shutdown left it
		}
		l.caps.acquire(&prev.capEntry)
		prevNext, err := prev.seg.NextOffset()
		var ts int64 = index.NoTimestamp
		if err == nil {
			ts, err = prev.seg.MaxTimestamp()
		}
		l.caps.release(&prev.capEntry)
		if err != nil {
			if errors.Is(err, segment.ErrCorrupt) {
				return entries, nil // the read path reports it where it is
			}
			return nil, fmt.Errorf("log: %w", err)
		}
		if last.base <= prevNext {
			return entries, nil // contiguous (an overlap is verify's to report)
		}
		if err := l.beforeWrite(); err != nil {
			return nil, err
		}
		switch {
		case empty:
			err = l.removeStray(last, prevNext)
		case rp > 0 && last.base >= rp:
			err = l.setAside(last, fmt.Sprintf("a segment starting beyond the end (%d) the log had at its clean shutdown", rp))
		default:
			l.holeDamage(prevNext, last.base, last.base)
			if err = l.fillHole(prevNext, last.base, ts); err == nil {
				entries = entries[:0]
				l.tree.Ascend(func(e *segEntry) bool {
					entries = append(entries, e)
					return true
				})
			}
			return entries, err
		}
		if err != nil {
			return nil, err
		}
		entries = entries[:len(entries)-1]
	}
	return entries, nil
}

// checkMissing checks the chain around each base whose .log is gone from
// inside the log (its index files were left): the segment before it
// against the one after, filling a hole. It returns the entries as they
// are afterwards.
func (l *Log) checkMissing(bases []int64) ([]*segEntry, error) {
	for _, x := range bases {
		var prev, next *segEntry
		l.tree.DescendLessOrEqual(&segEntry{base: x}, func(e *segEntry) bool {
			prev = e
			return false
		})
		l.tree.AscendGreaterOrEqual(&segEntry{base: x}, func(e *segEntry) bool {
			next = e
			return false
		})
		if prev == nil || next == nil || prev.base == x || next.base == x {
			continue
		}
		l.caps.acquire(&prev.capEntry)
		prevNext, err := prev.seg.NextOffset()
		ts := int64(index.NoTimestamp)
		if err == nil {
			ts, err = prev.seg.MaxTimestamp()
		}
		l.caps.release(&prev.capEntry)
		if errors.Is(err, segment.ErrCorrupt) {
			continue // the read path reports it where it is
		}
		if err != nil {
			return nil, fmt.Errorf("log: %w", err)
		}
		if next.base <= prevNext {
			continue
		}
		l.holeDamage(prevNext, next.base, next.base)
		if err := l.fillHole(prevNext, next.base, ts); err != nil {
			return nil, err
		}
	}
	var entries []*segEntry
	l.tree.Ascend(func(e *segEntry) bool {
		entries = append(entries, e)
		return true
	})
	return entries, nil
}

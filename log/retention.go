package log

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/foliolog/folio/segment"
)

// EnforceRetention deletes the oldest segments that retention lets go, as
// Kafka's deleteOldSegments does, and returns how many it deleted. Walking
// from the oldest, a segment goes while any rule holds for it:
//   - time: its largest record timestamp is more than RetentionAge before now;
//   - size: the log without it still holds at least RetentionBytes;
//   - start offset: the next segment starts at or below the log start offset.
//
// The walk stops at the first segment no rule deletes, and never deletes the
// active segment nor a segment holding records at or above the high
// watermark. The log start offset moves
// to the first remaining segment in the same step that hides the deleted
// ones from readers; a reader holding a view of a deleted segment keeps
// reading it until it releases the view. The Log runs this every
// RetentionCheckInterval on its own goroutine.
func (l *Log) EnforceRetention(now time.Time) (deleted int, err error) {
	if l.ro != nil {
		return 0, l.readOnlyErr("EnforceRetention")
	}
	l.retentionMu.Lock()
	defer l.retentionMu.Unlock()
	return l.deleteOldLocked(now, true)
}

// DeleteRecordsBefore moves the log start offset up to offset (Kafka's
// DeleteRecords): readers no longer see the records below it, and the
// segments wholly below it are deleted now. offset may not pass the high
// watermark (an *OffsetOutOfRangeError whose End is the high watermark). It
// returns the log start offset after the call. The owner makes the new start
// offset durable by checkpointing it (Checkpoint reports it); until then a
// crash may bring back records of a segment that was not yet deleted.
func (l *Log) DeleteRecordsBefore(offset int64) (int64, error) {
	if l.ro != nil {
		return l.LogStartOffset(), l.readOnlyErr("DeleteRecordsBefore")
	}
	l.retentionMu.Lock()
	defer l.retentionMu.Unlock()
	l.appendMu.Lock()
	if l.closing {
		l.appendMu.Unlock()
		return 0, ErrClosed
	}
	sn := l.snap.Load()
	hw := l.hw.Load().offset
	if offset < 0 || offset > hw {
		l.appendMu.Unlock()
		return sn.start, &OffsetOutOfRangeError{Offset: offset, Start: sn.start, End: hw}
	}
	if offset <= sn.start {
		l.appendMu.Unlock()
		return sn.start, nil
	}
	l.publishLocked(offset)
	l.appendMu.Unlock()
	_, err := l.deleteOldLocked(time.Time{}, false)
	return l.snap.Load().start, err
}

// deleteOldLocked finds the deletable prefix of sealed segments, unlinks it
// from the tree and publishes the new start offset in one snapshot, then
// deletes the files. byRules adds the time and size rules to the
// start-offset rule. retentionMu must be held.
func (l *Log) deleteOldLocked(now time.Time, byRules bool) (int, error) {
	l.appendMu.Lock()
	if l.closing {
		l.appendMu.Unlock()
		return 0, ErrClosed
	}
	sn := l.snap.Load()
	active := l.active
	l.appendMu.Unlock()
	retBytes, retAge := l.retentionRules()

	var all []*segEntry
	sn.segs.Ascend(func(e *segEntry) bool {
		all = append(all, e)
		return true
	})
	var total int64
	if byRules && retBytes > 0 {
		for _, e := range all {
			size, err := l.segSize(e)
			if err != nil {
				return 0, err
			}
			total += size
		}
	}
	hw := l.hw.Load().offset
	var victims []*segEntry
	for i, e := range all {
		// As in Kafka, nothing at or above the high watermark goes: a
		// segment is deletable only once all of it is visible.
		if e == active || i+1 >= len(all) || all[i+1].base > hw {
			break
		}
		del := all[i+1].base <= sn.start
		var size int64
		if byRules && retBytes > 0 {
			var err error
			if size, err = l.segSize(e); err != nil {
				return 0, err
			}
			del = del || total-size >= retBytes
		}
		if byRules && !del && retAge > 0 {
			ts, err := l.segMaxTimestamp(e)
			if err != nil {
				return 0, err
			}
			del = ts >= 0 && now.UnixMilli()-ts > retAge.Milliseconds()
		}
		if !del {
			break
		}
		total -= size
		victims = append(victims, e)
	}
	if len(victims) == 0 {
		return 0, nil
	}
	if err := l.beforeWrite(); err != nil {
		return 0, err
	}

	// syncMu keeps a seal from running on a victim that was rolled past
	// but not sealed yet: it leaves the pending list here.
	l.syncMu.Lock()
	l.appendMu.Lock()
	removed := victims[:0]
	for _, e := range victims {
		if got, ok := l.tree.Get(e); !ok || got != e || e == l.active {
			break // truncated meanwhile: keep the prefix that is left
		}
		l.tree.Delete(e)
		removed = append(removed, e)
	}
	l.pending = slices.DeleteFunc(l.pending, func(e *segEntry) bool { return slices.Contains(removed, e) })
	first, _ := l.tree.Min()
	start := max(l.snap.Load().start, first.base)
	l.publishLocked(start)
	l.appendMu.Unlock()
	l.syncMu.Unlock()

	var errs []error
	for _, e := range removed {
		l.caps.forget(&e.capEntry)
		if err := e.seg.Delete(); err != nil {
			// The segment is out of the log already; a crash leaves its
			// .deleted files to the next Open.
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return len(removed), fmt.Errorf("log: retention in %s: %w", l.dir, errors.Join(errs...))
	}
	return len(removed), nil
}

// segSize returns a segment's size without loading an unloaded one: a
// sealed segment's .log holds exactly its batches.
func (l *Log) segSize(e *segEntry) (int64, error) {
	if e.seg.Loaded() {
		if size, err := e.seg.Size(); err == nil {
			return size, nil
		}
	}
	fi, err := l.fs.Stat(segment.LogPath(l.dir, e.base))
	if err != nil {
		return 0, fmt.Errorf("log: retention: %w", err)
	}
	return fi.Size(), nil
}

// segMaxTimestamp returns a segment's largest timestamp, loading it under
// the caps.
func (l *Log) segMaxTimestamp(e *segEntry) (int64, error) {
	l.caps.acquire(&e.capEntry)
	defer l.caps.release(&e.capEntry)
	ts, err := e.seg.MaxTimestamp()
	if err != nil {
		return 0, markCorrupt(fmt.Errorf("log: retention: %w", err))
	}
	return ts, nil
}

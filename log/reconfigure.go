package log

import (
	"fmt"
	"time"

	"github.com/foliolog/folio/segment"
)

// liveOptions are the options in force on an open log: the ones it
// opened with, with the live settings Reconfigure last installed. A value
// is never changed once published; the log reads it through one atomic
// load (Log.cur) per append, roll, flush decision or cleaning pass, so
// that nothing on the append path takes a lock for it.
type liveOptions struct {
	o   Options
	seg segment.Options // segmentOptions(o), for the segments created from now on
}

func newLiveOptions(o Options) *liveOptions {
	return &liveOptions{o: o, seg: segmentOptions(o)}
}

// cur returns the options in force.
func (l *Log) cur() *liveOptions { return l.live.Load() }

// segOpts returns the options of a segment created or opened now.
func (l *Log) segOpts() *segment.Options { return &l.cur().seg }

// retentionRules returns the size and age rules in force.
func (l *Log) retentionRules() (int64, time.Duration) {
	o := &l.cur().o
	return o.RetentionBytes, o.RetentionAge
}

// SetRetention changes the size and age rules of an open log, in
// Options.RetentionBytes's and RetentionAge's terms (0 bytes: no size
// rule; a negative age: no age rule; a zero age takes the default). They
// apply from the next retention pass (EnforceRetention or the periodic
// one); a reopen takes them from its Options again. Reconfigure changes
// them together with the other live settings.
func (l *Log) SetRetention(bytes int64, age time.Duration) {
	if age == 0 {
		age = DefaultRetentionAge
	}
	l.reconfMu.Lock()
	defer l.reconfMu.Unlock()
	next := *l.cur()
	next.o.RetentionBytes, next.o.RetentionAge = bytes, age
	l.live.Store(&next)
}

// Reconfigure changes, on the open log, the settings Kafka changes live
// on a topic, taking them from o (nil or a zero field means the default,
// as at Open):
//   - SegmentBytes and SegmentAge: from the next append's roll check. The
//     active segment keeps the size cap it was created with, so a larger
//     SegmentBytes applies fully from the next roll.
//   - MaxBatchBytes: from the next append.
//   - RetentionBytes, RetentionAge: from the next retention pass.
//   - Compact: turned on, the log joins its cleaner (Options.Cleaner, or a
//     private one) and Append refuses keyless records from the next
//     append; turned off, the cleaner stops choosing the log (a pass under
//     way finishes) and Compact returns ErrNotCompacted. Keyless records
//     already in a log that turns compacted are dropped by its first pass
//     over them, as Kafka's cleaner drops them.
//   - MinCleanableDirtyRatio, MinCompactionLag, DeleteRetention: from the
//     next cleaning pass.
//   - FlushPolicy: appends from now on wait as the new policy says. When
//     it becomes FlushSync, the records already visible stay visible (the
//     high watermark does not move back to the durable end); the next
//     fsync covers them.
//   - ReadPath: segments opened from now on (the next active segment, and
//     sealed segments when they are next opened, after the caps closed
//     them or at the next Open); a segment already open keeps its path.
//   - LogAppendTime: from the next append.
//   - IndexIntervalBytes: segments created from now on (the next roll, a
//     cleaned segment, a filled hole) and indexes rebuilt from now on; a
//     segment keeps the interval it was created or opened with (Kafka's
//     LogSegment does too), so the active segment indexes as before
//     until the next roll. Index entries are hints, so segments of
//     different intervals side by side read alike.
//
// Every other field of o is ignored: it keeps the value the log opened
// with. The result is validated as Open validates its options; an
// invalid one changes nothing (ErrInvalidOptions). A reopen takes its
// settings from its Options again, so the caller records them durably.
// Reconfigure returns ErrClosed after Close, and ErrReadOnly on a
// read-only log.
func (l *Log) Reconfigure(o *Options) error {
	if l.ro != nil {
		return l.readOnlyErr("Reconfigure")
	}
	in := o.withDefaults()
	l.reconfMu.Lock()
	defer l.reconfMu.Unlock()
	old := l.cur()
	n := old.o
	n.SegmentBytes, n.SegmentAge, n.MaxBatchBytes = in.SegmentBytes, in.SegmentAge, in.MaxBatchBytes
	n.RetentionBytes, n.RetentionAge = in.RetentionBytes, in.RetentionAge
	n.Compact, n.MinCleanableDirtyRatio = in.Compact, in.MinCleanableDirtyRatio
	n.MinCompactionLag, n.DeleteRetention = in.MinCompactionLag, in.DeleteRetention
	n.FlushPolicy, n.ReadPath, n.LogAppendTime = in.FlushPolicy, in.ReadPath, in.LogAppendTime
	n.IndexIntervalBytes = in.IndexIntervalBytes
	if err := n.validate(); err != nil {
		return err
	}
	next := newLiveOptions(n)
	l.appendMu.Lock()
	closing := l.closing
	l.appendMu.Unlock()
	if closing {
		// Close sets closing before stopCompaction, which waits for
		// reconfMu: a cleaner made past this point is one it stops.
		return ErrClosed
	}
	if n.Compact && !old.o.Compact {
		if err := l.ensureCleanerLocked(); err != nil {
			return err
		}
	}

	l.appendMu.Lock()
	if l.closing {
		l.appendMu.Unlock()
		return ErrClosed
	}
	wasSync := old.o.FlushPolicy.mode == flushSync
	if n.FlushPolicy.mode == flushSync && !wasSync && l.durMark.offset < l.endMark.offset {
		// Readers already see up to the log end: keep it so until the
		// next fsync passes it (publishHWLocked).
		l.hwFloor, l.hwFloorSet = l.endMark, true
	}
	l.live.Store(next)
	if n.FlushPolicy.mode == flushInterval && !l.armed && l.next > l.durMark.offset {
		l.armed = true
		kick(l.flushKick)
	}
	l.publishHWLocked()
	l.appendMu.Unlock()
	// Rolled segments waiting for a seal: under FlushSync an appender's
	// group commit seals them, under the others the background does.
	kick(l.sealKick)

	if c := l.cmp.cleaner.Load(); c != nil && !l.opts.noBackground && n.Compact != old.o.Compact {
		if n.Compact {
			c.register(l)
		} else {
			c.unregister(l)
		}
	}
	return nil
}

// ensureCleanerLocked gives a log that turns compacted the cleaner
// initCompaction would have given it at Open. reconfMu must be held.
func (l *Log) ensureCleanerLocked() error {
	if l.cmp.cleaner.Load() != nil {
		return nil
	}
	c := l.opts.Cleaner
	if c == nil {
		var err error
		if c, err = newCleaner(nil); err != nil {
			return fmt.Errorf("log: reconfigure %s: %w", l.dir, err)
		}
		l.cmp.private = true
		if !l.opts.noBackground {
			c.start()
		}
	}
	l.cmp.cleaner.Store(c)
	return nil
}

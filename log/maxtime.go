package log

import (
	"errors"
	"fmt"

	"github.com/foliolog/folio/readpath"
	"github.com/foliolog/folio/record"
	"github.com/foliolog/folio/segment"
)

// MaxTimestamp returns the largest timestamp of a visible record (below
// the high watermark) and the base offset of the batch that carries it, as
// Kafka's ListOffsets answers MAX_TIMESTAMP (KIP-734); the earliest batch
// wins a tie. ok is false when no visible record has a timestamp.
//
// Each segment's largest timestamp comes from its time index, so the cost
// is one look per segment, plus a scan of the batch headers of the one
// segment whose largest timestamp lies above the high watermark (the
// active segment under FlushSync, for the records not yet fsynced). A
// read-only log answers ErrReadOnly.
func (l *Log) MaxTimestamp() (offset, ts int64, ok bool, err error) {
	if l.ro != nil {
		return 0, 0, false, fmt.Errorf("log: max timestamp of %s: %w", l.dir, ErrReadOnly)
	}
	for attempt := 0; ; attempt++ {
		offset, ts, ok, err = l.maxTimestamp()
		if attempt > 0 || !errors.Is(err, segment.ErrClosed) || l.closed.Load() {
			return offset, ts, ok, err
		}
		// A segment went under the snapshot (retention): ask the new one.
	}
}

func (l *Log) maxTimestamp() (offset, ts int64, ok bool, err error) {
	if l.closed.Load() {
		return 0, 0, false, ErrClosed
	}
	sn := l.snap.Load()
	hw := l.hw.Load().offset
	ts = -1
	var ferr error
	for i, e := range sn.bases {
		if e.base >= hw {
			break
		}
		next := hw
		if i+1 < len(sn.bases) {
			next = min(next, sn.bases[i+1].base)
		}
		if next <= sn.start {
			continue
		}
		o, t, found, err := l.visibleMaxTimestamp(e, max(e.base, sn.start), next, hw)
		if err != nil {
			ferr = err
			break
		}
		if found && t > ts {
			offset, ts, ok = o, t, true
		}
	}
	if ferr != nil {
		return 0, 0, false, markCorrupt(fmt.Errorf("log: max timestamp: %w", ferr))
	}
	return offset, ts, ok, nil
}

// visibleMaxTimestamp returns the largest timestamp among the visible batches
// [from, next) of segment e and the base offset of its first batch.
func (l *Log) visibleMaxTimestamp(e *segEntry, from, next, hw int64) (offset, ts int64, ok bool, err error) {
	l.caps.acquire(&e.capEntry)
	maxTs, err := e.seg.MaxTimestamp()
	if err != nil || maxTs < 0 {
		l.caps.release(&e.capEntry)
		return 0, 0, false, err
	}
	o, hit, err := e.seg.OffsetForTime(maxTs)
	l.caps.release(&e.capEntry)
	if err != nil {
		return 0, 0, false, err
	}
	if hit && o < hw {
		return max(o, from), maxTs, true, nil
	}
	// The largest timestamp is not visible yet: scan the visible headers.
	ts = -1
	for pos := from; pos < next; {
		v, err := l.ReadBounded(pos, 1<<20, BoundHighWatermark)
		if errors.Is(err, ErrNoData) {
			break
		}
		if err != nil {
			return 0, 0, false, err
		}
		err = readpath.Guard(func() error {
			buf, err := v.Bytes()
			if err != nil {
				return err
			}
			for len(buf) > 0 {
				b, rest, err := record.Parse(buf)
				if err != nil {
					return err
				}
				buf = rest
				if b.BaseOffset() >= next {
					pos = next
					return nil
				}
				if t := b.MaxTimestamp(); t > ts {
					offset, ts, ok = b.BaseOffset(), t, true
				}
				pos = b.LastOffset() + 1
			}
			return nil
		})
		v.Release()
		if err != nil {
			return 0, 0, false, err
		}
	}
	return offset, ts, ok, nil
}

package partition

import (
	"errors"
	"fmt"
	"iter"
	"os"
	"time"

	"github.com/foliolog/folio/errs"
	"github.com/foliolog/folio/log"
	"github.com/foliolog/folio/readpath"
	"github.com/foliolog/folio/record"
	"github.com/foliolog/folio/topic"
)

// producerState returns the partition's producer state, loading it on
// first use: from the snapshot of the last clean shutdown, if there is one
// that the log still covers, then a replay of the batches after it (all of
// them without a snapshot), as Kafka rebuilds its ProducerStateManager.
func (p *Partition) producerState() (*topic.ProducerState, error) {
	p.pstateMu.Lock()
	defer p.pstateMu.Unlock()
	if p.pstate != nil {
		return p.pstate, nil
	}
	st, err := topic.NewProducerState(nil)
	if err != nil {
		return nil, err
	}
	from := p.log.LogStartOffset()
	if data, err := p.readSnapshot(); err == nil {
		end, lerr := st.LoadSnapshot(data)
		switch {
		case lerr != nil:
			p.logger.Warn("partition: ignoring producer-state snapshot", "partition", p.String(), "file", p.snapshotName(), "err", lerr)
			st, _ = topic.NewProducerState(nil)
		case end > p.log.LogEndOffset() && p.truncated.Load():
			// TruncateTo cut what the snapshot saw: expected.
			st, _ = topic.NewProducerState(nil)
		case end > p.log.LogEndOffset():
			// The log lost what the snapshot saw: it cannot vouch for it.
			p.logger.Warn("partition: producer-state snapshot is ahead of the log; replaying the whole log",
				"partition", p.String(), "snapshotEnd", end, "logEnd", p.log.LogEndOffset())
			st, _ = topic.NewProducerState(nil)
		default:
			from = max(from, end)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		p.logger.Warn("partition: reading producer-state snapshot", "partition", p.String(), "file", p.snapshotName(), "err", err)
	}
	if err := p.replayLocked(st, from); err != nil {
		return nil, err
	}
	return st, nil
}

// replayLocked brings st up to the log end by replaying the batches from
// offset from on, and makes it the partition's state. p.pstateMu is held.
func (p *Partition) replayLocked(st *topic.ProducerState, from int64) error {
	if err := st.Replay(p.batchHeaders(from)); err != nil {
		if errors.Is(err, log.ErrClosed) {
			return p.mapAppendError(err, -1, -1) // closed, or deleted
		}
		return fmt.Errorf("partition: %s: rebuilding producer state from offset %d: %w", p, from, err)
	}
	p.pstate = st
	return nil
}

// repairSnapshot checks the producer-state snapshot at Open: a damaged one
// (it does not read or does not decode) is reported, naming the store, and
// replaced by the state rebuilt from the whole log, so that neither the
// next open nor verify meets it again. A sound snapshot is left for the
// first idempotent append to load; a missing one is no damage.
func (p *Partition) repairSnapshot() {
	if p.snaps == nil {
		return
	}
	data, err := p.snaps.ReadSnapshot()
	if errors.Is(err, os.ErrNotExist) {
		return
	}
	if err == nil {
		var st *topic.ProducerState
		if st, err = topic.NewProducerState(nil); err != nil {
			return
		}
		if _, err = st.LoadSnapshot(data); err == nil {
			return
		}
	}
	p.logger.Warn("partition: producer-state snapshot damaged; rebuilding it from the log and rewriting it",
		"partition", p.String(), "snapshot", p.snapshotName(), "err", err)
	p.pstateMu.Lock()
	st, serr := topic.NewProducerState(nil)
	if serr == nil {
		serr = p.replayLocked(st, p.log.LogStartOffset())
	}
	p.pstateMu.Unlock()
	if serr == nil {
		_, serr = p.SaveProducerState()
	}
	if serr != nil {
		// The next idempotent append rebuilds the state anyway (it ignores
		// the damaged snapshot); only the rewrite is missed.
		p.logger.Warn("partition: rebuilding the damaged producer-state snapshot failed",
			"partition", p.String(), "snapshot", p.snapshotName(), "err", serr)
	}
}

// snapshotName names where the snapshot lives, for messages: the store's
// String (the data directory's store gives the file's path), else "".
func (p *Partition) snapshotName() string {
	if s, ok := p.snaps.(fmt.Stringer); ok {
		return s.String()
	}
	return ""
}

func (p *Partition) readSnapshot() ([]byte, error) {
	if p.snaps == nil {
		return nil, os.ErrNotExist
	}
	return p.snaps.ReadSnapshot()
}

// replayReadBytes is how much of the log one read of a producer-state
// replay covers.
const replayReadBytes = 1 << 20

// batchHeaders yields copies of the headers of the partition's batches
// from offset from to the log end.
func (p *Partition) batchHeaders(from int64) iter.Seq2[record.Batch, error] {
	return func(yield func(record.Batch, error) bool) {
		pos := from
		for {
			// To the log end: the state covers every batch the log holds,
			// committed or not (a retry of one not yet replicated is a
			// duplicate all the same).
			v, err := p.log.ReadBounded(pos, replayReadBytes, log.BoundLogEnd)
			if errors.Is(err, log.ErrNoData) {
				return
			}
			if d, ok := errors.AsType[*log.DamagedRangeError](err); ok && d.Resume > pos {
				// A range the log lost and reported: the state goes on
				// after it, forgetting the producers it may have held.
				p.logger.Warn("partition: producer state across a damaged range: producers before it forgotten",
					"partition", p.String(), "from", d.From, "resume", d.Resume, "err", err)
				if !yield(nil, &topic.ReplayGap{From: max(d.From, pos), To: d.Resume}) {
					return
				}
				pos = d.Resume
				continue
			}
			if err != nil {
				yield(nil, err)
				return
			}
			var hdrs []record.Batch
			gerr := readpath.Guard(func() error {
				buf, err := v.Bytes()
				if err != nil {
					return err
				}
				at := v.Pos() // the byte position of buf[0] in its segment
				for len(buf) > 0 {
					size, err := record.CheckHeader(buf)
					if err == nil && size > len(buf) {
						err = fmt.Errorf("batch of %d bytes, %d left in the read", size, len(buf))
					}
					if err != nil {
						// The log hands out whole batches it checked: this
						// is damage under it. Name its directory and where.
						return errs.Corruptf(ErrCorrupt, p.log.Dir(), -1, "segment position %d, batch header: %w", at, err)
					}
					hdrs = append(hdrs, record.Batch(append([]byte(nil), buf[:record.HeaderSize]...)))
					buf = buf[size:]
					at += int64(size)
				}
				return nil
			})
			v.Release()
			if gerr != nil {
				yield(nil, gerr)
				return
			}
			for _, h := range hdrs {
				if h.LastOffset() < pos {
					continue // the read's first batch may start below pos
				}
				if !yield(h, nil) {
					return
				}
				pos = h.LastOffset() + 1
			}
		}
	}
}

// SaveProducerState writes the producer state to Options.Snapshots, as of
// the log end, if this session loaded it (an idempotent append did), so
// that the next Open replays only what comes after. The data directory's
// owner calls it at a clean shutdown, when no append is in progress (an
// append the log holds but the state does not yet would be skipped by the
// next replay), before or after Close. It reports whether it wrote one.
func (p *Partition) SaveProducerState() (bool, error) {
	if p.snaps == nil {
		return false, nil
	}
	p.pstateMu.Lock()
	st := p.pstate
	p.pstateMu.Unlock()
	if st == nil {
		return false, nil
	}
	if err := p.snaps.WriteSnapshot(st.MarshalSnapshot(p.log.LogEndOffset())); err != nil {
		return false, fmt.Errorf("partition: %s: writing the producer-state snapshot: %w", p, err)
	}
	return true, nil
}

// ExpireProducers drops the state of idempotent producers whose last batch
// is older than topic.DefaultProducerExpiration (Kafka's
// producer.id.expiration.ms) at now, as Kafka does periodically, and
// returns how many went. The data directory's owner calls it on its
// schedule.
func (p *Partition) ExpireProducers(now time.Time) int {
	p.pstateMu.Lock()
	defer p.pstateMu.Unlock()
	if p.pstate == nil {
		return 0
	}
	return p.pstate.RemoveExpired(now)
}

// Producers returns how many idempotent producers the partition holds
// state for: 0 until the first idempotent append of the session loads it.
func (p *Partition) Producers() int {
	p.pstateMu.Lock()
	defer p.pstateMu.Unlock()
	if p.pstate == nil {
		return 0
	}
	return p.pstate.Len()
}

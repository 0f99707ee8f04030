package partition

import (
	"errors"
	"fmt"
	"time"

	"github.com/foliolog/folio/log"
	"github.com/foliolog/folio/record"
	"github.com/foliolog/folio/topic"
)

// AppendFollower appends batches copied from the partition's leader, as a
// Kafka follower applies a fetch response (log.Log.AppendFollower): the
// leader's offsets and leader epochs are kept, the first batch must start
// at the log end (an error wrapping log.ErrNotAtLogEnd otherwise, nothing
// written), and a batch with a lower epoch than the log's latest is refused
// (log.ErrEpochRegressed). None of the broker's producer rules run (the
// leader applied them), but the idempotent producers' state is brought up
// to date from the batches as they go in, so that a retry reaching this
// replica after it becomes the leader is still recognised as a duplicate.
// Control batches are accepted. The Replication hook is not called: this is
// the replication layer writing. Follower appends are serialised per
// partition.
func (p *Partition) AppendFollower(batches ...record.Batch) (first, last int64, err error) {
	if p.deleted.Load() {
		return -1, -1, fmt.Errorf("%w: %q was deleted", ErrDeleted, p.topic)
	}
	p.followMu.Lock()
	defer p.followMu.Unlock()
	idempotent := false
	for _, bt := range batches {
		if len(bt) >= record.HeaderSize && bt.ProducerID() >= 0 {
			idempotent = true
			break
		}
	}
	if !idempotent {
		// A state loaded later replays the log, these batches included.
		return p.appendFollowerLog(batches)
	}
	st, err := p.producerState()
	if err != nil {
		return -1, -1, err
	}
	first, last, err = p.appendFollowerLog(batches)
	if first < 0 {
		return first, last, err
	}
	for _, bt := range batches {
		if bt.BaseOffset() > last {
			break // not written
		}
		if bt.ProducerID() < 0 {
			continue
		}
		if uerr := st.Update(bt, bt.BaseOffset(), bt.LastOffset()); uerr != nil && err == nil {
			err = fmt.Errorf("partition: %s: recording producer state: %w", p, uerr)
		}
	}
	return first, last, err
}

func (p *Partition) appendFollowerLog(batches []record.Batch) (int64, int64, error) {
	start := time.Now()
	first, last, err := p.log.AppendFollower(batches...)
	if err == nil {
		n, size := 0, 0
		for _, bt := range batches {
			n += int(bt.NumRecords())
			size += len(bt)
		}
		p.metrics.Appended(p.topic, p.index, n, size, time.Since(start))
		return first, last, nil
	}
	if errors.Is(err, log.ErrFailed) {
		p.failedSeen.Store(true)
	}
	if errors.Is(err, log.ErrNotAtLogEnd) || errors.Is(err, log.ErrEpochRegressed) {
		return first, last, fmt.Errorf("partition: %s: %w", p, err)
	}
	err = p.mapAppendError(err, first, last)
	p.metrics.AppendFailed(p.topic, p.index, err)
	return first, last, err
}

// TruncateTo removes the records at and after offset (log.Log.TruncateTo),
// as a follower does to the point where its log diverged from the
// leader's, and rewinds what depends on them: the leader-epoch cache (the
// log's), the waiters at offsets the log no longer reaches (they wake; a
// Wait returns an error wrapping log.ErrTruncated, appends still waiting
// for an fsync of removed records too), and the idempotent producers'
// state, which is rebuilt on its next use: from the snapshot if that lies
// at or below offset, else from the whole log (such a snapshot is replaced
// by an empty one first, before the log is cut). Only the partition's
// own locks are held while the log copies a kept prefix aside: other
// partitions' appends and group commits go on.
func (p *Partition) TruncateTo(offset int64) error {
	p.followMu.Lock()
	defer p.followMu.Unlock()
	p.pstateMu.Lock()
	defer p.pstateMu.Unlock()
	if err := p.retireSnapshotPast(offset); err != nil {
		return fmt.Errorf("partition: truncating %s to %d: %w", p, offset, err)
	}
	err := p.log.TruncateTo(offset)
	// Even after a failed truncation: what the log holds now is not known
	// to match the state.
	p.pstate = nil
	p.truncated.Store(true)
	if err != nil {
		return fmt.Errorf("partition: truncating %s to %d: %w", p, offset, err)
	}
	return nil
}

// TruncateFullyAndStartAt removes every record and restarts the partition
// empty at offset, also above its log end (log.Log.TruncateFullyAndStartAt,
// Kafka's truncateFullyAndStartAt): a follower does so when its log ends
// below the leader's log start. The producer-state snapshot is retired and
// the state rebuilt on next use, as after TruncateTo.
func (p *Partition) TruncateFullyAndStartAt(offset int64) error {
	p.followMu.Lock()
	defer p.followMu.Unlock()
	p.pstateMu.Lock()
	defer p.pstateMu.Unlock()
	if err := p.retireSnapshotPast(0); err != nil {
		return fmt.Errorf("partition: restarting %s at %d: %w", p, offset, err)
	}
	err := p.log.TruncateFullyAndStartAt(offset)
	p.pstate = nil
	p.truncated.Store(true)
	if err != nil {
		return fmt.Errorf("partition: restarting %s at %d: %w", p, offset, err)
	}
	return nil
}

// retireSnapshotPast replaces a producer-state snapshot that covers records
// at or after offset, which a truncation is about to remove, with an empty
// one at the log start: once the log grows past the old snapshot's end
// again, the snapshot would otherwise vouch for producers' batches that are
// gone. It runs before the log is cut, so a crash in between costs only a
// full replay. p.pstateMu is held.
func (p *Partition) retireSnapshotPast(offset int64) error {
	if p.snaps == nil {
		return nil
	}
	data, err := p.snaps.ReadSnapshot()
	if err != nil {
		return nil // none, or unreadable: the next load ignores it
	}
	st, err := topic.NewProducerState(nil)
	if err != nil {
		return err
	}
	end, err := st.LoadSnapshot(data)
	if err != nil || end <= offset {
		return nil // damaged (ignored at load), or below the cut (still true)
	}
	empty, err := topic.NewProducerState(nil)
	if err != nil {
		return err
	}
	if err := p.snaps.WriteSnapshot(empty.MarshalSnapshot(p.log.LogStartOffset())); err != nil {
		return fmt.Errorf("retiring the producer-state snapshot at %d: %w", end, err)
	}
	return nil
}

// SetLeaderEpoch sets the leader epoch the partition stamps on the batches
// it appends as the leader, adding it to the leader-epoch cache at the log
// end, durably (log.Log.SetLeaderEpoch); a lower epoch than the latest of
// the log's lineage is refused (log.ErrEpochRegressed).
func (p *Partition) SetLeaderEpoch(epoch int32) error {
	if err := p.log.SetLeaderEpoch(epoch); err != nil {
		return fmt.Errorf("partition: %s: %w", p, err)
	}
	return nil
}

// LeaderEpoch returns the epoch the partition stamps on its appends.
func (p *Partition) LeaderEpoch() int32 { return p.log.LeaderEpoch() }

// EndOffsetForEpoch answers Kafka's OffsetForLeaderEpoch from the
// partition's leader-epoch cache (log.Log.EndOffsetForEpoch): the largest
// epoch of its lineage not above epoch and the offset where it ends, or
// (log.UndefinedEpoch, log.UndefinedOffset).
func (p *Partition) EndOffsetForEpoch(epoch int32) (int32, int64) {
	return p.log.EndOffsetForEpoch(epoch)
}

package partition

import (
	"context"
	"fmt"
	"time"

	"github.com/foliolog/folio/log"
	"github.com/foliolog/folio/readpath"
)

// Read returns a view of whole batches from the one holding offset, up to
// maxBytes (always that first batch), stopping at bound: the high
// watermark for consumers (log.BoundHighWatermark), the log end for a
// follower copying the partition (log.BoundLogEnd). The view's bytes are
// valid until the caller releases it.
//
// Read is on every consumer's path, so it returns the log's errors as they
// are, without wrapping: log.ErrNoData at or beyond the bound (Wait for
// it), a *log.OffsetOutOfRangeError below the log start or beyond the log
// end, ErrClosed (= log.ErrClosed) once the partition is closed, with
// Deleted telling whether its topic went.
func (p *Partition) Read(offset int64, maxBytes int, bound log.Bound) (*readpath.View, error) {
	return p.log.ReadBounded(offset, maxBytes, bound)
}

// Delivered records that records read from the partition, from batches of
// bytes bytes, were handed to a consumer (an in-process consumer's poll, a
// Kafka client's fetch): it adds them to the counters Out returns and
// reports them to Options.Metrics. Read does not count by itself, since
// only its caller knows how many records of the view it hands on. Two
// atomic adds: it takes no lock.
func (p *Partition) Delivered(records, bytes int) {
	p.recordsOut.Add(int64(records))
	p.bytesOut.Add(int64(bytes))
	p.metrics.Consumed(p.topic, p.index, records, bytes)
}

// Out returns what Delivered counted since Open: records and the bytes of
// the batches they came from.
func (p *Partition) Out() (records, bytes int64) {
	return p.recordsOut.Load(), p.bytesOut.Load()
}

// Wait returns nil as soon as a record at or beyond offset is below the
// high watermark, ctx's error when it ends first, and an error wrapping
// ErrClosed when the partition closes. It does not poll. Waits are bounded
// by the high watermark (WaitEndFunc waits for the log end).
func (p *Partition) Wait(ctx context.Context, offset int64) error {
	return p.log.Wait(ctx, offset)
}

// WaitChan returns a channel closed once a record at or beyond offset is
// below the high watermark (or the partition closes), and a cancel
// function to call when the wait is abandoned, so that a caller can select
// on many partitions without a goroutine each (log.Log.WaitChan).
func (p *Partition) WaitChan(offset int64) (ready <-chan struct{}, cancel func()) {
	return p.log.WaitChan(offset)
}

// WaitFunc calls fn once a record at or beyond offset is below the high
// watermark (or the partition closes), unless cancel was called first: a
// fetch waiting on many partitions registers one callback on each and
// waits on one notification of its own (log.Log.WaitFunc). fn must not
// block nor call into the partition.
func (p *Partition) WaitFunc(offset int64, fn func()) (cancel func()) {
	return p.log.WaitFunc(offset, fn)
}

// WaitEndFunc is WaitFunc bounded by the log end (log.Log.WaitEndFunc):
// fn is called once a record at or beyond offset has been appended,
// committed or not, or the partition closes or is truncated below it. A
// follower's fetch parks on it.
func (p *Partition) WaitEndFunc(offset int64, fn func()) (cancel func()) {
	return p.log.WaitEndFunc(offset, fn)
}

// MaxTimestamp returns the largest timestamp below the high watermark and
// the base offset of the batch that carries it (Kafka's ListOffsets
// MAX_TIMESTAMP), with ok false when the partition shows no record.
func (p *Partition) MaxTimestamp() (offset, ts int64, ok bool, err error) {
	offset, ts, ok, err = p.log.MaxTimestamp()
	if err != nil {
		return 0, 0, false, fmt.Errorf("partition: %s: max timestamp: %w", p, err)
	}
	return offset, ts, ok, nil
}

// OffsetForTime returns the first offset whose batch has a timestamp at or
// after t (Kafka's ListOffsets by time), with ok false when no record
// below the high watermark has one.
func (p *Partition) OffsetForTime(t time.Time) (offset int64, ok bool, err error) {
	offset, ok, err = p.log.OffsetForTime(t)
	if err != nil {
		return 0, false, fmt.Errorf("partition: %s: offset for time: %w", p, err)
	}
	return offset, ok, nil
}

// LogStartOffset returns the first offset a reader can read.
func (p *Partition) LogStartOffset() int64 { return p.log.LogStartOffset() }

// HighWatermark returns the offset below which records are visible to
// consumers: the durable end under FlushSync, the log end otherwise, or
// what Replication set.
func (p *Partition) HighWatermark() int64 { return p.log.HighWatermark() }

// LogEndOffset returns the offset the next record will get.
func (p *Partition) LogEndOffset() int64 { return p.log.LogEndOffset() }

// DurableEndOffset returns the offset below which every record is fsynced.
func (p *Partition) DurableEndOffset() int64 { return p.log.DurableEndOffset() }

// SetHighWatermark sets the high watermark of a partition whose
// Replication owns it (ExternalHighWatermark), as a leader does from its
// followers' log ends; waiters whose offset it passes wake. The log rounds
// a value inside a batch down to the batch's start and never lets it pass
// the durable end under FlushSync, nor the log end. It fails with an error
// wrapping log.ErrBadHighWatermark on a partition that keeps its own, and
// for a value outside [log start, log end].
func (p *Partition) SetHighWatermark(offset int64) error {
	if err := p.log.SetHighWatermark(offset); err != nil {
		return fmt.Errorf("partition: %s: %w", p, err)
	}
	return nil
}

// DeleteRecordsBefore makes offset the new log start offset (Kafka's
// DeleteRecords): records below it are no longer served and segments
// holding only such records are deleted. offset may not pass the high
// watermark (the error then wraps a *log.OffsetOutOfRangeError). The data
// directory's owner checkpoints the new start for it to survive a crash.
func (p *Partition) DeleteRecordsBefore(offset int64) error {
	if _, err := p.log.DeleteRecordsBefore(offset); err != nil {
		return fmt.Errorf("partition: %s: delete records before %d: %w", p, offset, err)
	}
	return nil
}

// EnforceRetention applies the topic's retention now (the partition also
// does so every Options.RetentionCheckInterval) and returns how many
// segments it deleted.
func (p *Partition) EnforceRetention(now time.Time) (int, error) {
	n, err := p.log.EnforceRetention(now)
	if err != nil {
		return n, fmt.Errorf("partition: retention of %s: %w", p, err)
	}
	return n, nil
}

// Sync fsyncs every record appended so far, whatever the topic's flush
// policy, and returns once they are durable.
func (p *Partition) Sync() error {
	if err := p.log.Sync(); err != nil {
		return fmt.Errorf("partition: syncing %s: %w", p, err)
	}
	return nil
}

// Compact runs a compaction pass over the partition now, whatever its
// dirty ratio, and returns what it did. The topic's cleanup policy must
// compact (else the error wraps log.ErrNotCompacted).
func (p *Partition) Compact(ctx context.Context) (log.CompactResult, error) {
	res, err := p.log.Compact(ctx)
	if err != nil {
		return res, fmt.Errorf("partition: compacting %s: %w", p, err)
	}
	return res, nil
}

// Checkpoint returns what the data directory's owner checkpoints for the
// partition: its recovery point, log start offset and, for a compacted
// topic, its cleaner checkpoint (log.Log.Checkpoint).
func (p *Partition) Checkpoint() log.State { return p.log.Checkpoint() }

package partition

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/foliolog/folio/log"
	"github.com/foliolog/folio/record"
	"github.com/foliolog/folio/topic"
	"github.com/foliolog/folio/vfs"
)

// AppendResult is what a Kafka Produce response carries for one partition.
type AppendResult struct {
	// BaseOffset and LastOffset are the offsets of the batch's first and
	// last record.
	BaseOffset, LastOffset int64
	// LogAppendTime is the time the partition stamped on the batch, in Unix
	// milliseconds, for a topic whose timestamp type is LogAppendTime; -1
	// under CreateTime (the producer's timestamps are kept) and for a
	// duplicate.
	LogAppendTime int64
	// LogStartOffset is the partition's log start offset after the append.
	LogStartOffset int64
	// Duplicate is set when the batch retried one the partition already
	// holds (same producer, epoch and sequences): nothing was written and
	// the offsets are the original ones.
	Duplicate bool
}

// AppendBatch appends one encoded RecordBatch v2, as a Kafka producer sends
// it, applying what a Kafka broker applies: the topic's max.message.bytes
// (ErrMessageTooLarge), its compression (the batch is recompressed when
// the topic names a codec and the batch uses another), its timestamp type,
// and for a batch with a producer id the idempotence rules: a retry of one
// of the producer's last 5 batches returns the original offsets with
// Duplicate set, a sequence gap is topic.ErrOutOfOrderSequence, an old
// epoch topic.ErrProducerFenced. Control batches are refused
// (ErrInvalidBatch): only Folio writes them.
//
// The batch's bytes are rewritten in place (offsets, leader epoch, and
// under LogAppendTime the timestamp and CRC) unless it was recompressed;
// the caller may reuse them when AppendBatch returns. It returns once the
// append is acknowledged: written under the topic's flush policy, and
// released by the Replication hook.
//
// ctx bounds the waits on other parties. If it has ended before the call,
// or ends while the batch waits for an earlier batch of its producer,
// nothing is written and the error is ctx's. The log's write and fsync are
// not interrupted (log.Log.Append takes no ctx). If ctx ends while the
// Replication hook holds the acknowledgement, the error wraps
// ErrUnknownOutcome and ctx's error, and the result carries the offsets.
func (p *Partition) AppendBatch(ctx context.Context, batch []byte) (AppendResult, error) {
	if ctx.Err() != nil {
		return AppendResult{}, context.Cause(ctx)
	}
	bt := record.Batch(batch)
	if err := bt.Validate(); err != nil {
		return AppendResult{}, fmt.Errorf("%w: %s: %w", ErrInvalidBatch, p, err)
	}
	if bt.IsControl() {
		return AppendResult{}, fmt.Errorf("%w: %s: control batches are written by Folio only", ErrInvalidBatch, p)
	}
	lc := p.cfg.Load() // one load: the settings this append goes by
	if !lc.keep && bt.Codec() != lc.codec {
		re, err := recompress(bt, lc.codec)
		if err != nil {
			return AppendResult{}, fmt.Errorf("%w: %s: recompressing to %s: %w", ErrInvalidBatch, p, lc.codec, err)
		}
		bt = re
	}
	if maxBatch := lc.maxBatch; len(bt) > maxBatch {
		return AppendResult{}, fmt.Errorf("%w: %s: batch of %d bytes, the topic's limit is %d", ErrMessageTooLarge, p, len(bt), maxBatch)
	}
	if p.repl != nil {
		if err := p.repl.BeforeAppend(ctx, p); err != nil {
			return AppendResult{}, err
		}
	}
	var res AppendResult
	if bt.ProducerID() < 0 {
		first, last, err := p.appendLog(bt)
		if err != nil {
			return AppendResult{BaseOffset: first, LastOffset: last, LogAppendTime: -1, LogStartOffset: -1}, err
		}
		res = p.result(bt, first, last)
	} else {
		var err error
		if res, err = p.appendIdempotent(ctx, bt); err != nil {
			return res, err
		}
	}
	// A duplicate waits too: its original may not be replicated yet.
	return res, p.acknowledge(ctx, res.BaseOffset, res.LastOffset)
}

// appendIdempotent appends bt, which carries a producer id, under its
// producer's sequence lock.
func (p *Partition) appendIdempotent(ctx context.Context, bt record.Batch) (AppendResult, error) {
	pid := bt.ProducerID()
	sl := p.lockProducer(pid)
	defer p.unlockProducer(pid, sl)
	if ctx.Err() != nil {
		// It ended while an earlier batch of the producer held the lock:
		// nothing is written yet.
		return AppendResult{}, context.Cause(ctx)
	}
	st, err := p.producerState()
	if err != nil {
		return AppendResult{}, err
	}
	dup, err := st.Check(bt)
	if err != nil {
		return AppendResult{}, fmt.Errorf("partition: %s: %w", p, err)
	}
	if dup != nil {
		return AppendResult{BaseOffset: dup.FirstOffset, LastOffset: dup.LastOffset, LogAppendTime: -1,
			LogStartOffset: p.log.LogStartOffset(), Duplicate: true}, nil
	}
	first, last, err := p.appendLog(bt)
	if err != nil {
		return AppendResult{BaseOffset: first, LastOffset: last, LogAppendTime: -1, LogStartOffset: -1}, err
	}
	res := p.result(bt, first, last)
	if err := st.Update(bt, first, last); err != nil {
		return res, fmt.Errorf("partition: %s: recording producer state: %w", p, err)
	}
	return res, nil
}

// result is the AppendResult of bt, appended at first to last.
func (p *Partition) result(bt record.Batch, first, last int64) AppendResult {
	r := AppendResult{BaseOffset: first, LastOffset: last, LogAppendTime: -1, LogStartOffset: p.log.LogStartOffset()}
	if bt.LogAppendTime() {
		// The log stamped it in place (its message.timestamp.type at
		// the append, whatever a concurrent Reconfigure changed since).
		r.LogAppendTime = bt.MaxTimestamp()
	}
	return r
}

// acknowledge lets the Replication hook hold the acknowledgement of the
// records first to last, which the local log holds.
func (p *Partition) acknowledge(ctx context.Context, first, last int64) error {
	if p.repl == nil {
		return nil
	}
	if err := p.repl.AfterAppend(ctx, p, first, last); err != nil {
		return fmt.Errorf("%w: %s offsets %d-%d: %w", ErrUnknownOutcome, p, first, last, err)
	}
	return nil
}

// AppendProduced appends batches built by one in-process producer for this
// partition, in order, trusting their encoding (no validation,
// recompression or size check: the producer built them for this
// partition's Config and MaxBatchBytes). With pid >= 0 they carry
// consecutive sequences, the first of which must follow the producer's
// last batch; a resent sequence is topic.ErrDuplicateSequence. It returns
// how many of the batches were appended (a failure can come after some),
// with their offsets rewritten in place: on an error no batch is
// acknowledged, and those counted are written, or their outcome unknown
// (ErrUnknownOutcome). ctx bounds what AppendBatch's ctx bounds.
func (p *Partition) AppendProduced(ctx context.Context, pid int64, batches []record.Batch) (int, error) {
	n, ack, err := p.AppendProducedNoWait(ctx, pid, batches)
	if err != nil {
		return n, err
	}
	return n, ack.Wait()
}

// AppendAck is what batches written by AppendProducedNoWait wait for before
// their acknowledgement: the fsync the flush policy asks, then
// replication's (acks=all). The zero AppendAck waits for nothing. Wait must
// be called exactly once; the Waits of successive appends may run
// concurrently, each returning once its own batches are acknowledged (a
// caller that reports outcomes in order orders its reports itself).
type AppendAck struct {
	p           *Partition
	ctx         context.Context
	lw          logAck
	first, last int64
}

// Wait returns once the batches are acknowledged, or with the error
// AppendProduced would have returned for them (written, outcome unknown:
// ErrUnknownOutcome).
func (a AppendAck) Wait() error {
	if a.p == nil {
		return nil
	}
	if err := a.lw.wait(a.p); err != nil {
		return err
	}
	return a.p.acknowledge(a.ctx, a.first, a.last)
}

// Pending reports whether Wait has anything to wait for.
func (a AppendAck) Pending() bool { return a.p != nil }

// AppendProducedNoWait is AppendProduced returning once the batches are
// written, before their acknowledgement, which ack.Wait waits for. A
// producer that writes its next batches before waiting for the last ones
// has their fsync start beside the running one instead of after it
// (log.Log.AppendNoWait). On an error there is nothing to wait for: the
// batches counted are written, their outcome unknown, as with
// AppendProduced.
func (p *Partition) AppendProducedNoWait(ctx context.Context, pid int64, batches []record.Batch) (n int, ack AppendAck, err error) {
	if ctx.Err() != nil {
		return 0, AppendAck{}, context.Cause(ctx)
	}
	if p.repl != nil {
		if err := p.repl.BeforeAppend(ctx, p); err != nil {
			return 0, AppendAck{}, err
		}
	}
	n, lw, err := p.appendProduced(ctx, pid, batches)
	if err != nil || n == 0 {
		return n, AppendAck{}, err
	}
	if !lw.w.Pending() {
		_ = lw.wait(p) // nothing to wait for: reports the append
		lw = logAck{}
		if p.repl == nil {
			return n, AppendAck{}, nil
		}
	}
	return n, AppendAck{p: p, ctx: ctx, lw: lw, first: batches[0].BaseOffset(), last: batches[n-1].LastOffset()}, nil
}

func (p *Partition) appendProduced(ctx context.Context, pid int64, batches []record.Batch) (int, logAck, error) {
	if pid < 0 {
		_, _, lw, err := p.appendLogNoWait(batches...)
		return appendedCount(batches, err), lw, err
	}
	sl := p.lockProducer(pid)
	defer p.unlockProducer(pid, sl)
	if ctx.Err() != nil {
		return 0, logAck{}, context.Cause(ctx)
	}
	st, err := p.producerState()
	if err != nil {
		return 0, logAck{}, err
	}
	// Check the first batch only: the rest follow it by construction, and
	// Check compares against the state, which Update moves after the append.
	dup, err := st.Check(batches[0])
	if err != nil {
		return 0, logAck{}, fmt.Errorf("partition: %s: %w", p, err)
	}
	if dup != nil {
		return 0, logAck{}, fmt.Errorf("%w: %s: producer %d resent sequence %d", topic.ErrDuplicateSequence, p, pid, batches[0].BaseSequence())
	}
	// The producer state records the batches once they are written, as
	// Kafka's leader does on its append, before their fsync: a failed
	// fsync fails the log, which takes no more appends.
	_, _, lw, err := p.appendLogNoWait(batches...)
	n := appendedCount(batches, err)
	for _, bt := range batches[:n] {
		if uerr := st.Update(bt, bt.BaseOffset(), bt.LastOffset()); uerr != nil && err == nil {
			err = fmt.Errorf("partition: %s: recording producer state: %w", p, uerr)
		}
	}
	if err != nil {
		// Written but not to be acknowledged: still wait out the fsync,
		// which the log counts on being waited for.
		_ = lw.wait(p)
		return n, logAck{}, err
	}
	return n, lw, nil
}

// lockProducer takes the sequence lock of producer id pid; unlockProducer
// releases it. A lock no append holds is dropped from seqLocks (producer
// ids come and go) and kept as the spare for the next one, so that a
// producer appending one batch at a time allocates none.
func (p *Partition) lockProducer(pid int64) *seqLock {
	p.seqMu.Lock()
	l := p.seqLocks[pid]
	if l == nil {
		if l = p.spareSeq; l != nil {
			p.spareSeq = nil
		} else {
			l = &seqLock{}
		}
		p.seqLocks[pid] = l
	}
	l.refs++
	p.seqMu.Unlock()
	l.mu.Lock()
	return l
}

func (p *Partition) unlockProducer(pid int64, l *seqLock) {
	l.mu.Unlock()
	p.seqMu.Lock()
	if l.refs--; l.refs == 0 {
		delete(p.seqLocks, pid)
		p.spareSeq = l
	}
	p.seqMu.Unlock()
}

// appendedCount works out how many of batches an Append wrote: all on
// success; on failure the ones the log gave offsets to, which it does in
// order and only for batches it wrote. An error with offsets assigned
// (ErrUnknownOutcome) counts its batches as written: the log is failed and
// a restart finds out, but the producer's sequences must not be reused.
func appendedCount(batches []record.Batch, err error) int {
	if err == nil {
		return len(batches)
	}
	var ae *appendError
	if errors.As(err, &ae) && ae.first >= 0 && ae.last >= ae.first {
		n, off := 0, ae.first
		for _, bt := range batches {
			end := off + int64(bt.LastOffsetDelta())
			if end > ae.last {
				break
			}
			n++
			off = end + 1
		}
		return n
	}
	return 0
}

// appendError carries the offsets a failed log append had assigned.
type appendError struct {
	first, last int64
	err         error
}

func (e *appendError) Error() string { return e.err.Error() }
func (e *appendError) Unwrap() error { return e.err }

// appendLog appends to the log, reports metrics, and turns log errors into
// the package's: a full disk is ErrDiskFull, a deleted topic ErrDeleted,
// a write or fsync failure after offsets were assigned ErrUnknownOutcome
// (the partition is failed; the records may be on disk).
func (p *Partition) appendLog(batches ...record.Batch) (int64, int64, error) {
	first, last, lw, err := p.appendLogNoWait(batches...)
	if err != nil {
		return first, last, err
	}
	return first, last, lw.wait(p)
}

// logAck is the log's part of an AppendAck: the fsync the flush policy asks,
// and what the metrics report once it is done.
type logAck struct {
	w           log.AckWait
	first, last int64
	start       time.Time
	recs, size  int
}

// wait waits for the log's acknowledgement and reports the append to the
// metrics, or maps its error as appendLog's. The zero logAck (no append,
// or one already waited for) waits for nothing.
func (a logAck) wait(p *Partition) error {
	if a.start.IsZero() {
		return nil
	}
	if err := a.w.Wait(); err != nil {
		return p.appendFailed(err, a.first, a.last)
	}
	p.metrics.Appended(p.topic, p.index, a.recs, a.size, time.Since(a.start))
	return nil
}

// appendLogNoWait is appendLog returning once the batches are written.
func (p *Partition) appendLogNoWait(batches ...record.Batch) (int64, int64, logAck, error) {
	if p.deleted.Load() {
		return -1, -1, logAck{}, fmt.Errorf("%w: %q was deleted", ErrDeleted, p.topic)
	}
	start := time.Now()
	first, last, w, err := p.log.AppendNoWait(batches...)
	if err == nil {
		n, size := 0, 0
		for _, bt := range batches {
			n += int(bt.NumRecords())
			size += len(bt)
		}
		return first, last, logAck{w: w, first: first, last: last, start: start, recs: n, size: size}, nil
	}
	return first, last, logAck{}, p.appendFailed(err, first, last)
}

// appendFailed records and maps the log's error for an append whose
// offsets, if any were assigned, are first to last.
func (p *Partition) appendFailed(err error, first, last int64) error {
	if errors.Is(err, log.ErrFailed) {
		p.failedSeen.Store(true)
	}
	err = p.mapAppendError(err, first, last)
	p.metrics.AppendFailed(p.topic, p.index, err)
	if first >= 0 && last >= first {
		p.logger.Error("partition: stopped accepting writes", "topic", p.topic, "partition", p.index, "err", err)
	}
	return &appendError{first: first, last: last, err: err}
}

func (p *Partition) mapAppendError(err error, first, last int64) error {
	switch {
	case p.deleted.Load() && errors.Is(err, log.ErrClosed):
		return fmt.Errorf("%w: %q was deleted: %w", ErrDeleted, p.topic, err)
	case errors.Is(err, log.ErrClosed):
		return fmt.Errorf("partition: %s: %w", p, err)
	case errors.Is(err, log.ErrBatchTooLarge):
		return fmt.Errorf("%w: %s: %w", ErrMessageTooLarge, p, err)
	case errors.Is(err, log.ErrInvalidBatch):
		return fmt.Errorf("%w: %s: %w", ErrInvalidBatch, p, err)
	}
	if errors.Is(err, vfs.ErrNoSpace) || errors.Is(err, syscall.ENOSPC) {
		err = fmt.Errorf("%w: %w", ErrDiskFull, err)
	}
	if first >= 0 && last >= first {
		return fmt.Errorf("%w: %s offsets %d-%d: %w", ErrUnknownOutcome, p, first, last, err)
	}
	return fmt.Errorf("partition: append to %s: %w", p, err)
}

// recompress rebuilds bt with codec, keeping every batch field the codec
// does not change: producer id, epoch and sequence, offset deltas (gaps
// included), timestamps and headers.
func recompress(bt record.Batch, codec record.Codec) (record.Batch, error) {
	bld, err := record.NewBuilder(&record.BuilderOptions{Codec: codec})
	if err != nil {
		return nil, err
	}
	bld.ProducerID = bt.ProducerID()
	bld.ProducerEpoch = bt.ProducerEpoch()
	bld.BaseSequence = bt.BaseSequence()
	bld.Transactional = bt.IsTransactional()
	bld.PartitionLeaderEpoch = bt.PartitionLeaderEpoch()
	if bt.LogAppendTime() {
		bld.LogAppendTime = true
		bld.AppendTime = bt.MaxTimestamp()
	}
	it := bt.Records(nil)
	defer it.Close()
	var hdrs []record.Header
	for it.Next() {
		r := it.Record()
		hdrs = hdrs[:0]
		for h := r.Headers(); h.Next(); {
			hdrs = append(hdrs, record.Header{Key: string(h.Key()), Value: h.Value()})
		}
		if err := bld.AppendAt(int32(r.Offset()-bt.BaseOffset()), record.Record{
			Key: r.Key(), Value: r.Value(), Headers: hdrs, Timestamp: r.Timestamp(),
		}); err != nil {
			return nil, err
		}
	}
	if err := it.Err(); err != nil {
		return nil, err
	}
	out, err := bld.Build(nil)
	if err != nil {
		return nil, err
	}
	// Keep the batch's span even if its last records were removed by
	// compaction: the last offset delta says how many offsets it takes.
	if out.LastOffsetDelta() != bt.LastOffsetDelta() {
		return nil, fmt.Errorf("recompressed batch spans %d offsets, the original %d", out.LastOffsetDelta()+1, bt.LastOffsetDelta()+1)
	}
	return out, nil
}

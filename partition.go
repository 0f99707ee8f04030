package folio

import (
	"errors"
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/foliolog/folio/readpath"
	"github.com/foliolog/folio/vfs"
	"github.com/foliolog/folio/log"
	"github.com/foliolog/folio/record"
	"github.com/foliolog/folio/topic"
)

// partition is one partition as the Broker serves it: its log, the topic
// settings the append path applies, and the idempotent-producer state.
type partition struct {
	b        *Broker
	topic    string
	id       topic.ID
	index    int32
	cfg      topic.Config
	log      *log.Log
	maxBatch int // the largest batch the partition stores (max.message.bytes)
	// codec is the topic's storage codec; keep is set for
	// CompressionProducer, which stores batches as the producer built them.
	codec record.Codec
	keep  bool

	syncs   *syncTimes // the log's fsync durations
	deleted atomic.Bool
	// failedSeen is set when an append met the log's fail-stop state.
	failedSeen atomic.Bool
	closeMu    sync.Once
	closeErr   error

	// pstateMu guards pstate, which is loaded on the first idempotent
	// append (from a snapshot plus a replay of the log after it) so that
	// opening thousands of partitions reads no producer state.
	pstateMu sync.Mutex
	pstate   *topic.ProducerState

	// seqMu guards seqLocks: one lock per producer id, held across Check,
	// Append and Update so that one producer's batches are checked and
	// written in one order while other producers (and non-idempotent
	// appends) proceed, and share fsyncs, concurrently.
	seqMu    sync.Mutex
	seqLocks map[int64]*seqLock
}

type seqLock struct {
	mu   sync.Mutex
	refs int // guarded by partition.seqMu
}

func newPartition(b *Broker, in topic.Info, index int32, l *log.Log) *partition {
	cfg := in.Config.WithDefaults()
	p := &partition{
		b: b, topic: in.Name, id: in.ID, index: index, cfg: cfg, log: l,
		maxBatch: int(min(int64(cfg.MaxMessageBytes), cfg.SegmentBytes)),
		seqLocks: map[int64]*seqLock{},
	}
	if c, ok := cfg.Compression.Codec(); ok {
		p.codec = c
	} else {
		p.keep = true
	}
	return p
}

// close closes the partition's log once (which wakes its waiters).
func (p *partition) close() error {
	p.closeMu.Do(func() { p.closeErr = p.log.Close() })
	return p.closeErr
}

// failed reports whether the partition refuses appends (fail-stop),
// whether an append or a background flush found out.
func (p *partition) failed() bool {
	return p.failedSeen.Load() || errors.Is(p.log.Err(), log.ErrFailed)
}

func (p *partition) String() string { return p.topic + "-" + strconv.Itoa(int(p.index)) }

// lockProducer takes the sequence lock of producer id pid.
func (p *partition) lockProducer(pid int64) func() {
	p.seqMu.Lock()
	l := p.seqLocks[pid]
	if l == nil {
		l = &seqLock{}
		p.seqLocks[pid] = l
	}
	l.refs++
	p.seqMu.Unlock()
	l.mu.Lock()
	return func() {
		l.mu.Unlock()
		p.seqMu.Lock()
		if l.refs--; l.refs == 0 {
			delete(p.seqLocks, pid)
		}
		p.seqMu.Unlock()
	}
}

// AppendResult says where an appended batch went.
type AppendResult struct {
	// FirstOffset and LastOffset are the offsets of the batch's first and
	// last record.
	FirstOffset, LastOffset int64
	// Duplicate is set when the batch retried one the partition already
	// holds (same producer, epoch and sequences): nothing was written and
	// the offsets are the original ones.
	Duplicate bool
}

// AppendBatch appends one encoded RecordBatch v2, as a Kafka producer sends
// it, to a partition, applying what a Kafka broker applies: the topic's max
// message bytes (ErrMessageTooLarge), its compression (the batch is
// recompressed when the topic names a codec and the batch uses another),
// its timestamp type, and for batches with a producer id the idempotence
// rules: a retry of one of the producer's last 5 batches returns the
// original offsets with Duplicate set, a sequence gap is
// ErrOutOfOrderSequence, an old epoch ErrProducerFenced. Control batches
// are refused: only Folio writes them.
//
// The batch's bytes are rewritten in place (offsets, leader epoch, and
// under LogAppendTime the timestamp and CRC); the caller may reuse them when
// AppendBatch returns. It returns after the append is acknowledged under
// the topic's flush policy.
func (b *Broker) AppendBatch(topicName string, partition int32, batch []byte) (AppendResult, error) {
	if err := b.writable(); err != nil {
		return AppendResult{}, err
	}
	p, err := b.lookup(topicName, partition)
	if err != nil {
		return AppendResult{}, err
	}
	return p.appendRaw(record.Batch(batch))
}

func (p *partition) appendRaw(bt record.Batch) (AppendResult, error) {
	if err := bt.Validate(); err != nil {
		return AppendResult{}, fmt.Errorf("%w: %s: %w", ErrInvalidBatch, p, err)
	}
	if bt.IsControl() {
		return AppendResult{}, fmt.Errorf("%w: %s: control batches are written by Folio only", ErrInvalidBatch, p)
	}
	if !p.keep && bt.Codec() != p.codec {
		re, err := recompress(bt, p.codec)
		if err != nil {
			return AppendResult{}, fmt.Errorf("%w: %s: recompressing to %s: %w", ErrInvalidBatch, p, p.codec, err)
		}
		bt = re
	}
	if len(bt) > p.maxBatch {
		return AppendResult{}, fmt.Errorf("%w: %s: batch of %d bytes, the topic's limit is %d", ErrMessageTooLarge, p, len(bt), p.maxBatch)
	}
	if bt.ProducerID() < 0 {
		first, last, err := p.appendLog(bt)
		return AppendResult{FirstOffset: first, LastOffset: last}, err
	}
	unlock := p.lockProducer(bt.ProducerID())
	defer unlock()
	st, err := p.producerState()
	if err != nil {
		return AppendResult{}, err
	}
	dup, err := st.Check(bt)
	if err != nil {
		return AppendResult{}, fmt.Errorf("folio: %s: %w", p, err)
	}
	if dup != nil {
		return AppendResult{FirstOffset: dup.FirstOffset, LastOffset: dup.LastOffset, Duplicate: true}, nil
	}
	first, last, err := p.appendLog(bt)
	if err != nil {
		return AppendResult{FirstOffset: first, LastOffset: last}, err
	}
	if err := st.Update(bt, first, last); err != nil {
		return AppendResult{FirstOffset: first, LastOffset: last}, fmt.Errorf("folio: %s: recording producer state: %w", p, err)
	}
	return AppendResult{FirstOffset: first, LastOffset: last}, nil
}

// appendProduced appends batches built by one in-process Producer for this
// partition, in order. With pid >= 0 they carry consecutive sequences, the
// first of which must follow the producer's last batch. It returns how many
// of the batches were appended (a failure can come after some), with
// their offsets rewritten in place.
func (p *partition) appendProduced(pid int64, batches []record.Batch) (int, error) {
	if pid < 0 {
		_, _, err := p.appendLog(batches...)
		return appendedCount(batches, err), err
	}
	unlock := p.lockProducer(pid)
	defer unlock()
	st, err := p.producerState()
	if err != nil {
		return 0, err
	}
	// Check the first batch only: the rest follow it by construction, and
	// Check compares against the state, which Update moves after the append.
	dup, err := st.Check(batches[0])
	if err != nil {
		return 0, fmt.Errorf("folio: %s: %w", p, err)
	}
	if dup != nil {
		return 0, fmt.Errorf("%w: %s: producer %d resent sequence %d", ErrDuplicateSequence, p, pid, batches[0].BaseSequence())
	}
	_, _, err = p.appendLog(batches...)
	n := appendedCount(batches, err)
	for _, bt := range batches[:n] {
		if uerr := st.Update(bt, bt.BaseOffset(), bt.LastOffset()); uerr != nil && err == nil {
			err = fmt.Errorf("folio: %s: recording producer state: %w", p, uerr)
		}
	}
	return n, err
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
// the package's: a full disk is ErrDiskFull, a deleted topic
// ErrUnknownTopic, a write or fsync failure after offsets were assigned
// ErrUnknownOutcome (the partition is failed; the records may be on disk).
func (p *partition) appendLog(batches ...record.Batch) (int64, int64, error) {
	if p.deleted.Load() {
		return -1, -1, fmt.Errorf("%w: %q", ErrUnknownTopic, p.topic)
	}
	start := time.Now()
	first, last, err := p.log.Append(batches...)
	if err == nil {
		n, size := 0, 0
		for _, bt := range batches {
			n += int(bt.NumRecords())
			size += len(bt)
		}
		p.b.metrics.Appended(p.topic, p.index, n, size, time.Since(start))
		return first, last, nil
	}
	if errors.Is(err, log.ErrFailed) {
		p.failedSeen.Store(true)
	}
	err = p.mapAppendError(err, first, last)
	p.b.metrics.AppendFailed(p.topic, p.index, err)
	if first >= 0 && last >= first {
		p.b.logger.Error("folio: partition stopped accepting writes", "topic", p.topic, "partition", p.index, "err", err)
	}
	return first, last, &appendError{first: first, last: last, err: err}
}

func (p *partition) mapAppendError(err error, first, last int64) error {
	switch {
	case p.deleted.Load() && errors.Is(err, log.ErrClosed):
		return fmt.Errorf("%w: %q was deleted: %w", ErrUnknownTopic, p.topic, err)
	case errors.Is(err, log.ErrClosed):
		return fmt.Errorf("%w: %s: %w", ErrClosed, p, err)
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
	return fmt.Errorf("folio: append to %s: %w", p, err)
}

// producerState returns the partition's producer state, loading it on
// first use: from the snapshot of the last clean shutdown, if there is one
// that the log still covers, then a replay of the batches after it (all of
// them without a snapshot), as Kafka rebuilds its ProducerStateManager.
func (p *partition) producerState() (*topic.ProducerState, error) {
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
	if data, err := readSnapshotFile(p.b.fs, p.b.dir, p.id, p.index); err == nil {
		end, lerr := st.LoadSnapshot(data)
		switch {
		case lerr != nil:
			p.b.logger.Warn("folio: ignoring producer-state snapshot", "partition", p.String(), "err", lerr)
			st, _ = topic.NewProducerState(nil)
		case end > p.log.LogEndOffset():
			// The log lost what the snapshot saw: it cannot vouch for it.
			p.b.logger.Warn("folio: producer-state snapshot is ahead of the log; replaying the whole log",
				"partition", p.String(), "snapshotEnd", end, "logEnd", p.log.LogEndOffset())
			st, _ = topic.NewProducerState(nil)
		default:
			from = max(from, end)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		p.b.logger.Warn("folio: reading producer-state snapshot", "partition", p.String(), "err", err)
	}
	if err := st.Replay(p.batchHeaders(from)); err != nil {
		return nil, fmt.Errorf("folio: %s: rebuilding producer state from offset %d: %w", p, from, err)
	}
	p.pstate = st
	return st, nil
}

// replayReadBytes is how much of the log one read of a producer-state
// replay covers.
const replayReadBytes = 1 << 20

// batchHeaders yields copies of the headers of the partition's visible
// batches from offset from on.
func (p *partition) batchHeaders(from int64) iter.Seq2[record.Batch, error] {
	return func(yield func(record.Batch, error) bool) {
		pos := from
		for {
			v, err := p.log.Read(pos, replayReadBytes)
			if errors.Is(err, log.ErrNoData) {
				return
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
				for len(buf) > 0 {
					size, err := record.CheckHeader(buf)
					if err != nil || size > len(buf) {
						return fmt.Errorf("%w: %s: batch header at offset %d: %v", ErrCorrupt, p, pos, err)
					}
					hdrs = append(hdrs, record.Batch(append([]byte(nil), buf[:record.HeaderSize]...)))
					buf = buf[size:]
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

func (p *partition) deleteRecordsBefore(offset int64) error {
	if _, err := p.log.DeleteRecordsBefore(offset); err != nil {
		var oor *log.OffsetOutOfRangeError
		if errors.As(err, &oor) {
			return &OffsetOutOfRangeError{Topic: p.topic, Partition: p.index, Offset: offset, Start: oor.Start, End: oor.End}
		}
		return fmt.Errorf("folio: %s: delete records before %d: %w", p, offset, err)
	}
	return nil
}

func (p *partition) enforceRetention(now time.Time) (int, error) {
	return p.log.EnforceRetention(now)
}

// Producer-state snapshots live in producerStateDir as
// "<topic id>-<partition>.snapshot", in the topic package's snapshot
// format (which has its own checksum); the id, not the name, keys them so
// a re-created topic never inherits a deleted one's producers.
const snapshotSuffix = ".snapshot"

func snapshotName(id topic.ID, partition int32) string {
	return id.String() + "-" + strconv.Itoa(int(partition)) + snapshotSuffix
}

func readSnapshotFile(fsys vfs.FS, dir string, id topic.ID, partition int32) ([]byte, error) {
	return readMetaFile(fsys, filepath.Join(dir, producerStateDir), snapshotName(id, partition))
}

// writeSnapshots saves the producer state of every partition that loaded
// one, at Close, so the next session replays only what comes after.
func (b *Broker) writeSnapshots(parts []*partition) error {
	sdir := filepath.Join(b.dir, producerStateDir)
	made := false
	var errs []error
	for _, p := range parts {
		p.pstateMu.Lock()
		st := p.pstate
		p.pstateMu.Unlock()
		if st == nil {
			continue
		}
		if !made {
			if err := b.fs.MkdirAll(sdir, 0o755); err != nil {
				return fmt.Errorf("folio: creating %s: %w", sdir, err)
			}
			if err := b.fs.SyncDir(b.dir); err != nil {
				return fmt.Errorf("folio: syncing %s: %w", b.dir, err)
			}
			made = true
		}
		data := st.MarshalSnapshot(p.log.LogEndOffset())
		if err := writeMetaFile(b.fs, sdir, snapshotName(p.id, p.index), data); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// removeSnapshots removes the snapshots of a deleted topic.
func (b *Broker) removeSnapshots(id topic.ID) {
	sdir := filepath.Join(b.dir, producerStateDir)
	entries, err := b.fs.ReadDir(sdir)
	if err != nil {
		return // none were written
	}
	prefix := id.String() + "-"
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), prefix) {
			_ = b.fs.Remove(filepath.Join(sdir, e.Name())) // a leftover is removed at the next Open
		}
	}
}

// cleanSnapshots removes snapshots of topics the catalog no longer holds
// (deleted by a session that crashed before removing them) and temporary
// files of interrupted writes.
func (b *Broker) cleanSnapshots(topics map[string]*topicState) {
	sdir := filepath.Join(b.dir, producerStateDir)
	entries, err := b.fs.ReadDir(sdir)
	if err != nil {
		return
	}
	live := map[string]bool{}
	for _, ts := range topics {
		live[ts.info.ID.String()] = true
	}
	for _, e := range entries {
		name := e.Name()
		id, _, ok := strings.Cut(name, "-")
		if ok && live[id] && strings.HasSuffix(name, snapshotSuffix) {
			continue
		}
		if err := b.fs.Remove(filepath.Join(sdir, name)); err != nil {
			b.logger.Warn("folio: removing stale producer-state file", "file", name, "err", err)
		}
	}
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

package group

import (
	"errors"
	"fmt"

	"github.com/foliolog/folio/errs"
	"github.com/foliolog/folio/log"
	"github.com/foliolog/folio/readpath"
	"github.com/foliolog/folio/record"
)

// OffsetsTopic is the internal topic that holds committed offsets.
const OffsetsTopic = "__consumer_offsets"

// Store is the offsets topic as the coordinator uses it: one append-only
// log per partition of __consumer_offsets. The Broker provides it with
// LogStore over the topic's partition logs.
type Store interface {
	// Partitions returns the number of partitions; a group's commits go to
	// partition PartitionFor(group, Partitions()). It must not change while
	// a Coordinator uses the Store.
	Partitions() int32
	// Append appends one batch to a partition and returns once it is as
	// durable as the topic's flush policy promises (FlushSync: fsynced),
	// with the offset of its first record. An error means the batch may or
	// may not have been written. Append may rewrite the batch's header.
	Append(partition int32, batch record.Batch) (offset int64, err error)
	// Scan calls fn with every batch of the partition in offset order, from
	// the first one kept to the end of what is written. The batch is valid
	// only during the call. An error from fn stops the scan and is returned.
	Scan(partition int32, fn func(record.Batch) error) error
}

// Truncater is a Store that can cut a partition's damaged tail. When the
// Coordinator's load meets damage (an *errs.Corruption with the offset of
// the first batch it could not use) in a Store that is a Truncater, it
// cuts the partition there, warns with what was cut, and goes on with the
// next partition, keeping every record before the damage: a directory that
// holds a valid prefix of its offsets always opens, as after a crash. A
// Store that is not a Truncater makes the load fail with the damage.
type Truncater interface {
	// Truncate removes the partition's records from offset on, durably,
	// and returns the end the partition had before.
	Truncate(partition int32, offset int64) (end int64, err error)
}

// Topics is the view of topic metadata the coordinator and members need:
// partition counts (assignments, commit validation) and offsets (lag,
// resets, and the check at load that no committed offset lies beyond its
// partition's end).
type Topics interface {
	// Partitions returns the number of partitions of a topic. A topic that
	// does not exist is an error matching ErrUnknownTopicOrPartition.
	Partitions(topic string) (int32, error)
	// Offsets returns a partition's offsets. A partition that does not
	// exist is an error matching ErrUnknownTopicOrPartition.
	Offsets(topic string, partition int32) (PartitionOffsets, error)
}

// PartitionOffsets are a partition's offsets at one moment.
type PartitionOffsets struct {
	// LogStart is the first offset a consumer can read.
	LogStart int64
	// HighWatermark is the end of what consumers see.
	HighWatermark int64
	// LogEnd is the offset the next record gets.
	LogEnd int64
	// Follower says the offsets are a follower replica's (a broker of a
	// cluster that does not lead the partition): its LogEnd may lag the
	// leader's, so the coordinator does not clamp committed offsets to it.
	Follower bool
}

// LogStore is a Store over the partition logs of __consumer_offsets, in
// partition order. The logs stay owned by the caller.
func LogStore(logs []*log.Log) Store { return NewLogStore(logs, nil) }

// LogStoreOptions change how a LogStore appends and reads, for the
// partitions of a replicated __consumer_offsets. A nil *LogStoreOptions
// means every default.
type LogStoreOptions struct {
	// Append, when set, appends a batch to partition p in place of the
	// log's own Append and returns once the batch is acknowledged, with
	// its first offset: for a replicated partition, the leader's acks=all
	// append, so that a commit is acknowledged once it is committed.
	// Default nil: the log's Append.
	Append func(p int32, b record.Batch) (int64, error)
	// ScanToLogEnd makes Scan read each log to its log end rather than
	// its high watermark: a new leader's log holds every commit
	// acknowledged in the epochs before, some of them maybe above the
	// high watermark it has yet to establish in its own (Kafka's
	// coordinator loads to the log end too). Default false.
	ScanToLogEnd bool
}

// NewLogStore is LogStore with options.
func NewLogStore(logs []*log.Log, opts *LogStoreOptions) Store {
	s := logStore{logs: logs}
	if opts != nil {
		s.opts = *opts
	}
	return s
}

type logStore struct {
	logs []*log.Log
	opts LogStoreOptions
}

func (s logStore) Partitions() int32 { return int32(len(s.logs)) }

func (s logStore) log(p int32) (*log.Log, error) {
	if p < 0 || int(p) >= len(s.logs) {
		return nil, fmt.Errorf("group: offsets partition %d of %d: %w", p, len(s.logs), ErrUnknownTopicOrPartition)
	}
	return s.logs[p], nil
}

func (s logStore) Append(p int32, b record.Batch) (int64, error) {
	l, err := s.log(p)
	if err != nil {
		return 0, err
	}
	if s.opts.Append != nil {
		return s.opts.Append(p, b)
	}
	first, _, err := l.Append(b)
	return first, err
}

// scanReadBytes is how much of a partition one read returns while loading.
const scanReadBytes = 1 << 20

func (s logStore) Scan(p int32, fn func(record.Batch) error) error {
	l, err := s.log(p)
	if err != nil {
		return err
	}
	// Under a flush policy other than FlushSync, or after recovery, the
	// tail may be written but not yet visible to readers: make it durable
	// so that the load sees every record the log holds, and a later load
	// sees the same ones.
	// A read-only log (a tool beside the writer) has nothing to sync: it
	// sees what the writer made visible.
	if err := l.Sync(); err != nil && !errors.Is(err, log.ErrReadOnly) {
		return fmt.Errorf("group: syncing %s before loading: %w", l.Dir(), err)
	}
	bound, end := log.BoundHighWatermark, l.HighWatermark
	if s.opts.ScanToLogEnd {
		bound, end = log.BoundLogEnd, l.LogEndOffset
	}
	off := l.LogStartOffset()
	for off < end() {
		v, err := l.ReadBounded(off, scanReadBytes, bound)
		if err != nil && errors.Is(err, errs.ErrCorrupt) {
			// The batch at off (or one in the same read) is damaged: say
			// where, so that the load can cut the partition there.
			return errs.Corrupt(ErrCorrupt, l.Dir(), -1, err).AtOffset(off)
		}
		if err != nil {
			var oor *log.OffsetOutOfRangeError
			if errors.As(err, &oor) && oor.Start > off {
				off = oor.Start // retention moved the start meanwhile
				continue
			}
			if errors.Is(err, log.ErrNoData) {
				return nil
			}
			return fmt.Errorf("group: reading %s at %d: %w", l.Dir(), off, err)
		}
		next := off
		err = readpath.Guard(func() error {
			buf, err := v.Bytes()
			if err != nil {
				return err
			}
			for len(buf) > 0 {
				bt, rest, err := record.Parse(buf)
				if err != nil {
					return errs.Corrupt(ErrCorrupt, l.Dir(), -1, err).AtOffset(next)
				}
				buf = rest
				if bt.LastOffset() < off {
					continue
				}
				next = bt.LastOffset() + 1
				if bt.IsControl() {
					continue
				}
				if err := fn(bt); err != nil {
					return err
				}
			}
			return nil
		})
		v.Release()
		if err != nil {
			return err
		}
		if next == off {
			return errs.Corruptf(ErrCorrupt, l.Dir(), -1, "reading made no progress").AtOffset(off)
		}
		off = next
	}
	return nil
}

// Truncate cuts partition p's log at offset (see Truncater).
func (s logStore) Truncate(p int32, offset int64) (int64, error) {
	l, err := s.log(p)
	if err != nil {
		return 0, err
	}
	end := l.LogEndOffset()
	if err := l.TruncateTo(offset); err != nil {
		return end, err
	}
	return end, nil
}

package folio

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/foliolog/folio/log"
	"github.com/foliolog/folio/partition"
	"github.com/foliolog/folio/topic"
	"github.com/foliolog/folio/vfs"
)

// brokerPart is one partition as the Broker serves it: the broker-side
// partition (package partition) and the durations of its fsyncs, which the
// Broker sees through the timing file layer its log runs on.
type brokerPart struct {
	*partition.Partition
	syncs *syncTimes
}

// AppendResult says where an appended batch went: what a Kafka Produce
// response carries for the partition.
type AppendResult = partition.AppendResult

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
// the topic's flush policy, with the batch's offsets, the log append time
// (-1 under CreateTime) and the partition's log start offset.
//
// If ctx has ended before the call, or ends while the batch waits for an
// earlier batch of the same producer, nothing is written and the error is
// ctx's. The write and fsync themselves are not interrupted; a ctx that
// ends while the acknowledgement is still held (by replication) gives an
// error wrapping ErrUnknownOutcome and ctx's error.
func (b *Broker) AppendBatch(ctx context.Context, topicName string, partition int32, batch []byte) (AppendResult, error) {
	if err := b.writable(); err != nil {
		return AppendResult{}, err
	}
	p, err := b.lookup(topicName, partition)
	if err != nil {
		return AppendResult{}, err
	}
	res, err := p.AppendBatch(ctx, batch)
	return res, brokerErr(err)
}

// brokerErr adds this package's ErrClosed to an error of a closed
// partition, so that errors.Is(err, ErrClosed) holds whichever layer saw
// the close. The partition's other sentinels are this package's already.
func brokerErr(err error) error {
	if err != nil && errors.Is(err, partition.ErrClosed) && !errors.Is(err, ErrClosed) {
		return fmt.Errorf("%w: %w", ErrClosed, err)
	}
	return err
}

// Partition returns the broker-side partition of a topic, for code that
// serves it other than through a Producer or Consumer: a Kafka endpoint, a
// replica, a tool. Appends through it keep the topic's rules, idempotence
// and metrics. The partition stays owned by the Broker: do not close it.
// Once its topic is deleted it is closed: appends fail with
// ErrUnknownTopic, reads with partition.ErrClosed, and Deleted reports
// true.
func (b *Broker) Partition(topicName string, partition int32) (*partition.Partition, error) {
	if b.closed.Load() {
		return nil, ErrClosed
	}
	p, err := b.lookup(topicName, partition)
	if err != nil {
		return nil, err
	}
	return p.Partition, nil
}

// Sync fsyncs every record of a partition appended so far, whatever its
// topic's flush policy, and returns once they are durable.
func (b *Broker) Sync(topicName string, partition int32) error {
	if err := b.writable(); err != nil {
		return err
	}
	p, err := b.lookup(topicName, partition)
	if err != nil {
		return err
	}
	return brokerErr(p.Sync())
}

// Compact cleans a partition of a compacted topic now, whatever its dirty
// ratio, as the Broker's log cleaner would (see the package documentation)
// and returns what the pass did. A topic that does not compact gives an
// error wrapping log.ErrNotCompacted.
func (b *Broker) Compact(ctx context.Context, topicName string, partition int32) (log.CompactResult, error) {
	if err := b.writable(); err != nil {
		return log.CompactResult{}, err
	}
	p, err := b.lookup(topicName, partition)
	if err != nil {
		return log.CompactResult{}, err
	}
	res, err := p.Compact(ctx)
	return res, brokerErr(err)
}

// OffsetForTime returns the first offset of a partition whose batch has a
// timestamp at or after t (Kafka's ListOffsets by timestamp), with ok false
// when no visible record has one. Records before the one matching t may
// share its batch.
func (b *Broker) OffsetForTime(topicName string, partition int32, t time.Time) (offset int64, ok bool, err error) {
	if b.closed.Load() {
		return 0, false, ErrClosed
	}
	p, err := b.lookup(topicName, partition)
	if err != nil {
		return 0, false, err
	}
	offset, ok, err = p.OffsetForTime(t)
	return offset, ok, brokerErr(err)
}

// Producer-state snapshots live in producerStateDir as
// "<topic id>-<partition>.snapshot", in the topic package's snapshot
// format (which has its own checksum); the id, not the name, keys them so
// a re-created topic never inherits a deleted one's producers.
const snapshotSuffix = ".snapshot"

func snapshotName(id topic.ID, partition int32) string {
	return id.String() + "-" + strconv.Itoa(int(partition)) + snapshotSuffix
}

// snapshotDir is the directory of the Broker's producer-state snapshots,
// created (durably) by the first snapshot written.
type snapshotDir struct {
	fs  vfs.FS
	dir string // the data directory

	// mu guards made.
	mu   sync.Mutex
	made bool
}

func (d *snapshotDir) path() string { return filepath.Join(d.dir, producerStateDir) }

func (d *snapshotDir) ensure() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.made {
		return nil
	}
	if err := d.fs.MkdirAll(d.path(), 0o755); err != nil {
		return fmt.Errorf("folio: creating %s: %w", d.path(), err)
	}
	if err := d.fs.SyncDir(d.dir); err != nil {
		return fmt.Errorf("folio: syncing %s: %w", d.dir, err)
	}
	d.made = true
	return nil
}

// snapshotFile is one partition's partition.SnapshotStore: a metadata file
// of the data directory, written tmp + fsync + rename + fsync(dir).
type snapshotFile struct {
	d    *snapshotDir
	name string
}

// String is the snapshot file's path, which the partition's messages name.
func (f snapshotFile) String() string { return filepath.Join(f.d.path(), f.name) }

func (f snapshotFile) ReadSnapshot() ([]byte, error) {
	return readMetaFile(f.d.fs, f.d.path(), f.name)
}

func (f snapshotFile) WriteSnapshot(data []byte) error {
	if err := f.d.ensure(); err != nil {
		return err
	}
	return writeMetaFile(f.d.fs, f.d.path(), f.name, data)
}

// writeSnapshots saves the producer state of every partition that loaded
// one, at Close, so the next session replays only what comes after.
func (b *Broker) writeSnapshots(parts []*brokerPart) error {
	var errs []error
	for _, p := range parts {
		if _, err := p.SaveProducerState(); err != nil {
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

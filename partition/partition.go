package partition

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/foliolog/folio/log"
	"github.com/foliolog/folio/record"
	"github.com/foliolog/folio/topic"
	"github.com/foliolog/folio/vfs"
)

// Partition is one partition of a topic as a broker serves it: its log,
// the topic settings the append path applies, the idempotent producers'
// state, and the replication hook. All methods are safe for concurrent
// use. See the package documentation for the model.
type Partition struct {
	topic string
	id    topic.ID
	index int32
	// cfg is the topic's configuration with every default spelled out
	// and what the append path derives from it; Reconfigure replaces it,
	// and an append loads it once.
	cfg atomic.Pointer[liveConfig]
	log *log.Log
	// reconfMu serialises Reconfigure, so that the log and cfg change in
	// the same order for every caller.
	reconfMu sync.Mutex

	logger  *slog.Logger
	metrics Metrics
	snaps   SnapshotStore // nil: none
	repl    Replication   // nil: SingleNode
	now     func() time.Time

	// recordsOut and bytesOut count what Delivered reported since Open.
	recordsOut, bytesOut atomic.Int64

	deleted atomic.Bool
	// failedSeen is set when an append met the log's fail-stop state.
	failedSeen atomic.Bool
	closeOnce  sync.Once
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
	spareSeq *seqLock // one no append holds, for the next (see lockProducer)

	// followMu serialises AppendFollower and TruncateTo. Lock order:
	// followMu, then pstateMu.
	followMu sync.Mutex
	// truncated is set once TruncateTo dropped a loaded producer state: a
	// snapshot ahead of the log is then expected, not damage.
	truncated atomic.Bool
}

type seqLock struct {
	mu   sync.Mutex
	refs int // guarded by Partition.seqMu
}

// Open opens partition index of the topic in, whose log lives in dir on
// fsys: the log (recovering it from st as log.Open does, and reporting
// what recovery did to Options.Logger), with its options taken from the
// topic's configuration. opts nil means defaults.
func Open(fsys vfs.FS, dir string, in topic.Info, index int32, st log.State, opts *Options) (*Partition, error) {
	o := opts.withDefaults()
	external := o.Replication != nil && o.Replication.ExternalHighWatermark()
	lo, err := logOptions(in.Config, &o, external)
	if err != nil {
		return nil, fmt.Errorf("partition: topic %q: %w", in.Name, err)
	}
	l, err := log.Open(fsys, dir, lo, st)
	if err != nil {
		return nil, fmt.Errorf("partition: opening %s-%d: %w", in.Name, index, err)
	}
	if rec := l.Recovery(); !rec.Clean || len(rec.FilesRemoved) > 0 {
		lvl := slog.LevelInfo
		if rec.BytesCut > 0 || rec.SegmentsRemoved > 0 {
			lvl = slog.LevelWarn
		}
		o.Logger.Log(context.Background(), lvl, "partition: recovered", "topic", in.Name, "partition", index,
			"segmentsScanned", rec.SegmentsScanned, "bytesScanned", rec.BytesScanned,
			"bytesCut", rec.BytesCut, "segmentsRemoved", rec.SegmentsRemoved, "filesRemoved", rec.FilesRemoved)
	}
	for _, d := range l.Recovery().Damage {
		o.Logger.Warn("partition: damage found at open", "topic", in.Name, "partition", index, "error", d)
	}
	if rec := l.Recovery(); rec.EpochCheckpoint != nil {
		o.Logger.Warn("partition: leader-epoch checkpoint damaged; rebuilt from the log's batches", "topic", in.Name, "partition", index,
			"file", filepath.Join(dir, log.EpochCheckpointFile), "err", rec.EpochCheckpoint)
	}
	p := &Partition{
		topic: in.Name, id: in.ID, index: index, log: l,
		logger: o.Logger, metrics: o.Metrics, snaps: o.Snapshots, repl: o.Replication, now: o.Now,
		seqLocks: map[int64]*seqLock{},
	}
	p.cfg.Store(newLiveConfig(in.Config))
	if !o.ReadOnly {
		p.repairSnapshot()
	}
	return p, nil
}

// Topic returns the partition's topic name; Index its number in the
// topic; TopicID the topic's id (which changes when the topic is deleted
// and created again); Config the topic's configuration with every default
// spelled out.
func (p *Partition) Topic() string        { return p.topic }
func (p *Partition) Index() int32         { return p.index }
func (p *Partition) TopicID() topic.ID    { return p.id }
func (p *Partition) Config() topic.Config { return p.cfg.Load().cfg }

// MaxBatchBytes returns the largest batch the partition stores: the
// topic's max.message.bytes, capped by its segment size. Reconfigure may
// change it: a writer that caches it re-reads it.
func (p *Partition) MaxBatchBytes() int { return p.cfg.Load().maxBatch }

// liveConfig is a topic configuration in force on the partition, with
// what the append path derives from it. It never changes once stored.
type liveConfig struct {
	cfg      topic.Config // every default spelled out
	maxBatch int          // maxBatchBytes(cfg)
	// codec is the topic's storage codec; keep is set for
	// CompressionProducer, which stores batches as the producer built them.
	codec record.Codec
	keep  bool
}

func newLiveConfig(cfg topic.Config) *liveConfig {
	cfg = cfg.WithDefaults()
	lc := &liveConfig{cfg: cfg, maxBatch: maxBatchBytes(cfg)}
	if c, ok := cfg.Compression.Codec(); ok {
		lc.codec = c
	} else {
		lc.keep = true
	}
	return lc
}

// Reconfigure applies a topic's new configuration to the open partition,
// as Kafka applies a topic config change: every setting changes live.
//   - max.message.bytes and compression.type: from the next append (a
//     larger max.message.bytes is accepted up to segment.bytes, as at
//     open; batches in another codec are recompressed to the new one).
//   - message.timestamp.type: from the next append.
//   - segment.bytes, segment.ms: from the next append's roll check.
//   - index.interval.bytes: segments created from now on (the next
//     roll); the active segment keeps the interval it was created with.
//   - retention.ms, retention.bytes: from the next retention pass.
//   - cleanup.policy: compact starts the log's cleaning (and the refusal
//     of keyless records) at once, delete stops it; the compaction
//     settings apply from the next cleaning pass.
//   - flush: appends from now on wait as the new policy says.
//   - read.path: segments opened from now on, so new readers of the next
//     active segment and of sealed segments as they are next opened; a
//     segment already open keeps its path until it is closed.
//
// See log.Log.Reconfigure for the details. An invalid configuration is
// refused with an error wrapping ErrInvalidConfig, and nothing changes.
// The caller makes the configuration durable (the catalog) before or
// after, as its order of failure demands; the partition only holds it in
// memory, and the next Open takes it from the caller again.
func (p *Partition) Reconfigure(cfg topic.Config) error {
	next, err := p.CheckReconfigure(cfg)
	if err != nil {
		return err
	}
	lo, err := logOptions(next, &Options{}, false)
	if err != nil {
		return err
	}
	p.reconfMu.Lock()
	defer p.reconfMu.Unlock()
	if err := p.log.Reconfigure(lo); err != nil {
		return fmt.Errorf("partition: reconfigure %s: %w", p, err)
	}
	p.cfg.Store(newLiveConfig(next))
	return nil
}

// CheckReconfigure reports whether Reconfigure would accept cfg, changing
// nothing, and returns cfg with its defaults spelled out.
func (p *Partition) CheckReconfigure(cfg topic.Config) (topic.Config, error) {
	if err := ValidateConfig(cfg); err != nil {
		return topic.Config{}, err
	}
	return cfg.WithDefaults(), nil
}

// String returns "<topic>-<partition>", the name of its directory.
func (p *Partition) String() string { return p.topic + "-" + strconv.Itoa(int(p.index)) }

// Log returns the partition's log, for what the partition does not wrap:
// the group coordinator's store, the replication layer's truncation and
// leader epochs, statistics. Appending to it directly bypasses the
// partition's validation, idempotence and metrics. The log stays owned by
// the partition: do not close it.
func (p *Partition) Log() *log.Log { return p.log }

// Failed reports whether the partition refuses appends after a failed
// write or fsync (fail-stop), whether an append or a background flush
// found out. Reopening recovers it.
func (p *Partition) Failed() bool {
	return p.failedSeen.Load() || errors.Is(p.log.Err(), log.ErrFailed)
}

// Deleted reports whether CloseDeleted closed the partition.
func (p *Partition) Deleted() bool { return p.deleted.Load() }

// Close closes the partition's log (which fsyncs what it holds and wakes
// every waiter). It does not write the producer-state snapshot: call
// SaveProducerState first. Close is idempotent; later calls return the
// first call's error.
func (p *Partition) Close() error {
	p.closeOnce.Do(func() { p.closeErr = p.log.Close() })
	return p.closeErr
}

// CloseDeleted closes the partition because its topic is being deleted
// (its owner removes the directory): appends in flight and later calls
// fail with an error wrapping ErrDeleted.
func (p *Partition) CloseDeleted() error {
	p.deleted.Store(true)
	return p.Close()
}

// Refresh has a read-only partition look at its directory again (new
// records, rolled and deleted segments; log.Log.Refresh).
func (p *Partition) Refresh() error {
	if err := p.log.Refresh(); err != nil {
		return fmt.Errorf("partition: refreshing %s: %w", p, err)
	}
	return nil
}

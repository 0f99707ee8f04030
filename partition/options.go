package partition

import (
	"context"
	"log/slog"
	"time"

	"github.com/foliolog/folio/log"
)

// Options configure a Partition. A nil *Options, and every zero field,
// means the default stated on the field. The fields a data directory's
// owner shares between its partitions (Caps, Cleaner, BeforeFirstWrite,
// Now) are passed the same to every Open.
type Options struct {
	// Logger receives the partition's own events: what recovery cut at
	// open, a producer-state snapshot that was ignored, a partition that
	// stopped accepting writes. Default: a logger that discards everything.
	Logger *slog.Logger

	// Metrics hears every append as it happens. Default nil: nothing is
	// reported.
	Metrics Metrics

	// Snapshots keeps the partition's producer-state snapshot (see
	// SnapshotStore). Default nil: none is read or written, and the
	// producer state of an idempotent producer is rebuilt by replaying the
	// whole log at the first idempotent append.
	Snapshots SnapshotStore

	// Replication takes part in every append and may own the high
	// watermark (see Replication). Default nil: SingleNode, one broker,
	// whose acknowledgement is the local one and whose high watermark the
	// log keeps by its flush policy.
	Replication Replication

	// Caps bounds the open files and mappings of sealed segments; share one
	// between every partition of a process. Default nil: the log's own,
	// with log.DefaultMaxOpenSegments.
	Caps *log.ResourceCaps

	// Cleaner compacts the partition if its topic's cleanup policy
	// compacts; share one between every compacted partition. Default nil:
	// the log starts a private one.
	Cleaner *log.Cleaner

	// RetentionCheckInterval is how often the partition applies its
	// topic's retention on its own. Default log.DefaultRetentionCheckInterval;
	// negative disables the schedule (EnforceRetention still works).
	RetentionCheckInterval time.Duration

	// BeforeFirstWrite, if set, runs once before the partition's first
	// change to its directory after Open (log.Options.BeforeFirstWrite):
	// where the data directory's owner removes its clean-shutdown marker.
	// Default nil.
	BeforeFirstWrite func() error

	// Now is the clock for retention, log-append time, segment age and
	// producer-state expiry. Default time.Now.
	Now func() time.Time

	// ReadOnly opens the partition's log read-only, beside a live writer
	// in another process (log.Options.ReadOnly): appends fail, reads see
	// the complete batches as of Open or the last Refresh. Default false.
	ReadOnly bool
}

func (o *Options) withDefaults() Options {
	var c Options
	if o != nil {
		c = *o
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Metrics == nil {
		c.Metrics = noMetrics{}
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if _, single := c.Replication.(SingleNode); single {
		c.Replication = nil // the same behaviour without the calls
	}
	return c
}

// Metrics hears a partition's appends and deliveries. Its methods are
// called on the append and read paths, once per call (never per record),
// from many goroutines at once: they must be fast, safe for concurrent use, and must
// not call back into the partition. The root package's folio.Metrics is
// one.
type Metrics interface {
	// Appended reports records appended: how many, their size in bytes as
	// stored (batch headers included), and how long the append took,
	// including the wait for the fsync under FlushSync.
	Appended(topic string, partition int32, records, bytes int, took time.Duration)
	// AppendFailed reports an append that wrote nothing or whose outcome
	// is unknown.
	AppendFailed(topic string, partition int32, err error)
	// Consumed reports records delivered to a reader (Partition.Delivered):
	// how many, and the bytes of the batches they came from.
	Consumed(topic string, partition int32, records, bytes int)
}

type noMetrics struct{}

func (noMetrics) Appended(string, int32, int, int, time.Duration) {}
func (noMetrics) AppendFailed(string, int32, error)               {}
func (noMetrics) Consumed(string, int32, int, int)                {}

// SnapshotStore keeps one partition's producer-state snapshot: the state of
// its idempotent producers as of a log end offset, in the topic package's
// snapshot format (which carries its own checksum), so that a restart
// replays only the log after it. The data directory's owner decides where
// it lives; the partition decides what is in it and whether to trust it.
// A writing Open checks the snapshot and rewrites a damaged one from the
// log; a store that is a fmt.Stringer is named by its String in the
// partition's reports.
type SnapshotStore interface {
	// ReadSnapshot returns the last snapshot written, or an error wrapping
	// os.ErrNotExist when there is none.
	ReadSnapshot() ([]byte, error)
	// WriteSnapshot replaces the snapshot durably.
	WriteSnapshot(data []byte) error
}

// Replication is the hook through which a replication layer holds a
// partition's acknowledgements and owns its high watermark, as a Kafka
// leader does with its in-sync replicas. The partition calls it once per
// append call, never per record, and holds none of its locks while
// AfterAppend waits, so one producer's next batches and other producers go
// on meanwhile.
//
// The default, SingleNode, is one broker: an append is acknowledged once
// the log holds it under the topic's flush policy, and the high watermark
// is the log's own (the durable end under FlushSync, the log end
// otherwise).
type Replication interface {
	// ExternalHighWatermark reports whether the replication layer sets the
	// partition's high watermark (Partition.SetHighWatermark), as a leader
	// sets it from its followers' log ends, instead of the log by its
	// flush policy. It is asked once, when the partition opens. The log
	// never lets a high watermark set from outside pass the durable end
	// under FlushSync, nor the log end.
	ExternalHighWatermark() bool

	// BeforeAppend is called before an append is written. An error refuses
	// the append definitely: nothing is written, and the caller gets the
	// error as it is (Kafka's NOT_LEADER_OR_FOLLOWER, or NOT_ENOUGH_REPLICAS
	// when the in-sync replicas are fewer than min.insync.replicas).
	BeforeAppend(p *Partition) error

	// AfterAppend is called once the local log holds the append's batches,
	// offsets first to last, as durably as the topic's flush policy
	// promises, and the append is acknowledged when it returns nil: with
	// acks=all, once the high watermark has passed last (Partition.Wait).
	// ctx is the appender's. An error (ctx's when it ended first, or
	// Kafka's NOT_ENOUGH_REPLICAS_AFTER_APPEND) reaches the appender
	// wrapped in ErrUnknownOutcome: the records are in the local log and
	// may yet be replicated, or be truncated away.
	AfterAppend(ctx context.Context, p *Partition, first, last int64) error
}

// SingleNode is the Replication of one broker without followers: nothing
// to wait for, the high watermark the log's own. Options.Replication nil
// means SingleNode. Embed it in a Replication to inherit these defaults.
type SingleNode struct{}

// ExternalHighWatermark returns false: the log keeps its own.
func (SingleNode) ExternalHighWatermark() bool { return false }

// BeforeAppend admits every append.
func (SingleNode) BeforeAppend(*Partition) error { return nil }

// AfterAppend acknowledges at once: the local log is all there is.
func (SingleNode) AfterAppend(context.Context, *Partition, int64, int64) error { return nil }

var _ Replication = SingleNode{}

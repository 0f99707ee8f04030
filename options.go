package folio

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/foliolog/folio/log"
	"github.com/foliolog/folio/vfs"
)

// Defaults of Options.
const (
	// DefaultCheckpointInterval is how often the Broker writes the
	// checkpoint file (Kafka's log.flush.offset.checkpoint.interval.ms).
	DefaultCheckpointInterval = 60 * time.Second
	// DefaultRetentionCheckInterval is how often each partition applies
	// retention (Kafka's log.retention.check.interval.ms).
	DefaultRetentionCheckInterval = 5 * time.Minute
	// DefaultMaxOpenSegments is the most segments of all partitions that
	// hold open files and mappings at once by default; below a limit on
	// open files too low for it, the default is what fits the limit (see
	// Options.MaxOpenSegments).
	DefaultMaxOpenSegments = 1024
)

// minMaxOpenSegments is the smallest default cap, whatever the limit.
const minMaxOpenSegments = 8

// defaultMaxOpenSegments is Options.MaxOpenSegments' default: at most
// DefaultMaxOpenSegments, and no more than fit in three quarters of the
// process's limit on open files (at least 64 left over) at
// log.DescriptorsPerSegment each.
func defaultMaxOpenSegments() int {
	lim, ok := openFilesLimit()
	if !ok {
		return DefaultMaxOpenSegments
	}
	reserve := max(lim/4, 64)
	if lim <= reserve+log.DescriptorsPerSegment*minMaxOpenSegments {
		return minMaxOpenSegments
	}
	return int(min((lim-reserve)/log.DescriptorsPerSegment, DefaultMaxOpenSegments))
}

// Options configure a Broker. A nil *Options, and every zero field, means
// the default stated on the field.
type Options struct {
	// ReadOnly opens the data directory without its lock and without
	// writing anything: no recovery, no checkpoint, no marker. Topic
	// changes and produce return ErrReadOnly. Readers see each partition
	// up to its last complete valid batch, as of the open or the last
	// Broker.Refresh. Default false. OpenReadOnly sets it.
	ReadOnly bool

	// Logger receives the Broker's own events: recovery reports, failed
	// checkpoints, partitions that stopped accepting writes. Default: a
	// logger that discards everything.
	Logger *slog.Logger

	// Metrics receives counters and latencies as they happen (see
	// Metrics). Default nil: none.
	Metrics Metrics

	// CheckpointInterval is how often the recovery points and log start
	// offsets of every partition are written to CheckpointFile; they are
	// also written at Close. A longer interval makes recovery after a
	// crash scan more. Default DefaultCheckpointInterval; negative
	// disables the periodic write (Close still writes it).
	CheckpointInterval time.Duration

	// RetentionCheckInterval is how often each partition deletes segments
	// past its topic's retention. Default DefaultRetentionCheckInterval;
	// negative disables the schedule (EnforceRetention still works).
	RetentionCheckInterval time.Duration

	// MaxOpenSegments bounds how many segments, across all partitions and
	// active ones included, hold open files and mappings at once; idle ones
	// beyond it are closed, least recently used first, and reopen at their
	// next append or read (an active one is fsynced first if it holds
	// unsynced records, so closing it loses nothing). An open segment
	// holds up to log.DescriptorsPerSegment (4) descriptors. Default: as
	// many as fit in three quarters of the process's limit on open files
	// (RLIMIT_NOFILE, which Go raises to the hard limit at start), at
	// most DefaultMaxOpenSegments: 192 under a limit of 1024. Ten thousand
	// partitions then open, take records and read under ulimit -n 1024.
	MaxOpenSegments int

	// Cleaner configures the one log cleaner the Broker shares between the
	// partitions of every compacted topic (cleanup.policy compact or
	// compact,delete): how many partitions are cleaned at once, and the
	// memory their key maps may take together. Nil means the log package's
	// defaults (log.DefaultCleanerWorkers worker, log.DefaultCleanerBufferBytes
	// of map, a look every log.DefaultCleanerCheckInterval). A read-only
	// Broker has no cleaner.
	Cleaner *log.CleanerOptions

	// Now is the clock for retention, log-append time, producer-state
	// expiry, tombstone retention and the clean-shutdown marker. Default
	// time.Now.
	Now func() time.Time

	// FS is the file layer under every file of the data directory except
	// the lock file, which is flocked through the operating system (so the
	// directory must be a real one there too): segments,
	// indexes, the catalog, checkpoints, snapshots. Default vfs.Default,
	// the operating system's files. A vfs/faultfs.FS here fails writes and
	// cuts power in tests of code built on the Broker.
	FS vfs.FS

	// Cluster makes the Broker one of several replicating topics between
	// them (see ClusterOptions). Default nil: one broker, every partition
	// its own leader, as before replication.
	Cluster *ClusterOptions
}

// withDefaults returns a copy of o (nil allowed) with zero fields set to
// their defaults.
func (o *Options) withDefaults() Options {
	var c Options
	if o != nil {
		c = *o
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.CheckpointInterval == 0 {
		c.CheckpointInterval = DefaultCheckpointInterval
	}
	if c.RetentionCheckInterval == 0 {
		c.RetentionCheckInterval = DefaultRetentionCheckInterval
	}
	if c.MaxOpenSegments == 0 {
		c.MaxOpenSegments = defaultMaxOpenSegments()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.FS == nil {
		c.FS = vfs.Default
	}
	return c
}

// validate names the first bad field of an Options that went through
// withDefaults.
func (o *Options) validate() error {
	if o.MaxOpenSegments < 0 {
		return fmt.Errorf("%w: Options.MaxOpenSegments %d is negative", ErrInvalidConfig, o.MaxOpenSegments)
	}
	return nil
}

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
	// DefaultMaxOpenSegments caps the sealed segments of all partitions
	// that hold open files and mappings at once.
	DefaultMaxOpenSegments = 1024
)

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

	// MaxOpenSegments bounds how many sealed segments, across all
	// partitions, hold open files and mappings at once; idle ones beyond
	// it are closed least recently used first. Default
	// DefaultMaxOpenSegments. Each partition's active segment is open on
	// top of this.
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
		c.MaxOpenSegments = DefaultMaxOpenSegments
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

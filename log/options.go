package log

import (
	"fmt"
	"math"
	"time"

	"github.com/foliolog/folio/readpath"
	"github.com/foliolog/folio/segment"
)

// Defaults, Kafka's where Kafka has one.
const (
	DefaultSegmentBytes           = 1 << 30 // segment.bytes
	MaxSegmentBytes               = math.MaxInt32
	DefaultSegmentAge             = 7 * 24 * time.Hour // segment.ms
	DefaultIndexIntervalBytes     = 4096               // index.interval.bytes
	DefaultMaxIndexBytes          = 10 << 20           // segment.index.bytes
	DefaultMaxBatchBytes          = 1<<20 + 12         // message.max.bytes
	DefaultRetentionAge           = 7 * 24 * time.Hour // retention.ms
	DefaultRetentionCheckInterval = 5 * time.Minute    // log.retention.check.interval.ms
	DefaultMinCleanableDirtyRatio = 0.5                // min.cleanable.dirty.ratio
	DefaultDeleteRetention        = 24 * time.Hour     // delete.retention.ms
	// minSegmentBytes leaves room for at least one batch header, so a
	// roll always makes progress.
	minSegmentBytes = 128
)

// Options configure a Log. A nil *Options, and every zero field, means the
// default stated on the field.
type Options struct {
	// SegmentBytes is the size at which the active segment rolls: an
	// append that would take it past this size goes to a new segment.
	// Default 1 GiB; at most MaxSegmentBytes (2 GiB - 1), because
	// positions inside a segment are 32-bit. The active segment's mapping
	// (mmap read path) is this large.
	SegmentBytes int64
	// SegmentAge rolls a non-empty active segment once it is older than
	// this, measured from when this Log created or reopened it. Default 7
	// days; negative disables rolling by age.
	SegmentAge time.Duration
	// IndexIntervalBytes is how many bytes of batches lie between two index
	// entries. Default 4096; 1 puts an entry at (nearly) every batch (0
	// means the default, so Kafka's 0 is spelled 1 here).
	IndexIntervalBytes int
	// MaxIndexBytes is the size of each index file of the active segment;
	// a full index rolls the segment. Default 10 MiB.
	MaxIndexBytes int64
	// MaxBatchBytes is the largest batch Append accepts, header included.
	// Default 1 MiB + 12. It must not exceed SegmentBytes.
	MaxBatchBytes int
	// RetentionBytes deletes the oldest segments while the log without
	// them still holds at least this many bytes. Zero or negative (the
	// default) is unlimited.
	RetentionBytes int64
	// RetentionAge deletes a segment once its largest record timestamp is
	// older than this. Default 7 days; negative is unlimited.
	RetentionAge time.Duration
	// RetentionCheckInterval is how often the Log's own goroutine applies
	// retention. Default 5 minutes; negative disables the schedule
	// (EnforceRetention still works on demand).
	RetentionCheckInterval time.Duration
	// Compact turns on log compaction (Kafka's cleanup.policy=compact; with
	// retention left on as well it is compact,delete): a cleaner keeps the
	// latest record of each key and drops the older ones, and Append
	// refuses records without a key (ErrNoKey). See the package
	// documentation. Default false.
	Compact bool
	// MinCleanableDirtyRatio is the share of the cleanable part of the log
	// not yet cleaned at which the cleaner cleans it on its own (Kafka's
	// min.cleanable.dirty.ratio); Compact ignores it. Default 0.5; in
	// (0, 1].
	MinCleanableDirtyRatio float64
	// MinCompactionLag keeps a segment out of cleaning while it holds a
	// record whose timestamp is within this of now (min.compaction.lag.ms).
	// Default 0.
	MinCompactionLag time.Duration
	// DeleteRetention is how long a tombstone (a record with a null value)
	// stays after its segment was first cleaned, so that consumers reading
	// from the start see the delete (delete.retention.ms). Default 24 h;
	// negative means none: a tombstone goes at the first pass that finds it
	// in the clean part.
	DeleteRetention time.Duration
	// Cleaner runs the compaction passes. Share one between all compacted
	// logs of a process to bound the cleaning's memory and concurrency; nil
	// gives this Log a private one with the default CleanerOptions, started
	// by Open and closed by Close.
	Cleaner *Cleaner
	// FlushPolicy says when appended bytes are fsynced and so what an
	// acknowledgement promises. Default FlushSync.
	FlushPolicy FlushPolicy
	// ReadPath chooses how Read serves bytes: readpath.Mmap (the default)
	// or readpath.Sendfile.
	ReadPath readpath.Kind
	// LogAppendTime stamps every appended batch with the append time (as
	// Kafka's message.timestamp.type=LogAppendTime does). Default false:
	// producers' create times are kept.
	LogAppendTime bool
	// ExternalHighWatermark leaves the high watermark to the caller
	// (replication) through SetHighWatermark; it never passes the durable
	// end under FlushSync nor the log end otherwise. Default false: the log
	// sets it itself.
	ExternalHighWatermark bool
	// BeforeFirstWrite, if set, is called exactly once, before the first
	// change the Log makes to its directory after Open (an append, a roll,
	// a recovery cut, a deletion). The data directory's owner removes its
	// clean-shutdown marker here, durably. If it returns an error nothing
	// is written, the operation fails with that error, and the next write
	// calls it again.
	BeforeFirstWrite func() error
	// Caps bounds the open files and mappings of sealed segments. Share one
	// *ResourceCaps between all logs of a process. Nil gives this Log a
	// private one with DefaultMaxOpenSegments.
	Caps *ResourceCaps
	// Now is the clock for segment age, retention and log-append time.
	// Default time.Now. Tests inject a fake one.
	Now func() time.Time
	// ReadOnly opens the log for reading only, possibly beside a live
	// writer in another process (which holds the data directory's lock):
	// files are opened O_RDONLY and nothing in the directory is created,
	// recovered, cut, renamed or removed; BeforeFirstWrite is never called;
	// no goroutine is started (no retention schedule, no flushes); indexes
	// are read, never mapped writable or rebuilt. Reads see the batches up
	// to the last complete valid one of the last segment (a batch the
	// writer is still writing, or a torn tail it left, is not visible), as
	// of Open or the last Refresh. Append, Sync, TruncateTo,
	// DeleteRecordsBefore, EnforceRetention and SetHighWatermark return
	// ErrReadOnly. The high watermark is the end of the valid batches,
	// whatever the writer's policy, so a reader beside a writer under
	// FlushSync can see records that are not acknowledged yet (and that a
	// power cut may take back). FlushPolicy, the retention options,
	// ExternalHighWatermark and BeforeFirstWrite are ignored. Default
	// false.
	ReadOnly bool

	// noBackground keeps Open from starting the background goroutine, so
	// that a test drives seals, interval flushes and retention itself and
	// no other goroutine touches the files when it simulates a power cut.
	noBackground bool

	// afterSwapStep, when set, is called by a compaction pass at each
	// boundary between the steps of its rename protocol (see pass.swap); an
	// error stops the pass there, so that a test can crash the process
	// exactly between two steps.
	afterSwapStep func(swapStep) error
}

// withDefaults returns a copy of o (nil allowed) with every zero field set to
// its default.
func (o *Options) withDefaults() Options {
	var c Options
	if o != nil {
		c = *o
	}
	if c.SegmentBytes == 0 {
		c.SegmentBytes = DefaultSegmentBytes
	}
	if c.SegmentAge == 0 {
		c.SegmentAge = DefaultSegmentAge
	}
	if c.IndexIntervalBytes == 0 {
		c.IndexIntervalBytes = DefaultIndexIntervalBytes
	}
	if c.MaxIndexBytes == 0 {
		c.MaxIndexBytes = DefaultMaxIndexBytes
	}
	if c.MaxBatchBytes == 0 {
		c.MaxBatchBytes = DefaultMaxBatchBytes
		if int64(c.MaxBatchBytes) > c.SegmentBytes {
			// A small segment size implies small batches; keep the pair valid.
			c.MaxBatchBytes = int(c.SegmentBytes)
		}
	}
	if c.RetentionAge == 0 {
		c.RetentionAge = DefaultRetentionAge
	}
	if c.RetentionCheckInterval == 0 {
		c.RetentionCheckInterval = DefaultRetentionCheckInterval
	}
	if c.MinCleanableDirtyRatio == 0 {
		c.MinCleanableDirtyRatio = DefaultMinCleanableDirtyRatio
	}
	if c.DeleteRetention == 0 {
		c.DeleteRetention = DefaultDeleteRetention
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// validate checks an Options that went through withDefaults and names the
// first bad field.
func (o *Options) validate() error {
	bad := func(field string, format string, args ...any) error {
		return fmt.Errorf("%w: Options.%s %s", ErrInvalidOptions, field, fmt.Sprintf(format, args...))
	}
	switch {
	case o.SegmentBytes < minSegmentBytes || o.SegmentBytes > MaxSegmentBytes:
		return bad("SegmentBytes", "%d outside [%d, %d]", o.SegmentBytes, minSegmentBytes, int64(MaxSegmentBytes))
	case o.IndexIntervalBytes < 0:
		return bad("IndexIntervalBytes", "%d is negative", o.IndexIntervalBytes)
	case o.MaxIndexBytes < 12:
		return bad("MaxIndexBytes", "%d holds no index entry", o.MaxIndexBytes)
	case o.MaxBatchBytes < 61:
		return bad("MaxBatchBytes", "%d is below a batch header (61 bytes)", o.MaxBatchBytes)
	case int64(o.MaxBatchBytes) > o.SegmentBytes:
		return bad("MaxBatchBytes", "%d exceeds SegmentBytes %d", o.MaxBatchBytes, o.SegmentBytes)
	case o.ReadPath != readpath.Mmap && o.ReadPath != readpath.Sendfile:
		return bad("ReadPath", "%d is not a read path", o.ReadPath)
	case !(o.MinCleanableDirtyRatio > 0 && o.MinCleanableDirtyRatio <= 1):
		return bad("MinCleanableDirtyRatio", "%v outside (0, 1]", o.MinCleanableDirtyRatio)
	case o.MinCompactionLag < 0:
		return bad("MinCompactionLag", "%v is negative", o.MinCompactionLag)
	}
	if err := o.FlushPolicy.Validate(); err != nil {
		return bad("FlushPolicy", "%v", err)
	}
	return nil
}

// segmentOptions are the options of the log's segments.
func segmentOptions(o Options) segment.Options {
	return segment.Options{
		IndexIntervalBytes: o.IndexIntervalBytes,
		MaxIndexBytes:      o.MaxIndexBytes,
		// The log checks MaxBatchBytes itself (Append), against the
		// setting in force: the segment's own check only keeps a batch
		// within the segment, so that a larger MaxBatchBytes set by
		// Reconfigure applies to the active segment too.
		MaxBatchBytes:   int(o.SegmentBytes),
		ReadPath:        o.ReadPath,
		MaxSegmentBytes: o.SegmentBytes,
	}
}

package topic

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/foliolog/folio/log"
	"github.com/foliolog/folio/readpath"
	"github.com/foliolog/folio/record"
)

// Limits and defaults of a topic's Config. Where Kafka has a default, it is
// Kafka's.
const (
	// Unlimited, in RetentionBytes or RetentionAge, keeps data regardless of
	// size or age (Kafka's -1).
	Unlimited = -1

	DefaultPartitions = 1
	// MaxPartitions bounds a topic's partition count. It is a sanity limit
	// (each partition is a directory, and a mistyped count should not create
	// millions) that also keeps "<name>-<partition>" within 255 bytes.
	MaxPartitions = 100_000

	DefaultRetentionAge = 7 * 24 * time.Hour
	DefaultSegmentBytes = 1 << 30
	// MinSegmentBytes is the smallest segment that holds a batch header.
	// Small segments are for tests; a batch larger than the segment size
	// still gets a segment of its own.
	MinSegmentBytes = record.HeaderSize
	// MaxSegmentBytes keeps file positions within the 4-byte positions of
	// the offset index.
	MaxSegmentBytes   = math.MaxInt32
	DefaultSegmentAge = 7 * 24 * time.Hour

	// DefaultIndexIntervalBytes is Kafka's index.interval.bytes: the bytes
	// of batches between two entries of a segment's offset and time
	// indexes.
	DefaultIndexIntervalBytes = 4096
	// IndexEveryBatch, in IndexIntervalBytes, indexes every batch after a
	// segment's first: Kafka's index.interval.bytes=0, which Set maps to it
	// (a zero field means the default, as everywhere in Config).
	IndexEveryBatch int32 = -1

	// DefaultMaxMessageBytes is Kafka's message.max.bytes: 1 MiB of batch
	// plus the 12-byte log overhead.
	DefaultMaxMessageBytes = 1<<20 + record.LogOverhead
	// MinMaxMessageBytes is the size of an empty batch.
	MinMaxMessageBytes = record.HeaderSize

	// DefaultMinCleanableDirtyRatio is Kafka's min.cleanable.dirty.ratio.
	DefaultMinCleanableDirtyRatio = 0.5
	// DefaultDeleteRetention is Kafka's delete.retention.ms.
	DefaultDeleteRetention = 24 * time.Hour
	// NoDeleteRetention, in DeleteRetention, keeps no tombstone past the
	// cleaning pass that first finds it in the clean part of the log:
	// Kafka's delete.retention.ms=0, which Set maps to it (a zero field
	// means the default, as everywhere in Config).
	NoDeleteRetention time.Duration = -1
)

// Config is one topic's configuration. The zero value of every field means
// its default, so Config{} is a valid configuration and callers set only
// what they change; WithDefaults spells the defaults out. Settings and Set
// convert to and from Kafka-style string settings for the CLI.
//
// The flush policy and the read path are the types of the packages that
// carry them out (log.FlushPolicy, readpath.Kind), so that a program names
// each concept with one type; the catalog stores their text forms.
type Config struct {
	// Partitions is the partition count, 1 to MaxPartitions. Default 1.
	// After creation it only grows, through Catalog.AddPartitions.
	Partitions int32
	// RetentionBytes caps each partition's size; the oldest segments are
	// deleted first. Default (0) and Unlimited mean no cap (Kafka's
	// retention.bytes, default -1).
	RetentionBytes int64
	// RetentionAge deletes segments whose newest record is older than this.
	// Default 7 days; Unlimited keeps them forever (Kafka's retention.ms).
	RetentionAge time.Duration
	// SegmentBytes is the size at which a partition rolls to a new segment,
	// MinSegmentBytes to MaxSegmentBytes. Default 1 GiB.
	SegmentBytes int64
	// SegmentAge rolls a segment that has been active this long. Default 7
	// days (Kafka's segment.ms).
	SegmentAge time.Duration
	// IndexIntervalBytes is how many bytes of batches a segment takes
	// between two entries of its offset and time indexes (Kafka's
	// index.interval.bytes): smaller makes reads by offset or time scan
	// less after their index lookup and the indexes larger. Default 4096;
	// IndexEveryBatch (Kafka's 0) gives every batch after a segment's first
	// an entry. A segment keeps the interval it was created with.
	IndexIntervalBytes int32
	// Flush is what an acknowledgement waits for. Default log.FlushSync.
	Flush log.FlushPolicy
	// ReadPath chooses how reads reach the segment files. Default
	// readpath.Mmap.
	ReadPath readpath.Kind
	// Cleanup chooses between deleting old segments and compacting by key.
	// Default CleanupDelete.
	Cleanup CleanupPolicy
	// MinCleanableDirtyRatio is the share of a compacted partition's
	// cleanable records not yet cleaned at which the cleaner cleans it
	// (Kafka's min.cleanable.dirty.ratio): lower cleans more often and
	// rewrites more. In (0, 1]; default 0.5. Only compacted topics use it.
	MinCleanableDirtyRatio float64
	// MinCompactionLag keeps a record out of cleaning until it is at least
	// this old, by its timestamp, so that consumers can read every update
	// for that long (Kafka's min.compaction.lag.ms). Default 0.
	MinCompactionLag time.Duration
	// DeleteRetention is how long a tombstone (a record with a null value)
	// stays after its segment was first cleaned, so that a consumer reading
	// from the start within that time sees the delete (Kafka's
	// delete.retention.ms). Default 24 hours; NoDeleteRetention keeps none.
	DeleteRetention time.Duration
	// TimestampType is whose clock stamps records: the producer's
	// (CreateTime, the default) or the log's at append (LogAppendTime).
	TimestampType TimestampType
	// MaxMessageBytes is the largest batch the topic accepts, in bytes,
	// MinMaxMessageBytes to math.MaxInt32. Default DefaultMaxMessageBytes.
	MaxMessageBytes int32
	// Compression is the codec batches are stored with. Default
	// CompressionProducer: as the producer sent them.
	Compression Compression
	// UncleanLeaderElection is Kafka's unclean.leader.election.enable for
	// a replicated topic: when no in-sync replica of a partition is left,
	// a replica outside the ISR may lead, losing the records only the
	// others held. Default false: the partition waits for an in-sync
	// replica. A topic of a single Broker has no use for it.
	UncleanLeaderElection bool
}

// WithDefaults returns c with every zero field set to its default.
func (c Config) WithDefaults() Config {
	if c.Partitions == 0 {
		c.Partitions = DefaultPartitions
	}
	if c.RetentionBytes == 0 {
		c.RetentionBytes = Unlimited
	}
	if c.RetentionAge == 0 {
		c.RetentionAge = DefaultRetentionAge
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
	if c.MaxMessageBytes == 0 {
		c.MaxMessageBytes = DefaultMaxMessageBytes
	}
	if c.MinCleanableDirtyRatio == 0 {
		c.MinCleanableDirtyRatio = DefaultMinCleanableDirtyRatio
	}
	if c.DeleteRetention == 0 {
		c.DeleteRetention = DefaultDeleteRetention
	}
	return c
}

// Validate reports the first field that is out of range, by name. Zero
// fields are valid: they mean the default.
func (c Config) Validate() error {
	d := c.WithDefaults()
	switch {
	case d.Partitions < 1 || d.Partitions > MaxPartitions:
		return fmt.Errorf("%w: Partitions %d, want 1 to %d", ErrInvalidConfig, c.Partitions, MaxPartitions)
	case d.RetentionBytes < 1 && d.RetentionBytes != Unlimited:
		return fmt.Errorf("%w: RetentionBytes %d, want a positive size or Unlimited (-1)", ErrInvalidConfig, c.RetentionBytes)
	case d.RetentionAge < 1 && d.RetentionAge != Unlimited:
		return fmt.Errorf("%w: RetentionAge %v, want a positive duration or Unlimited (-1)", ErrInvalidConfig, c.RetentionAge)
	case d.SegmentBytes < MinSegmentBytes || d.SegmentBytes > MaxSegmentBytes:
		return fmt.Errorf("%w: SegmentBytes %d, want %d to %d", ErrInvalidConfig, c.SegmentBytes, MinSegmentBytes, MaxSegmentBytes)
	case d.SegmentAge < 1:
		return fmt.Errorf("%w: SegmentAge %v, want a positive duration", ErrInvalidConfig, c.SegmentAge)
	case d.IndexIntervalBytes < 0 && d.IndexIntervalBytes != IndexEveryBatch:
		return fmt.Errorf("%w: IndexIntervalBytes %d, want a positive size or IndexEveryBatch (-1)", ErrInvalidConfig, c.IndexIntervalBytes)
	case d.MaxMessageBytes < MinMaxMessageBytes:
		return fmt.Errorf("%w: MaxMessageBytes %d, want at least %d", ErrInvalidConfig, c.MaxMessageBytes, MinMaxMessageBytes)
	case !(d.MinCleanableDirtyRatio > 0 && d.MinCleanableDirtyRatio <= 1): // NaN too
		return fmt.Errorf("%w: MinCleanableDirtyRatio %v, want more than 0 and at most 1", ErrInvalidConfig, c.MinCleanableDirtyRatio)
	case d.MinCompactionLag < 0:
		return fmt.Errorf("%w: MinCompactionLag %v, want a non-negative duration", ErrInvalidConfig, c.MinCompactionLag)
	case d.DeleteRetention < 0 && d.DeleteRetention != NoDeleteRetention:
		return fmt.Errorf("%w: DeleteRetention %v, want a non-negative duration or NoDeleteRetention (-1)", ErrInvalidConfig, c.DeleteRetention)
	}
	if err := c.Flush.Validate(); err != nil {
		return fmt.Errorf("%w: Flush: %w", ErrInvalidConfig, err)
	}
	if c.ReadPath != readpath.Mmap && c.ReadPath != readpath.Sendfile {
		return fmt.Errorf("%w: ReadPath %d is not a known read path", ErrInvalidConfig, c.ReadPath)
	}
	if int(c.Cleanup) >= len(cleanupNames) {
		return fmt.Errorf("%w: Cleanup %d is not a known cleanup policy", ErrInvalidConfig, c.Cleanup)
	}
	if int(c.TimestampType) >= len(timestampTypeNames) {
		return fmt.Errorf("%w: TimestampType %d is not a known timestamp type", ErrInvalidConfig, c.TimestampType)
	}
	if int(c.Compression) >= len(compressionNames) {
		return fmt.Errorf("%w: Compression %d is not a known compression", ErrInvalidConfig, c.Compression)
	}
	return nil
}

// Setting keys, Kafka's topic config names where Kafka has one.
const (
	KeyPartitions      = "partitions"
	KeyRetentionBytes  = "retention.bytes"
	KeyRetentionAge    = "retention.ms"
	KeySegmentBytes    = "segment.bytes"
	KeySegmentAge      = "segment.ms"
	KeyIndexInterval   = "index.interval.bytes"
	KeyFlush           = "flush"
	KeyReadPath        = "read.path"
	KeyCleanup         = "cleanup.policy"
	KeyTimestampType   = "message.timestamp.type"
	KeyMaxMessageBytes = "max.message.bytes"
	KeyCompression     = "compression.type"
	KeyUnclean         = "unclean.leader.election.enable"

	KeyMinCleanableDirtyRatio = "min.cleanable.dirty.ratio"
	KeyMinCompactionLag       = "min.compaction.lag.ms"
	KeyDeleteRetention        = "delete.retention.ms"
)

// Keys lists every setting key in the order Settings reports them.
var Keys = []string{
	KeyPartitions, KeyRetentionBytes, KeyRetentionAge, KeySegmentBytes, KeySegmentAge, KeyIndexInterval,
	KeyFlush, KeyReadPath, KeyCleanup, KeyMinCleanableDirtyRatio, KeyMinCompactionLag, KeyDeleteRetention,
	KeyTimestampType, KeyMaxMessageBytes, KeyCompression, KeyUnclean,
}

// keyAliases are the short names a command line uses (-retention 7d).
var keyAliases = map[string]string{
	"retention":   KeyRetentionAge,
	"segment":     KeySegmentBytes,
	"cleanup":     KeyCleanup,
	"timestamp":   KeyTimestampType,
	"compression": KeyCompression,
}

// Setting is one configuration value as a string.
type Setting struct {
	Key, Value string
}

// Settings returns every setting of c with defaults applied, in the order of
// Keys. Applying them with Set to a zero Config gives back c.WithDefaults().
func (c Config) Settings() []Setting {
	d := c.WithDefaults()
	return []Setting{
		{KeyPartitions, strconv.FormatInt(int64(d.Partitions), 10)},
		{KeyRetentionBytes, FormatBytes(d.RetentionBytes)},
		{KeyRetentionAge, FormatDuration(d.RetentionAge)},
		{KeySegmentBytes, FormatBytes(d.SegmentBytes)},
		{KeySegmentAge, FormatDuration(d.SegmentAge)},
		{KeyIndexInterval, formatIndexInterval(d.IndexIntervalBytes)},
		{KeyFlush, d.Flush.String()},
		{KeyReadPath, d.ReadPath.String()},
		{KeyCleanup, d.Cleanup.String()},
		{KeyMinCleanableDirtyRatio, strconv.FormatFloat(d.MinCleanableDirtyRatio, 'g', -1, 64)},
		{KeyMinCompactionLag, FormatDuration(d.MinCompactionLag)},
		{KeyDeleteRetention, formatDeleteRetention(d.DeleteRetention)},
		{KeyTimestampType, d.TimestampType.String()},
		{KeyMaxMessageBytes, FormatBytes(int64(d.MaxMessageBytes))},
		{KeyCompression, d.Compression.String()},
		{KeyUnclean, strconv.FormatBool(d.UncleanLeaderElection)},
	}
}

// Set parses value into the field that key names: a key of Keys or a short
// alias (retention, segment, cleanup, timestamp, compression). Sizes take
// ParseBytes syntax, durations ParseDuration syntax; retention settings also
// take "-1" or "unlimited"; delete.retention.ms and index.interval.bytes take
// 0 as Kafka does (NoDeleteRetention, IndexEveryBatch);
// min.cleanable.dirty.ratio is a decimal number. Set
// checks the value's syntax and range, and leaves c unchanged on error.
func (c *Config) Set(key, value string) error {
	if k, ok := keyAliases[key]; ok {
		key = k
	}
	n := *c
	var err error
	switch key {
	case KeyPartitions:
		var p int64
		p, err = strconv.ParseInt(value, 10, 32)
		n.Partitions = int32(p)
	case KeyRetentionBytes:
		n.RetentionBytes, err = parseUnlimited(value, ParseBytes)
	case KeyRetentionAge:
		n.RetentionAge, err = parseUnlimited(value, ParseDuration)
	case KeySegmentBytes:
		n.SegmentBytes, err = ParseBytes(value)
	case KeySegmentAge:
		n.SegmentAge, err = ParseDuration(value)
	case KeyIndexInterval:
		n.IndexIntervalBytes, err = parseIndexInterval(value)
	case KeyFlush:
		n.Flush, err = log.ParseFlushPolicy(value)
	case KeyReadPath:
		n.ReadPath, err = readpath.ParseKind(value)
	case KeyCleanup:
		n.Cleanup, err = ParseCleanupPolicy(value)
	case KeyMinCleanableDirtyRatio:
		n.MinCleanableDirtyRatio, err = strconv.ParseFloat(value, 64)
	case KeyMinCompactionLag:
		n.MinCompactionLag, err = ParseDuration(value)
	case KeyDeleteRetention:
		n.DeleteRetention, err = ParseDuration(value)
		if err == nil && n.DeleteRetention == 0 {
			n.DeleteRetention = NoDeleteRetention
		}
	case KeyTimestampType:
		n.TimestampType, err = ParseTimestampType(value)
	case KeyMaxMessageBytes:
		var b int64
		b, err = ParseBytes(value)
		if err == nil && b > math.MaxInt32 {
			err = fmt.Errorf("%d bytes is above %d", b, math.MaxInt32)
		}
		n.MaxMessageBytes = int32(b)
	case KeyCompression:
		n.Compression, err = ParseCompression(value)
	case KeyUnclean:
		n.UncleanLeaderElection, err = strconv.ParseBool(value)
	default:
		return fmt.Errorf("%w: unknown setting %q", ErrInvalidConfig, key)
	}
	if err != nil {
		return fmt.Errorf("%w: %s=%q: %w", ErrInvalidConfig, key, value, err)
	}
	// Zero means "default" in a Config, so a setting that parses to zero
	// would silently become the default instead of what was asked for.
	if zeroField(n, key) {
		return fmt.Errorf("%w: %s=%q: zero is not a valid value", ErrInvalidConfig, key, value)
	}
	if err := n.Validate(); err != nil {
		return fmt.Errorf("%s=%q: %w", key, value, err)
	}
	*c = n
	return nil
}

// zeroField reports whether the numeric field behind key holds zero.
func zeroField(c Config, key string) bool {
	switch key {
	case KeyPartitions:
		return c.Partitions == 0
	case KeyRetentionBytes:
		return c.RetentionBytes == 0
	case KeyRetentionAge:
		return c.RetentionAge == 0
	case KeySegmentBytes:
		return c.SegmentBytes == 0
	case KeySegmentAge:
		return c.SegmentAge == 0
	case KeyMaxMessageBytes:
		return c.MaxMessageBytes == 0
	case KeyMinCleanableDirtyRatio:
		return c.MinCleanableDirtyRatio == 0
	}
	return false
}

// parseIndexInterval reads a ParseBytes size of at most math.MaxInt32
// bytes (Kafka's int), Kafka's 0 as IndexEveryBatch.
func parseIndexInterval(value string) (int32, error) {
	b, err := ParseBytes(value)
	switch {
	case err != nil:
		return 0, err
	case b > math.MaxInt32:
		return 0, fmt.Errorf("%d bytes is above %d", b, math.MaxInt32)
	case b == 0:
		return IndexEveryBatch, nil
	}
	return int32(b), nil
}

// formatIndexInterval writes IndexEveryBatch as Kafka's 0, which Set reads
// back as IndexEveryBatch.
func formatIndexInterval(n int32) string {
	if n == IndexEveryBatch {
		return "0"
	}
	return FormatBytes(int64(n))
}

// formatDeleteRetention writes NoDeleteRetention as Kafka's 0, which Set
// reads back as NoDeleteRetention.
func formatDeleteRetention(d time.Duration) string {
	if d == NoDeleteRetention {
		return FormatDuration(0)
	}
	return FormatDuration(d)
}

func parseUnlimited[T ~int64](s string, parse func(string) (T, error)) (T, error) {
	if s == "-1" || s == "unlimited" {
		return Unlimited, nil
	}
	return parse(s)
}

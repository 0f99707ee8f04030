package partition

import (
	"fmt"

	"github.com/foliolog/folio/log"
	"github.com/foliolog/folio/topic"
)

// minLogSegmentBytes is the log package's smallest segment (it keeps room
// for a batch header, so a roll always makes progress); the topic package
// allows smaller ones.
const minLogSegmentBytes = 128

// ValidateConfig reports whether a partition can be opened with cfg: the
// topic package's own checks, and what the log adds (a segment large
// enough for a batch header). A data directory's owner calls it before it
// commits a topic to its catalog. The error wraps ErrInvalidConfig.
func ValidateConfig(cfg topic.Config) error {
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	_, err := logOptions(cfg, &Options{}, false)
	return err
}

// logOptions maps a topic's configuration, and the settings the data
// directory's owner shares between its partitions, onto the options of a
// partition's log.
func logOptions(cfg topic.Config, po *Options, externalHW bool) (*log.Options, error) {
	cfg = cfg.WithDefaults()
	o := &log.Options{
		SegmentBytes:           cfg.SegmentBytes,
		SegmentAge:             cfg.SegmentAge,
		MaxBatchBytes:          maxBatchBytes(cfg),
		RetentionBytes:         cfg.RetentionBytes,
		RetentionAge:           cfg.RetentionAge,
		RetentionCheckInterval: po.RetentionCheckInterval,
		LogAppendTime:          cfg.TimestampType == topic.LogAppendTime,
		ExternalHighWatermark:  externalHW,
		BeforeFirstWrite:       po.BeforeFirstWrite,
		Caps:                   po.Caps,
		Now:                    po.Now,
		Compact:                cfg.Cleanup.Compacts(),
		MinCleanableDirtyRatio: cfg.MinCleanableDirtyRatio,
		MinCompactionLag:       cfg.MinCompactionLag,
		DeleteRetention:        cfg.DeleteRetention,
		Cleaner:                po.Cleaner,
		// Beside a live writer: files O_RDONLY, no recovery, no goroutine,
		// the last segment up to its last complete valid batch.
		ReadOnly: po.ReadOnly,
	}
	if cfg.DeleteRetention == topic.NoDeleteRetention {
		o.DeleteRetention = -1 // the log's "none"
	}
	o.IndexIntervalBytes = int(cfg.IndexIntervalBytes)
	if cfg.IndexIntervalBytes == topic.IndexEveryBatch {
		// Kafka's 0 is the log's 1 (its 0 is the default): an entry goes
		// to a batch once more than the interval was written since the
		// last, and every batch is at least a header (61 bytes), so "more
		// than 1 byte" holds at every batch after a segment's first, as
		// "more than 0 bytes" does.
		o.IndexIntervalBytes = 1
	}
	if o.SegmentBytes < minLogSegmentBytes {
		return nil, fmt.Errorf("%w: SegmentBytes %d is below the %d bytes a partition's log needs", ErrInvalidConfig, cfg.SegmentBytes, minLogSegmentBytes)
	}
	if cfg.RetentionBytes == topic.Unlimited {
		o.RetentionBytes = 0 // the log's "unlimited"
	}
	if cfg.RetentionAge == topic.Unlimited {
		o.RetentionAge = -1
	}
	if !cfg.Cleanup.Deletes() {
		// A compact-only topic never deletes by retention; compact,delete
		// keeps the topic's retention beside compaction.
		o.RetentionBytes, o.RetentionAge = 0, -1
	}
	// One type each for the flush policy and the read path, from the
	// topic's configuration to the log: the log validates them.
	o.FlushPolicy, o.ReadPath = cfg.Flush, cfg.ReadPath
	return o, nil
}

// maxBatchBytes is the largest batch a partition of cfg stores: the topic's
// max.message.bytes, and never more than a segment.
func maxBatchBytes(cfg topic.Config) int {
	return int(min(int64(cfg.MaxMessageBytes), cfg.SegmentBytes))
}

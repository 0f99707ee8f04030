package partition

import (
	"github.com/foliolog/folio/errs"
	"github.com/foliolog/folio/log"
	"github.com/foliolog/folio/topic"
	"github.com/twmb/franz-go/pkg/kerr"
)

// Sentinel errors. Errors returned by this package wrap them (test with
// errors.Is) together with the partition they concern. Where a lower
// package already defines the class, the sentinel is that package's value,
// so one errors.Is works whichever layer reported it.
var (
	// ErrInvalidBatch is returned by AppendBatch for bytes that are not one
	// valid RecordBatch v2, for a control batch (only Folio writes those),
	// and for a batch the log refuses (a keyless record for a compacted
	// topic, which also wraps log.ErrNoKey). Nothing is written.
	ErrInvalidBatch = errs.New("partition: invalid batch", kerr.CorruptMessage)

	// ErrMessageTooLarge is returned for a batch above the topic's
	// max.message.bytes (after recompression to the topic's codec).
	// Nothing is written.
	ErrMessageTooLarge = errs.New("partition: message too large", kerr.MessageTooLarge)

	// ErrUnknownOutcome is returned when an append may or may not have
	// been written: a write or fsync failed after the log assigned
	// offsets (the partition is then failed, see ErrFailed), or the
	// acknowledgement was held by Replication and its wait ended first
	// (the appender's ctx, or too few replicas after the append). An
	// idempotent producer retries with the same sequence numbers, which
	// makes the retry safe.
	ErrUnknownOutcome = errs.New("partition: outcome unknown: the records may or may not have been written", kerr.RequestTimedOut)

	// ErrDiskFull is returned by an append that met a full disk (ENOSPC).
	// The partition then refuses appends until it is reopened, as after
	// any failed write (ErrFailed); reads and retention go on.
	ErrDiskFull = errs.New("partition: no space left on device", kerr.KafkaStorageError)

	// ErrFailed is log.ErrFailed: the partition refuses appends after a
	// failed write or fsync (fail-stop). Reopening recovers it.
	ErrFailed = log.ErrFailed

	// ErrClosed is log.ErrClosed: the partition was closed.
	ErrClosed = log.ErrClosed

	// ErrDeleted is topic.ErrNotFound: the partition's topic was deleted
	// (CloseDeleted) while the call was on its way.
	ErrDeleted = topic.ErrNotFound

	// ErrInvalidConfig is topic.ErrInvalidConfig: a topic configuration the
	// partition cannot open with.
	ErrInvalidConfig = topic.ErrInvalidConfig

	// ErrCorrupt is log.ErrCorrupt: damaged bytes in the partition's
	// segments, met while rebuilding producer state.
	ErrCorrupt = log.ErrCorrupt
)

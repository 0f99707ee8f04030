package folio

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/foliolog/folio/errs"
	"github.com/foliolog/folio/group"
	"github.com/foliolog/folio/log"
	"github.com/foliolog/folio/partition"
	"github.com/foliolog/folio/topic"
	"github.com/twmb/franz-go/pkg/kerr"
)

// Sentinel errors. Errors returned by this package wrap them (test with
// errors.Is) together with the data directory, file, topic or partition they
// concern. Where a lower package already defines the class, the sentinel is
// that package's value, so one errors.Is works whichever layer reported it.
// A sentinel with a Kafka equivalent carries its code (the comment names
// it): errs.Kafka(err) gives it, and errors.Is(err, kerr.Xxx) holds.
var (
	// ErrClosed is returned by every call on a Broker, Producer or Consumer
	// after its Close, and by a second Close. It is errs.ErrClosed, which
	// every package's closed error matches (log.ErrClosed,
	// group.ErrClosed, ...).
	ErrClosed = errs.ErrClosed

	// ErrDirLocked means another Broker, in this process or another one,
	// holds the data directory's lock. The error names the holder's pid and
	// host as the holder wrote them into the lock file.
	ErrDirLocked = errors.New("folio: data directory is locked by another broker")

	// ErrUnknownFormat means the data directory was written in an on-disk
	// format version this code does not know (a newer Folio), or is not a
	// Folio data directory at all. Nothing in it is touched.
	ErrUnknownFormat = errors.New("folio: unknown data directory format")

	// ErrCorrupt is the class of every error about damaged bytes on disk,
	// whichever layer found them: this package's metadata files (format
	// version, checkpoint, clean-shutdown marker), the topic catalog and
	// producer snapshots, segments, indexes, batches, group records. It is
	// errs.ErrCorrupt; errors.As finds an *errs.Corruption with the file
	// and byte position. See IsCorrupt. Kafka: CORRUPT_MESSAGE.
	ErrCorrupt = errs.ErrCorrupt

	// ErrReadOnly is returned by every write (create or delete a topic,
	// produce) on a Broker opened read-only.
	ErrReadOnly = errors.New("folio: broker is read-only")

	// ErrTopicExists is returned by CreateTopic for a name already taken.
	// Kafka: TOPIC_ALREADY_EXISTS.
	ErrTopicExists = topic.ErrExists

	// ErrUnknownTopic is returned for a topic the catalog does not hold.
	// Kafka: UNKNOWN_TOPIC_OR_PARTITION.
	ErrUnknownTopic = topic.ErrNotFound

	// ErrUnknownPartition is returned for a partition outside [0, n) of its
	// topic. Kafka: UNKNOWN_TOPIC_OR_PARTITION.
	ErrUnknownPartition = errs.New("folio: unknown partition", kerr.UnknownTopicOrPartition)

	// ErrInvalidName is topic.ErrInvalidName: a topic name outside Kafka's
	// rules (1-249 characters of [a-zA-Z0-9._-], not "." or ".."). Kafka:
	// INVALID_TOPIC_EXCEPTION.
	ErrInvalidName = topic.ErrInvalidName

	// ErrReservedName is topic.ErrReservedName: names starting with "__"
	// belong to Folio's own topics. Kafka: INVALID_TOPIC_EXCEPTION.
	ErrReservedName = topic.ErrReservedName

	// ErrInvalidConfig wraps a topic configuration or Options field that is
	// out of range; the message names the field. Kafka: INVALID_CONFIG.
	ErrInvalidConfig = errs.New("folio: invalid configuration", kerr.InvalidConfig)

	// ErrMessageTooLarge is returned for a record that does not fit in a
	// batch of the topic's MaxMessageBytes on its own, and for an appended
	// batch above it. Nothing is written. It is
	// partition.ErrMessageTooLarge.
	ErrMessageTooLarge = partition.ErrMessageTooLarge

	// ErrUnknownOutcome is returned when the ctx of a call that waits for an
	// acknowledgement ends first: the record was handed to the log and may
	// or may not be written. It also wraps the ctx's error. A producer that
	// must know retries with the same idempotent producer, whose sequence
	// numbers make the retry safe, or reads the partition back. It is
	// partition.ErrUnknownOutcome.
	ErrUnknownOutcome = partition.ErrUnknownOutcome

	// ErrDiskFull is returned by produce when the partition's disk is full
	// (ENOSPC). The partition then refuses appends until the broker is
	// reopened, while reads and retention continue. It is
	// partition.ErrDiskFull.
	ErrDiskFull = partition.ErrDiskFull

	// ErrPartitionFailed is returned by produce to a partition whose log
	// stopped accepting writes after a failed write or fsync (fail-stop).
	// Reopening the Broker recovers it. It is log.ErrFailed. Kafka:
	// KAFKA_STORAGE_ERROR.
	ErrPartitionFailed = log.ErrFailed

	// ErrOffsetOutOfRange is returned when a consumer's position lies
	// outside the partition's offsets and its ResetPolicy is ResetNone.
	// The error is an *OffsetOutOfRangeError with the valid range. Kafka:
	// OFFSET_OUT_OF_RANGE.
	ErrOffsetOutOfRange = errs.New("folio: offset out of range", kerr.OffsetOutOfRange)

	// ErrTruncated is returned by a Consumer's Poll when the partition's
	// log was truncated below the consumer's position: an unclean leader
	// election elected a replica that lacked records the consumer had
	// read (KIP-320's log truncation). The error is a *TruncatedError
	// with the offsets; the consumer's position is left as it was, for
	// the caller to Seek (to TruncatedError.End, say) knowing what was
	// lost. Its Kafka code is OFFSET_OUT_OF_RANGE, of which Kafka's
	// LogTruncationException is a kind.
	ErrTruncated = errs.New("folio: log truncated below the consumer's position", kerr.OffsetOutOfRange)

	// ErrOutOfOrderSequence is topic.ErrOutOfOrderSequence: an idempotent
	// batch whose first sequence does not follow the producer's last one.
	// Kafka: OUT_OF_ORDER_SEQUENCE_NUMBER.
	ErrOutOfOrderSequence = topic.ErrOutOfOrderSequence

	// ErrProducerFenced is topic.ErrProducerFenced: a batch from an older
	// epoch of a producer id that a newer epoch has taken over. Kafka:
	// INVALID_PRODUCER_EPOCH.
	ErrProducerFenced = topic.ErrProducerFenced

	// ErrDuplicateSequence is topic.ErrDuplicateSequence: a retry of a batch
	// older than the ones whose offsets the partition remembers. Kafka:
	// DUPLICATE_SEQUENCE_NUMBER.
	ErrDuplicateSequence = topic.ErrDuplicateSequence

	// ErrNotAssigned is returned by Consumer calls naming a partition the
	// consumer is not assigned.
	ErrNotAssigned = errors.New("folio: partition not assigned to this consumer")

	// ErrInvalidBatch is returned by AppendBatch for bytes that are not one
	// valid RecordBatch v2. It is partition.ErrInvalidBatch.
	ErrInvalidBatch = partition.ErrInvalidBatch

	// ErrNoKey is returned by Produce for a record without a key (nil Key)
	// sent to a compacted topic: compaction keeps the latest record per
	// key, so Kafka's brokers refuse keyless records there. The producer
	// refuses the record up front, so the other records of its batch are
	// not failed with it. Kafka: INVALID_RECORD.
	ErrNoKey = errs.New("folio: record without a key for a compacted topic", kerr.InvalidRecord)

	// ErrCommitFailed is returned by a GroupConsumer's Commit and
	// CommitOffsets when the group rebalanced and the member's partitions
	// may belong to another member now (Kafka's CommitFailedException): the
	// records since the last commit may be delivered again to the next
	// owner. It is group.ErrCommitFailed.
	ErrCommitFailed = group.ErrCommitFailed

	// ErrNoOffset is returned by a GroupConsumer's Poll for partitions the
	// group has no committed offset for when GroupOptions.Reset is
	// ResetNone; Seek them to go on. It is group.ErrNoOffset.
	ErrNoOffset = group.ErrNoOffset

	// ErrGroupNotFound is returned by GroupLag for a group that has no
	// commits and no members. It is group.ErrGroupIDNotFound. Kafka:
	// GROUP_ID_NOT_FOUND.
	ErrGroupNotFound = group.ErrGroupIDNotFound
)

// OffsetOutOfRangeError reports a consumer position outside [Start, End]:
// below the log start offset (retention or DeleteRecords removed it) or
// beyond the log end offset. errors.Is(err, ErrOffsetOutOfRange) matches it.
type OffsetOutOfRangeError struct {
	Topic     string
	Partition int32
	Offset    int64
	Start     int64
	End       int64
}

func (e *OffsetOutOfRangeError) Error() string {
	return fmt.Sprintf("folio: %s-%d: offset %d out of range [%d, %d]", e.Topic, e.Partition, e.Offset, e.Start, e.End)
}

// Unwrap makes errors.Is(err, ErrOffsetOutOfRange) true, and gives the
// error ErrOffsetOutOfRange's Kafka code.
func (e *OffsetOutOfRangeError) Unwrap() error { return ErrOffsetOutOfRange }

// TruncatedError reports that a partition's log now ends, in the lineage
// of the leader epoch the consumer last read (Epoch), at End, below the
// consumer's position Offset: the records [End, Offset) the consumer had
// read are gone. errors.Is(err, ErrTruncated) matches it.
type TruncatedError struct {
	Topic     string
	Partition int32
	Offset    int64
	Epoch     int32
	End       int64
}

func (e *TruncatedError) Error() string {
	return fmt.Sprintf("folio: %s-%d: the log was truncated to %d below the consumer's position %d (leader epoch %d)",
		e.Topic, e.Partition, e.End, e.Offset, e.Epoch)
}

// Unwrap makes errors.Is(err, ErrTruncated) true.
func (e *TruncatedError) Unwrap() error { return ErrTruncated }

// IsCorrupt reports whether err is about damaged bytes on disk, whichever
// layer found them: this package's metadata, a topic catalog or producer
// snapshot, a partition's log, the records of __consumer_offsets. It is
// errors.Is(err, ErrCorrupt).
func IsCorrupt(err error) bool { return errors.Is(err, ErrCorrupt) }

// limitHint adds to an error that the limit on open files caused (EMFILE)
// which limit to raise, or which option to lower; other errors it returns
// as they are. The error stays one line and matches syscall.EMFILE.
func (b *Broker) limitHint(err error) error {
	if err == nil || !errors.Is(err, syscall.EMFILE) {
		return err
	}
	now := ""
	if lim, ok := openFilesLimit(); ok {
		now = fmt.Sprintf(" (now %d)", lim)
	}
	return fmt.Errorf("%w: raise ulimit -n%s or lower Options.MaxOpenSegments (now %d, up to %d descriptors each)",
		err, now, b.opts.MaxOpenSegments, log.DescriptorsPerSegment)
}

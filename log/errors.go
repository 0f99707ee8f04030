package log

import (
	"errors"
	"fmt"

	"github.com/foliolog/folio/errs"
	"github.com/twmb/franz-go/pkg/kerr"
)

// Sentinels that have a Kafka equivalent are declared with its code (see
// errs.Kafka), the one a Kafka broker answers the same failure with.
var (
	// ErrClosed is returned by every call on a Log after Close. It matches
	// errs.ErrClosed.
	ErrClosed = errs.New("log: closed", errs.ErrClosed)
	// ErrFailed marks a log that stopped accepting writes after a write or
	// fsync failed (fail-stop). The error wraps the cause. Reads of the
	// records the log had made visible go on; Close and Open again recover.
	// Kafka: KAFKA_STORAGE_ERROR.
	ErrFailed = errs.New("log: failed; reopen to recover", kerr.KafkaStorageError)
	// ErrCorrupt is the class of errors about bytes on disk that are not a
	// valid log, whichever layer below found them (segment, index, record):
	// every such error the Log returns matches it, and errs.ErrCorrupt. The
	// error carries the file and byte position as an *errs.Corruption.
	ErrCorrupt = errs.New("log: corrupt", errs.ErrCorrupt)
	// ErrOffsetOutOfRange is matched (errors.Is) by *OffsetOutOfRangeError.
	// Kafka: OFFSET_OUT_OF_RANGE.
	ErrOffsetOutOfRange = errs.New("log: offset out of range", kerr.OffsetOutOfRange)
	// ErrNoData means the offset is inside the log's range but nothing at or
	// beyond it is visible yet (it is at or past the high watermark). A
	// consumer waits for it with Wait.
	ErrNoData = errors.New("log: no visible data at offset yet")
	// ErrInvalidBatch wraps the reason an appended batch was refused before
	// anything was written (bad header or checksum, too large). Kafka:
	// CORRUPT_MESSAGE.
	ErrInvalidBatch = errs.New("log: invalid batch", kerr.CorruptMessage)
	// ErrBatchTooLarge is matched by an append of a batch above
	// Options.MaxBatchBytes; it also matches ErrInvalidBatch. Kafka:
	// MESSAGE_TOO_LARGE.
	ErrBatchTooLarge = errs.New("log: batch too large", kerr.MessageTooLarge, ErrInvalidBatch)
	// ErrTruncated is returned to an appender whose records were removed by
	// TruncateTo before they became durable: their fate is settled (gone).
	// Kafka: NOT_LEADER_OR_FOLLOWER, what a leader that lost its place
	// answers the produce requests it was holding, so that clients retry
	// with the new leader.
	ErrTruncated = errs.New("log: records truncated before acknowledgement", kerr.NotLeaderForPartition)
	// ErrInvalidOptions wraps every Options.validate failure; the message
	// names the field.
	ErrInvalidOptions = errors.New("log: invalid options")
	// ErrBadHighWatermark is returned by SetHighWatermark for a value
	// outside [log start, log end] or on a log that does not take its
	// high watermark from outside.
	ErrBadHighWatermark = errors.New("log: bad high watermark")
	// ErrReadOnly is returned by the calls that would change a log opened
	// with Options.ReadOnly: Append, Sync, TruncateTo, DeleteRecordsBefore,
	// EnforceRetention and SetHighWatermark.
	ErrReadOnly = errors.New("log: opened read-only")
)

// OffsetOutOfRangeError reports an offset outside [Start, End], the range
// the operation accepts: for Read the offsets the log holds (Start is the
// log start offset, End the log end offset, the next one to be written);
// for DeleteRecordsBefore End is the high watermark. errors.Is(err,
// ErrOffsetOutOfRange) matches it.
type OffsetOutOfRangeError struct {
	Offset int64
	Start  int64
	End    int64
}

func (e *OffsetOutOfRangeError) Error() string {
	return fmt.Sprintf("log: offset %d out of range [%d, %d]", e.Offset, e.Start, e.End)
}

// Unwrap makes errors.Is(err, ErrOffsetOutOfRange) true, and gives the
// error ErrOffsetOutOfRange's Kafka code.
func (e *OffsetOutOfRangeError) Unwrap() error { return ErrOffsetOutOfRange }

// markCorrupt makes an error whose cause is bad bytes on disk (a segment,
// an index or a stored batch: anything matching errs.ErrCorrupt) match
// ErrCorrupt too, with its text unchanged, so that callers of the log test
// one class whichever layer found the damage, and the *errs.Corruption
// with the file and position stays what errors.As finds. Not for Append's
// checks of the caller's batches, which are ErrInvalidBatch.
func markCorrupt(err error) error {
	if err == nil || errors.Is(err, ErrCorrupt) || !errors.Is(err, errs.ErrCorrupt) {
		return err
	}
	return errs.Mark(err, ErrCorrupt)
}

// Compaction errors.
var (
	// ErrNoKey is matched by an append to a compacted log (Options.Compact)
	// of a batch holding a record without a key, as Kafka refuses them for
	// compacted topics; it also matches ErrInvalidBatch. Kafka:
	// INVALID_RECORD.
	ErrNoKey = errs.New("log: record without a key in a compacted log", kerr.InvalidRecord, ErrInvalidBatch)
	// ErrNotCompacted is returned by Compact on a log opened without
	// Options.Compact.
	ErrNotCompacted = errors.New("log: compaction is off (Options.Compact)")
	// ErrCompactionAborted means a cleaning pass found its segments changed
	// (truncated, or deleted by retention) when it came to swap them in: it
	// removed its files and left the log as it was. The next pass starts
	// over.
	ErrCompactionAborted = errors.New("log: compaction aborted: the segments changed under it")
	// ErrCleanerMapTooSmall means the cleaner's map cannot hold the keys of
	// even one batch: the Cleaner needs more BufferBytes per worker.
	ErrCleanerMapTooSmall = errors.New("log: cleaner map too small for a batch")
)

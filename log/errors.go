package log

import (
	"errors"
	"fmt"

	"github.com/foliolog/folio/index"
	"github.com/foliolog/folio/record"
	"github.com/foliolog/folio/segment"
)

var (
	// ErrClosed is returned by every call on a Log after Close.
	ErrClosed = errors.New("log: closed")
	// ErrFailed marks a log that stopped accepting writes after a write or
	// fsync failed (fail-stop). The error wraps the cause. Reads of the
	// records the log had made visible go on; Close and Open again recover.
	ErrFailed = errors.New("log: failed; reopen to recover")
	// ErrCorrupt is the class of errors about bytes on disk that are not a
	// valid log. They carry the file and offset.
	ErrCorrupt = errors.New("log: corrupt")
	// ErrOffsetOutOfRange is matched (errors.Is) by *OffsetOutOfRangeError.
	ErrOffsetOutOfRange = errors.New("log: offset out of range")
	// ErrNoData means the offset is inside the log's range but nothing at or
	// beyond it is visible yet (it is at or past the high watermark). A
	// consumer waits for it with Wait.
	ErrNoData = errors.New("log: no visible data at offset yet")
	// ErrInvalidBatch wraps the reason an appended batch was refused before
	// anything was written (bad header or checksum, too large).
	ErrInvalidBatch = errors.New("log: invalid batch")
	// ErrBatchTooLarge is matched by an append of a batch above
	// Options.MaxBatchBytes; it also matches ErrInvalidBatch.
	ErrBatchTooLarge = errors.New("log: batch too large")
	// ErrTruncated is returned to an appender whose records were removed by
	// TruncateTo before they became durable: their fate is settled (gone).
	ErrTruncated = errors.New("log: records truncated before acknowledgement")
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

// Is makes errors.Is(err, ErrOffsetOutOfRange) true.
func (e *OffsetOutOfRangeError) Is(target error) bool { return target == ErrOffsetOutOfRange }

// markCorrupt adds ErrCorrupt to an error whose cause is bad bytes on disk
// (a segment, an index or a stored batch), so that callers test one class
// (errors.Is(err, ErrCorrupt)) whichever layer found it. The cause's file
// and position stay in the message. Not for Append's checks of the
// caller's batches, which are ErrInvalidBatch.
func markCorrupt(err error) error {
	if err == nil || errors.Is(err, ErrCorrupt) {
		return err
	}
	if errors.Is(err, segment.ErrCorrupt) || errors.Is(err, index.ErrCorrupt) || errors.Is(err, record.ErrCorrupt) {
		return fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	return err
}

// Compaction errors.
var (
	// ErrNoKey is matched by an append to a compacted log (Options.Compact)
	// of a batch holding a record without a key, as Kafka refuses them for
	// compacted topics; it also matches ErrInvalidBatch.
	ErrNoKey = errors.New("log: record without a key in a compacted log")
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

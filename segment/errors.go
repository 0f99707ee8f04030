package segment

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/foliolog/folio/errs"
)

var (
	// ErrCorrupt marks a .log whose bytes are not a valid chain of batches
	// where the segment expected one (below the written size of a segment
	// that was not recovered). Errors are *errs.Corruption values with the
	// file and byte position; it matches errs.ErrCorrupt. Recover cuts such
	// a tail; other calls report it.
	ErrCorrupt = errs.New("segment: corrupt log", errs.ErrCorrupt)
	// ErrClosed is returned by every call after Close or Delete. It
	// matches errs.ErrClosed.
	ErrClosed = errs.New("segment: closed", errs.ErrClosed)
	// ErrSealed is returned by Append on a sealed segment (one that was
	// sealed, or opened with Open and not activated).
	ErrSealed = errors.New("segment: sealed")
	// ErrFailed is returned by Append, Seal and Sync after a write or an
	// fsync failed: the segment is fail-stop until Recover (or a reopen and
	// Recover) re-establishes its state from disk. It wraps the first cause.
	ErrFailed = errors.New("segment: failed earlier write")
	// ErrReadOnly is returned by every method that would write to a
	// segment opened with OpenReadOnly.
	ErrReadOnly = errors.New("segment: read-only")
	// ErrExists is returned by Create when the segment's .log already exists.
	ErrExists = errors.New("segment: already exists")

	// ErrOffsetOutOfRange is returned for an offset below the base offset or
	// at or beyond the next offset (or beyond the visible limit of a Read).
	ErrOffsetOutOfRange = errors.New("segment: offset out of range")
	// ErrInvalidBatch is returned by Append for bytes that are not one valid
	// batch (header, size or CRC); it also wraps the record package's error.
	ErrInvalidBatch = errors.New("segment: invalid batch")
	// ErrBatchTooLarge is returned by Append for a batch above
	// Options.MaxBatchBytes.
	ErrBatchTooLarge = errors.New("segment: batch too large")
	// ErrOffsetNotAscending is returned by Append for a batch whose base
	// offset is not above the previous batch's last offset (or is below the
	// segment's base offset).
	ErrOffsetNotAscending = errors.New("segment: offset not ascending")
	// ErrOffsetOverflow is returned by Append for a batch whose last offset
	// cannot be stored as a 4-byte offset relative to the base: the caller
	// must roll to a new segment.
	ErrOffsetOverflow = errors.New("segment: relative offset overflow")
	// ErrSegmentFull is returned by Append when the batch would take the
	// segment beyond Options.MaxSegmentBytes (which also keeps every
	// position within 4 bytes) or when an index that needs an entry is
	// full: the caller must roll to a new segment.
	ErrSegmentFull = errors.New("segment: full")
)

// openError reports a failed open of path: the file layer's *fs.PathError
// already names the operation and the file, so it is not said twice.
func openError(op, path string, err error) error {
	if pe, ok := errors.AsType[*fs.PathError](err); ok && pe.Path == path {
		if op == "open" {
			return fmt.Errorf("segment: %w", err)
		}
		return fmt.Errorf("segment: %s: %w", op, err)
	}
	return fmt.Errorf("segment: %s %s: %w", op, path, err)
}

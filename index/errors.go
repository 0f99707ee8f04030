package index

import (
	"errors"

	"github.com/foliolog/folio/errs"
)

var (
	// ErrCorrupt marks an index file that fails the open-time sanity check
	// (size not a multiple of the entry size, last offset below the base,
	// entries out of order) or whose mapping faulted while being read. The
	// index carries no checksum: the segment's answer to ErrCorrupt is to
	// rebuild the index from its .log file. Errors are *errs.Corruption
	// values naming the index file; it matches errs.ErrCorrupt.
	ErrCorrupt = errs.New("index: corrupt index", errs.ErrCorrupt)
	// ErrFull means a writable index holds MaxEntries entries; the segment
	// must roll before indexing more batches.
	ErrFull = errors.New("index: index is full")
	// ErrNoSpace means the file system refused to allocate disk blocks ahead
	// of the write position (ENOSPC). The entry was not written; nothing was
	// written through the mapping into unallocated pages.
	ErrNoSpace = errors.New("index: no space left to grow the index file")
	// ErrReadOnly is returned by Append on a sealed (read-only) index.
	// Reactivate makes it writable again.
	ErrReadOnly = errors.New("index: index is read-only")
	// ErrInMemory is returned by Rename and Reactivate of an index that
	// lives in memory only (NewOffsetInMemory, NewTimeInMemory): it has no
	// file to rename or reopen.
	ErrInMemory = errors.New("index: index is in memory only")
	// ErrClosed is returned by every method that can fail once Close has run,
	// including a second Close. It matches errs.ErrClosed.
	ErrClosed = errs.New("index: index is closed", errs.ErrClosed)
	// ErrNotMonotonic is returned by Append when the entry would break the
	// order lookups rely on: offsets must increase strictly (time index:
	// never decrease) and positions must never decrease.
	ErrNotMonotonic = errors.New("index: entry out of order")
	// ErrOutOfRange is returned when a value does not fit the on-disk
	// format: a relative offset (offset - base) outside [0, 2^31-1], a
	// negative base offset, or a position outside [0, 2^31-1] (Kafka stores
	// positions as int32, so a segment's .log stays below 2 GiB).
	ErrOutOfRange = errors.New("index: value out of range")
)

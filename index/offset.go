package index

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/foliolog/folio/vfs"
)

// OffsetEntrySize is the size of one .index entry: a 4-byte offset relative
// to the segment's base offset, then a 4-byte byte position in the .log,
// both big-endian (Kafka's OffsetIndex format).
const OffsetEntrySize = 8

// OffsetEntry maps a batch's offset to the byte position of the batch in
// the segment's .log.
type OffsetEntry struct {
	Offset   int64
	Position int64
}

// OffsetIndex is a segment's sparse offset index (.index). One goroutine
// appends (the segment's writer); any number look up concurrently, without
// locks. See the package documentation for the model.
type OffsetIndex struct {
	c *core
}

// OpenOffset opens or creates the offset index at path for the segment
// whose first offset is baseOffset. fsys nil means vfs.Default.
//
// A writable index (the active segment's) is mapped read-write at
// MaxIndexBytes and grows its file as entries arrive; a read-only one (a
// sealed segment's) is mapped at its file size, keeps no file descriptor,
// and refuses Append. Opening read-only does not create the file: a missing
// file is an error matching fs.ErrNotExist, and the segment rebuilds it.
//
// The file passes an O(1) sanity check or OpenOffset returns an error
// wrapping ErrCorrupt: its size is whole entries, and its last entry has an
// offset and position not below zero (relative to the base) and, when there
// are two or more entries, an offset above the first entry's and a position
// not below it. An empty file is a valid empty index.
func OpenOffset(fsys vfs.FS, path string, baseOffset int64, writable bool, opts *Options) (*OffsetIndex, error) {
	c, err := openCore(fsys, path, baseOffset, writable, opts, OffsetEntrySize, checkOffsetEntries)
	if err != nil {
		return nil, err
	}
	return &OffsetIndex{c: c}, nil
}

func checkOffsetEntries(first, last []byte, n int64) error {
	firstRel, firstPos := decodeOffsetEntry(first)
	lastRel, lastPos := decodeOffsetEntry(last)
	switch {
	case lastRel < 0:
		return fmt.Errorf("last entry's relative offset %d is below the base", lastRel)
	case lastPos < 0:
		return fmt.Errorf("last entry's position %d is negative", lastPos)
	case n > 1 && lastRel <= firstRel:
		// A crash can leave the allocated but unwritten tail as zeros.
		return fmt.Errorf("last entry's relative offset %d is not above the first's %d", lastRel, firstRel)
	case n > 1 && lastPos < firstPos:
		return fmt.Errorf("last entry's position %d is below the first's %d", lastPos, firstPos)
	}
	return nil
}

// decodeOffsetEntry reads an entry's fields as Kafka's int32s.
func decodeOffsetEntry(b []byte) (rel, pos int32) {
	return int32(binary.BigEndian.Uint32(b)), int32(binary.BigEndian.Uint32(b[4:]))
}

func (x *OffsetIndex) offsetAt(d []byte, i int) int64 {
	return x.c.base + int64(int32(binary.BigEndian.Uint32(d[i*OffsetEntrySize:])))
}

func (x *OffsetIndex) positionAt(d []byte, i int) int64 {
	return int64(int32(binary.BigEndian.Uint32(d[i*OffsetEntrySize+4:])))
}

func (x *OffsetIndex) entryAt(d []byte, i int) OffsetEntry {
	return OffsetEntry{Offset: x.offsetAt(d, i), Position: x.positionAt(d, i)}
}

func (x *OffsetIndex) baseEntry() OffsetEntry { return OffsetEntry{Offset: x.c.base} }

// Append adds an entry for the batch at offset that starts at position in
// the .log. Offsets must increase strictly and positions must not decrease
// (ErrNotMonotonic); offset-base and position must fit Kafka's int32 fields
// (ErrOutOfRange). It fails with ErrFull when the index holds MaxEntries,
// ErrReadOnly when sealed, ErrNoSpace when the disk cannot grow the file,
// and ErrClosed after Close; a failed Append changes nothing.
//
// The entry becomes visible to lookups only once all 8 bytes are written.
func (x *OffsetIndex) Append(offset int64, position int64) error {
	rel := offset - x.c.base
	if offset < x.c.base || rel > math.MaxInt32 {
		return fmt.Errorf("%w: %s: offset %d is not within 2^31-1 above the base %d", ErrOutOfRange, x.c.name(), offset, x.c.base)
	}
	if position < 0 || position > math.MaxInt32 {
		return fmt.Errorf("%w: %s: position %d is outside [0, 2^31-1]", ErrOutOfRange, x.c.name(), position)
	}
	return x.c.appendEntry(func(last []byte) (bool, error) {
		if last == nil {
			return false, nil
		}
		lastRel, lastPos := decodeOffsetEntry(last)
		if rel <= int64(lastRel) {
			return false, fmt.Errorf("%w: offset %d is not above the last indexed offset %d", ErrNotMonotonic, offset, x.c.base+int64(lastRel))
		}
		if position < int64(lastPos) {
			return false, fmt.Errorf("%w: position %d is below the last indexed position %d", ErrNotMonotonic, position, lastPos)
		}
		return false, nil
	}, func(dst []byte) {
		binary.BigEndian.PutUint32(dst, uint32(rel))
		binary.BigEndian.PutUint32(dst[4:], uint32(position))
	})
}

// Lookup returns the entry with the largest offset at or below offset: the
// position from which a forward scan of the .log finds that offset. It
// returns (baseOffset, 0) when the index is empty, when offset is below the
// first entry, after Close, and if the mapping faults (see ErrCorrupt);
// scanning from position 0 is always correct, only slower.
//
// Lookup searches the last 8 KiB of entries first (see the package doc).
func (x *OffsetIndex) Lookup(offset int64) OffsetEntry {
	e := x.baseEntry()
	_ = x.c.read(func(d []byte, n int) {
		if i := floorSlot(n, x.c.warm, func(i int) int64 { return x.offsetAt(d, i) }, offset); i >= 0 {
			e = x.entryAt(d, i)
		}
	})
	return e
}

// UpperBound returns the entry with the smallest offset at or above offset,
// and false when there is none (no entries, all below offset, closed, or a
// fault).
func (x *OffsetIndex) UpperBound(offset int64) (OffsetEntry, bool) {
	return x.ceil(offset, x.offsetAt)
}

// UpperBoundPosition returns the first entry whose position is at or above
// pos, and false when there is none. A fetch bounded to a byte budget ends
// its read at that entry's batch (Kafka's fetchUpperBoundOffset).
func (x *OffsetIndex) UpperBoundPosition(pos int64) (OffsetEntry, bool) {
	return x.ceil(pos, x.positionAt)
}

func (x *OffsetIndex) ceil(target int64, key func(d []byte, i int) int64) (OffsetEntry, bool) {
	e, ok := x.baseEntry(), false
	_ = x.c.read(func(d []byte, n int) {
		if i := ceilSlot(n, x.c.warm, func(i int) int64 { return key(d, i) }, target); i >= 0 {
			e, ok = x.entryAt(d, i), true
		}
	})
	return e, ok
}

// Entry returns entry i (0 is the oldest). An i outside [0, Entries())
// returns (baseOffset, 0), as does any i after Close.
func (x *OffsetIndex) Entry(i int) OffsetEntry {
	e := x.baseEntry()
	_ = x.c.read(func(d []byte, n int) {
		if i >= 0 && i < n {
			e = x.entryAt(d, i)
		}
	})
	return e
}

// LastEntry returns the newest entry, or (baseOffset, 0) and false when the
// index is empty or closed.
func (x *OffsetIndex) LastEntry() (OffsetEntry, bool) {
	e, ok := x.baseEntry(), false
	_ = x.c.read(func(d []byte, n int) {
		if n > 0 {
			e, ok = x.entryAt(d, n-1), true
		}
	})
	return e, ok
}

// Entries is the number of entries lookups see (0 after Close).
func (x *OffsetIndex) Entries() int { return x.c.entries() }

// MaxEntries is how many entries the index can hold: MaxIndexBytes/8 while
// writable, Entries() once sealed (0 after Close).
func (x *OffsetIndex) MaxEntries() int { return x.c.maxEntries() }

// Full reports whether Append would fail with ErrFull (always true once
// sealed or closed): the segment rolls when its index is full.
func (x *OffsetIndex) Full() bool { return x.c.full() }

// Writable reports whether the index accepts Append (not sealed, not
// closed).
func (x *OffsetIndex) Writable() bool { return x.c.writable() }

// SizeBytes is the size of the entries, Entries()*8: the file's size once
// sealed or closed. While writable the file may be up to one allocation
// step (AllocStepEntries) longer.
func (x *OffsetIndex) SizeBytes() int64 { return x.c.sizeBytes() }

// BaseOffset is the segment's base offset the entries are relative to.
func (x *OffsetIndex) BaseOffset() int64 { return x.c.base }

// Path is the index file's current path.
func (x *OffsetIndex) Path() string { return x.c.name() }

// TruncateTo drops every entry with an offset at or above offset, for a
// segment whose log is being cut there. It works writable or sealed; a
// sealed index's file shrinks with it (and stays sealed: call Reactivate to
// append again). Readers that looked at the dropped entries finish before
// the space is reused.
func (x *OffsetIndex) TruncateTo(offset int64) error {
	return x.c.truncate(func(d []byte, n int) int {
		if i := ceilSlot(n, x.c.warm, func(i int) int64 { return x.offsetAt(d, i) }, offset); i >= 0 {
			return i
		}
		return n
	})
}

// Reset drops every entry, as before a rebuild from the log.
func (x *OffsetIndex) Reset() error {
	return x.c.truncate(func([]byte, int) int { return 0 })
}

// Seal makes the index read-only when its segment rolls: it trims the file
// to Entries()*8 bytes (giving back the allocation ahead of the writer),
// fsyncs it, remaps the entries read-only at that size and closes the file
// descriptor. Lookups continue throughout. Sealing a sealed index does
// nothing. If trimming or fsync fails the error is returned and the index
// is read-only anyway; its file may then fail the sanity check at the next
// open, and be rebuilt.
func (x *OffsetIndex) Seal() error { return x.c.seal() }

// Reactivate makes a sealed index writable again, mapped at MaxIndexBytes
// (used when truncation makes a sealed segment the active one again). It
// reopens the file by its path. Reactivating a writable index does
// nothing.
func (x *OffsetIndex) Reactivate() error { return x.c.reactivate() }

// Sync makes the appended entries durable (fsync; msync first outside
// Linux). It does not block Append. On a sealed index it does nothing:
// Seal already synced it.
func (x *OffsetIndex) Sync() error { return x.c.sync() }

// Rename moves the index file (e.g. to its .deleted or .swap name); later
// reopens use the new path.
func (x *OffsetIndex) Rename(newPath string) error { return x.c.rename(newPath) }

// Close waits for in-flight lookups, unmaps the index and, if writable,
// trims the file to its entries (without fsync: call Sync first for that).
// Lookups after Close answer as for an empty index; every other method
// returns ErrClosed, and so does a second Close.
func (x *OffsetIndex) Close() error { return x.c.close() }

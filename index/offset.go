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
	table[OffsetEntry]
}

var offsetLayout = &layout[OffsetEntry]{
	size: OffsetEntrySize,
	decode: func(d []byte, i int, base int64) OffsetEntry {
		return OffsetEntry{Offset: offsetAt(d, i, base), Position: positionAt(d, i)}
	},
	offset: offsetAt,
	none:   func(base int64) OffsetEntry { return OffsetEntry{Offset: base} },
	sanity: checkOffsetEntries,
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
	t, err := openTable(fsys, path, baseOffset, writable, opts, offsetLayout)
	if err != nil {
		return nil, err
	}
	return &OffsetIndex{t}, nil
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

func offsetAt(d []byte, i int, base int64) int64 {
	return base + int64(int32(binary.BigEndian.Uint32(d[i*OffsetEntrySize:])))
}

func positionAt(d []byte, i int) int64 {
	return int64(int32(binary.BigEndian.Uint32(d[i*OffsetEntrySize+4:])))
}

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
	return x.floor(offset, x.offsets())
}

// offsets returns the key of the offset searches: a closure over the base,
// so that the search's probe calls offsetAt directly (inlined), not through
// the layout.
func (x *OffsetIndex) offsets() func(d []byte, i int) int64 {
	base := x.c.base
	return func(d []byte, i int) int64 { return offsetAt(d, i, base) }
}

// UpperBound returns the entry with the smallest offset at or above offset,
// and false when there is none (no entries, all below offset, closed, or a
// fault).
func (x *OffsetIndex) UpperBound(offset int64) (OffsetEntry, bool) {
	return x.ceil(offset, x.offsets())
}

// UpperBoundPosition returns the first entry whose position is at or above
// pos, and false when there is none. A fetch bounded to a byte budget ends
// its read at that entry's batch (Kafka's fetchUpperBoundOffset).
func (x *OffsetIndex) UpperBoundPosition(pos int64) (OffsetEntry, bool) {
	return x.ceil(pos, positionAt)
}

// Entry returns entry i (0 is the oldest). An i outside [0, Entries())
// returns (baseOffset, 0), as does any i after Close.
func (x *OffsetIndex) Entry(i int) OffsetEntry { return x.entry(i) }

// LastEntry returns the newest entry, or (baseOffset, 0) and false when the
// index is empty or closed.
func (x *OffsetIndex) LastEntry() (OffsetEntry, bool) { return x.lastEntry() }

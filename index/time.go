package index

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/foliolog/folio/vfs"
)

// TimeEntrySize is the size of one .timeindex entry: an 8-byte timestamp,
// then a 4-byte offset relative to the segment's base offset, both
// big-endian (Kafka's TimeIndex format).
const TimeEntrySize = 12

// NoTimestamp is Kafka's RecordBatch.NO_TIMESTAMP. TimeIndex.Lookup returns
// it as the timestamp when no entry qualifies, and an empty time index
// treats it as its last timestamp, so only timestamps above it are indexed.
const NoTimestamp = -1

// TimeEntry pairs the segment's maximum timestamp so far with the offset
// where it was reached (Kafka appends the offset of the record holding the
// maximum): no record up to Offset has a timestamp above Timestamp.
type TimeEntry struct {
	Timestamp int64
	Offset    int64
}

// TimeIndex is a segment's sparse time index (.timeindex). Its timestamps
// increase strictly and its offsets never decrease. Concurrency and life
// cycle are as for OffsetIndex.
type TimeIndex struct {
	table[TimeEntry]
}

var timeLayout = &layout[TimeEntry]{
	size: TimeEntrySize,
	decode: func(d []byte, i int, base int64) TimeEntry {
		return TimeEntry{Timestamp: timestampAt(d, i), Offset: timeOffsetAt(d, i, base)}
	},
	offset: timeOffsetAt,
	none:   func(base int64) TimeEntry { return TimeEntry{Timestamp: NoTimestamp, Offset: base} },
	sanity: checkTimeEntries,
}

// OpenTime opens or creates the time index at path for the segment whose
// first offset is baseOffset; writable, fsys and opts are as for
// OpenOffset. The O(1) sanity check requires whole 12-byte entries, a last
// relative offset not below zero and, with two or more entries, a last
// timestamp above the first's and a last offset not below the first's;
// failures wrap ErrCorrupt.
func OpenTime(fsys vfs.FS, path string, baseOffset int64, writable bool, opts *Options) (*TimeIndex, error) {
	t, err := openTable(fsys, path, baseOffset, writable, opts, timeLayout)
	if err != nil {
		return nil, err
	}
	return &TimeIndex{t}, nil
}

func checkTimeEntries(first, last []byte, n int64) error {
	firstTs, firstRel := decodeTimeEntry(first)
	lastTs, lastRel := decodeTimeEntry(last)
	switch {
	case lastRel < 0:
		return fmt.Errorf("last entry's relative offset %d is below the base", lastRel)
	case lastTs < firstTs:
		return fmt.Errorf("last timestamp %d is below the first %d", lastTs, firstTs)
	case n > 1 && lastTs == firstTs:
		// Timestamps increase strictly; equal ends are most likely a tail
		// of zeros left by a crash.
		return fmt.Errorf("last timestamp %d equals the first", lastTs)
	case n > 1 && lastRel < firstRel:
		return fmt.Errorf("last entry's relative offset %d is below the first's %d", lastRel, firstRel)
	}
	return nil
}

func decodeTimeEntry(b []byte) (ts int64, rel int32) {
	return int64(binary.BigEndian.Uint64(b)), int32(binary.BigEndian.Uint32(b[8:]))
}

func timestampAt(d []byte, i int) int64 {
	return int64(binary.BigEndian.Uint64(d[i*TimeEntrySize:]))
}

func timeOffsetAt(d []byte, i int, base int64) int64 {
	return base + int64(int32(binary.BigEndian.Uint32(d[i*TimeEntrySize+8:])))
}

// Append records that the segment's maximum timestamp reached ts at the
// batch with offset. As in Kafka, it does nothing (and returns nil) unless
// ts is above the last entry's timestamp (NoTimestamp when empty), so the
// segment may call it for every indexed batch. The offset must fit the
// int32 relative field (ErrOutOfRange) and not go below the last entry's
// (ErrNotMonotonic), whether or not an entry is written. Otherwise errors
// are as for OffsetIndex.Append.
func (x *TimeIndex) Append(ts int64, offset int64) error {
	rel := offset - x.c.base
	if offset < x.c.base || rel > math.MaxInt32 {
		return fmt.Errorf("%w: %s: offset %d is not within 2^31-1 above the base %d", ErrOutOfRange, x.c.name(), offset, x.c.base)
	}
	return x.c.appendEntry(func(last []byte) (bool, error) {
		lastTs := int64(NoTimestamp)
		if last != nil {
			var lastRel int32
			lastTs, lastRel = decodeTimeEntry(last)
			if rel < int64(lastRel) {
				return false, fmt.Errorf("%w: offset %d is below the last indexed offset %d", ErrNotMonotonic, offset, x.c.base+int64(lastRel))
			}
		}
		return ts <= lastTs, nil
	}, func(dst []byte) {
		binary.BigEndian.PutUint64(dst, uint64(ts))
		binary.BigEndian.PutUint32(dst[8:], uint32(rel))
	})
}

// Lookup returns the entry with the largest timestamp at or below ts. When
// there is none (empty index, ts below the first entry, after Close, or a
// fault) it returns (NoTimestamp, baseOffset): the search for the first
// record at or after ts starts at the segment's beginning. From the
// returned entry's offset the segment scans batches forward to the first
// one whose max timestamp is at or after ts.
func (x *TimeIndex) Lookup(ts int64) TimeEntry {
	return x.floor(ts, timestampAt)
}

// UpperBound returns the entry with the smallest timestamp at or above ts,
// and false when there is none. Its offset is a batch whose max timestamp
// is at least ts, so the first record at or after ts is at or before it.
func (x *TimeIndex) UpperBound(ts int64) (TimeEntry, bool) {
	return x.ceil(ts, timestampAt)
}

// Entry returns entry i (0 is the oldest). An i outside [0, Entries())
// returns (NoTimestamp, baseOffset), as does any i after Close.
func (x *TimeIndex) Entry(i int) TimeEntry { return x.entry(i) }

// LastEntry returns the newest entry, or (NoTimestamp, baseOffset) and
// false when the index is empty or closed.
func (x *TimeIndex) LastEntry() (TimeEntry, bool) { return x.lastEntry() }

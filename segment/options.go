package segment

import (
	"fmt"
	"math"

	"github.com/foliolog/folio/readpath"
	"github.com/foliolog/folio/record"
)

// Defaults of Options; a zero field takes the default.
const (
	DefaultIndexIntervalBytes = 4096
	DefaultMaxIndexBytes      = 10 << 20
	DefaultMaxBatchBytes      = 1<<20 + record.LogOverhead
	DefaultMaxSegmentBytes    = 1 << 30

	// MaxSegmentBytesLimit is the largest MaxSegmentBytes: index entries
	// store positions in 4 signed bytes, as Kafka's do.
	MaxSegmentBytesLimit = math.MaxInt32
)

// Options configures a segment. A nil *Options, or a zero field, means the
// default. The values are not stored on disk: a segment may be reopened
// with other options (a smaller MaxIndexBytes leaves later entries out of a
// rebuilt index, which costs longer scans, never wrong answers).
type Options struct {
	// IndexIntervalBytes is how many bytes are appended between index
	// entries (Kafka's index.interval.bytes): an entry is added before a
	// batch once more than this many bytes were written since the last one.
	// Default 4096. Use 1 for an entry at (nearly) every batch.
	IndexIntervalBytes int
	// MaxIndexBytes is the size each index file is preallocated to while
	// the segment is active (Kafka's segment.index.bytes). When the offset
	// or time index is full, Append returns ErrSegmentFull. Default 10 MiB.
	MaxIndexBytes int64
	// MaxBatchBytes is the largest batch Append accepts, header included
	// (Kafka's message.max.bytes). Default 1 MiB + 12, or MaxSegmentBytes
	// if that is smaller. Recover accepts larger batches already on disk.
	MaxBatchBytes int
	// ReadPath chooses how reads hand out bytes: readpath.Mmap (default, a
	// read-only mapping) or readpath.Sendfile (pread, and sendfile to TCP).
	ReadPath readpath.Kind
	// MaxSegmentBytes caps the .log size: an append that would pass it
	// returns ErrSegmentFull. It is also the size of the active segment's
	// read mapping (address space, not memory). Default 1 GiB, at most
	// MaxSegmentBytesLimit (2 GiB - 1).
	MaxSegmentBytes int64
}

// resolve returns a copy of o with defaults filled in, or an error naming
// the first bad field.
func (o *Options) resolve() (Options, error) {
	var r Options
	if o != nil {
		r = *o
	}
	if r.IndexIntervalBytes == 0 {
		r.IndexIntervalBytes = DefaultIndexIntervalBytes
	}
	if r.MaxIndexBytes == 0 {
		r.MaxIndexBytes = DefaultMaxIndexBytes
	}
	if r.MaxSegmentBytes == 0 {
		r.MaxSegmentBytes = DefaultMaxSegmentBytes
	}
	if r.MaxBatchBytes == 0 {
		r.MaxBatchBytes = int(min(DefaultMaxBatchBytes, r.MaxSegmentBytes))
	}
	return r, r.validate()
}

func (o *Options) validate() error {
	switch {
	case o.IndexIntervalBytes < 0:
		return fmt.Errorf("segment: Options.IndexIntervalBytes %d is negative", o.IndexIntervalBytes)
	case o.MaxIndexBytes < 12:
		// 12 bytes is one time-index entry, the larger of the two.
		return fmt.Errorf("segment: Options.MaxIndexBytes %d holds no index entry (need at least 12)", o.MaxIndexBytes)
	// MaxSegmentBytes before MaxBatchBytes: a zero MaxBatchBytes defaults
	// to at most MaxSegmentBytes, so a bad segment size would otherwise be
	// blamed on the batch limit the caller never set.
	case o.MaxSegmentBytes < int64(record.HeaderSize) || o.MaxSegmentBytes > MaxSegmentBytesLimit:
		return fmt.Errorf("segment: Options.MaxSegmentBytes %d is outside [%d, %d]", o.MaxSegmentBytes, record.HeaderSize, MaxSegmentBytesLimit)
	case o.MaxBatchBytes < record.HeaderSize:
		return fmt.Errorf("segment: Options.MaxBatchBytes %d is below the batch header size %d", o.MaxBatchBytes, record.HeaderSize)
	case int64(o.MaxBatchBytes) > o.MaxSegmentBytes:
		return fmt.Errorf("segment: Options.MaxBatchBytes %d exceeds Options.MaxSegmentBytes %d", o.MaxBatchBytes, o.MaxSegmentBytes)
	case o.ReadPath != readpath.Mmap && o.ReadPath != readpath.Sendfile:
		return fmt.Errorf("segment: Options.ReadPath %d is not a known read path", o.ReadPath)
	}
	return nil
}

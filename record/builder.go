package record

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
)

// Header is one record header. Kafka requires the key and allows a null
// value.
type Header struct {
	Key   string
	Value []byte // nil is a null value; a non-nil empty slice is empty
}

// Record is one record handed to a Builder.
type Record struct {
	Key   []byte // nil is a null key; a non-nil empty slice is empty
	Value []byte // nil is a null value (a tombstone); non-nil empty is empty
	// Headers are written in order; Kafka allows repeated keys.
	Headers []Header
	// Timestamp is the record's create time in milliseconds since the Unix
	// epoch. Any int64 round-trips, though Kafka brokers refuse negative
	// timestamps other than -1 (none).
	Timestamp int64
}

// NoTimestamp is Kafka's "no timestamp" value, written as the base and max
// timestamp of a batch that holds no records.
const NoTimestamp = -1

// Builder encodes records into one RecordBatch v2. It is reusable: Reset
// empties it and restores the batch fields to their defaults. A Builder is
// not safe for concurrent use.
//
// The exported fields are the batch-level header fields; set them between
// Reset (or NewBuilder) and Build.
type Builder struct {
	// BaseOffset is the offset of the batch's first record. Default 0; the
	// log that appends the batch assigns the real one (Batch.SetBaseOffset).
	BaseOffset int64
	// PartitionLeaderEpoch is stamped by the partition leader
	// (Batch.SetPartitionLeaderEpoch). Default -1, none.
	PartitionLeaderEpoch int32
	// ProducerID, ProducerEpoch and BaseSequence identify an idempotent or
	// transactional producer's batch. Default -1 each: no producer state.
	ProducerID    int64
	ProducerEpoch int16
	BaseSequence  int32
	// Transactional and Control set attribute bits 4 and 5 as given;
	// Control marks a batch of transaction markers. Default false.
	Transactional bool
	Control       bool
	// LogAppendTime sets attribute bit 3: AppendTime is written as the
	// batch's max timestamp and readers report it for every record, as a
	// broker does for a topic with message.timestamp.type=LogAppendTime.
	// The records keep the create times they were appended with. Default
	// false: create time, and the max timestamp is the records' maximum.
	LogAppendTime bool
	AppendTime    int64
	// EmptyTimestamp is written as the base and max timestamp of a batch
	// that holds no records. Default NoTimestamp. Compaction sets the
	// source batch's max timestamp, as Kafka's does for the empty batches
	// it keeps (writeEmptyHeader), so that a cleaned segment keeps its max
	// timestamp for time retention and the compaction lag.
	EmptyTimestamp int64

	opts      BuilderOptions
	recs      []byte // the encoded, uncompressed records section
	count     int32
	lastDelta int32 // the previous record's offset delta, -1 before the first
	spanDelta int32 // SetLastOffsetDelta's floor for lastOffsetDelta, -1 if unset
	firstTS   int64
	maxTS     int64
}

// NewBuilder returns an empty Builder with the default batch fields.
func NewBuilder(opts *BuilderOptions) (*Builder, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	b := &Builder{opts: o}
	b.Reset()
	return b, nil
}

// Reset drops the appended records and restores the batch fields to their
// defaults; the codec and level stay, and so does the memory.
func (b *Builder) Reset() {
	b.BaseOffset = 0
	b.PartitionLeaderEpoch = -1
	b.ProducerID = -1
	b.ProducerEpoch = -1
	b.BaseSequence = -1
	b.Transactional = false
	b.Control = false
	b.LogAppendTime = false
	b.AppendTime = 0
	b.EmptyTimestamp = NoTimestamp
	b.recs = b.recs[:0]
	b.count = 0
	b.lastDelta = -1
	b.spanDelta = -1
	b.firstTS = 0
	b.maxTS = 0
}

// Len is the number of records appended since the last Reset.
func (b *Builder) Len() int { return int(b.count) }

// Size is the size the batch would have if built now without compression;
// a compressed batch is usually smaller. Producers use it to decide when a
// batch is full.
func (b *Builder) Size() int { return HeaderSize + len(b.recs) }

// Append adds r with the next offset delta (0 for the first record). The
// Builder copies r's bytes; the caller may reuse them.
func (b *Builder) Append(r Record) error {
	if b.lastDelta == math.MaxInt32 {
		return fmt.Errorf("%w: offset delta past %d", ErrTooLarge, int32(math.MaxInt32))
	}
	return b.AppendAt(b.lastDelta+1, r)
}

// AppendAt adds r at offset BaseOffset+offsetDelta. Deltas must increase
// but may skip, as in a batch rewritten by compaction; the batch's
// lastOffsetDelta is the last record's delta.
func (b *Builder) AppendAt(offsetDelta int32, r Record) error {
	if offsetDelta <= b.lastDelta {
		return fmt.Errorf("%w: delta %d after %d", ErrOffsetDelta, offsetDelta, b.lastDelta)
	}
	if b.count == math.MaxInt32 {
		return fmt.Errorf("%w: more than %d records", ErrTooLarge, int32(math.MaxInt32))
	}
	first := b.count == 0
	base := b.firstTS
	if first {
		base = r.Timestamp
	}
	// Kafka wraps the delta like Java's long arithmetic, so any pair of
	// timestamps fits and base+delta gives the original back.
	tsDelta := r.Timestamp - base

	body, err := bodySize(tsDelta, offsetDelta, &r)
	if err != nil {
		return err
	}
	total := int64(sizeVarint(int32(body))) + body
	if int64(len(b.recs))+total > math.MaxInt32-(HeaderSize-LogOverhead) {
		return fmt.Errorf("%w: records section would pass %d bytes", ErrTooLarge, math.MaxInt32-(HeaderSize-LogOverhead))
	}

	at := len(b.recs)
	b.recs = slices.Grow(b.recs, int(total))
	p := appendVarint(b.recs, int32(body))
	p = append(p, 0) // record attributes: unused, always 0
	p = appendVarlong(p, tsDelta)
	p = appendVarint(p, offsetDelta)
	p = appendBytes(p, r.Key)
	p = appendBytes(p, r.Value)
	p = appendVarint(p, int32(len(r.Headers)))
	for i := range r.Headers {
		h := &r.Headers[i]
		p = appendVarint(p, int32(len(h.Key)))
		p = append(p, h.Key...)
		p = appendBytes(p, h.Value)
	}
	if int64(len(p)-at) != total {
		// bodySize and the writes above disagree: a bug here, not bad
		// input. Undo rather than emit a batch with a lying length.
		b.recs = b.recs[:at]
		return fmt.Errorf("record: internal error: record encoded to %d bytes, sized %d", len(p)-at, total)
	}
	b.recs = p
	if first {
		b.firstTS, b.maxTS = r.Timestamp, r.Timestamp
	} else if r.Timestamp > b.maxTS {
		b.maxTS = r.Timestamp
	}
	b.count++
	b.lastDelta = offsetDelta
	return nil
}

// SetLastOffsetDelta makes the batch span offsets through
// BaseOffset+delta even if no record sits there, as Kafka's compaction
// keeps a rewritten batch's lastOffsetDelta (and so its producer sequence
// range) when its last records, or all of them, are gone. Build writes the
// larger of delta and the last record's delta. Reset clears it.
func (b *Builder) SetLastOffsetDelta(delta int32) error {
	if delta < 0 {
		return fmt.Errorf("%w: lastOffsetDelta %d", ErrOffsetDelta, delta)
	}
	b.spanDelta = delta
	return nil
}

// bodySize is the encoded size of a record after its length prefix.
func bodySize(tsDelta int64, offsetDelta int32, r *Record) (int64, error) {
	n := 1 + int64(sizeVarlong(tsDelta)) + int64(sizeVarint(offsetDelta))
	k, err := bytesSize(r.Key, "key")
	if err != nil {
		return 0, err
	}
	v, err := bytesSize(r.Value, "value")
	if err != nil {
		return 0, err
	}
	n += k + v
	if len(r.Headers) > math.MaxInt32 {
		return 0, fmt.Errorf("%w: %d headers", ErrTooLarge, len(r.Headers))
	}
	n += int64(sizeVarint(int32(len(r.Headers))))
	for i := range r.Headers {
		h := &r.Headers[i]
		if len(h.Key) > math.MaxInt32 {
			return 0, fmt.Errorf("%w: header key of %d bytes", ErrTooLarge, len(h.Key))
		}
		n += int64(sizeVarint(int32(len(h.Key)))) + int64(len(h.Key))
		hv, err := bytesSize(h.Value, "header value")
		if err != nil {
			return 0, err
		}
		n += hv
		if n > math.MaxInt32 {
			break
		}
	}
	if n > math.MaxInt32 {
		return 0, fmt.Errorf("%w: record of %d bytes", ErrTooLarge, n)
	}
	return n, nil
}

func bytesSize(b []byte, what string) (int64, error) {
	if b == nil {
		return 1, nil // varint -1
	}
	if len(b) > math.MaxInt32 {
		return 0, fmt.Errorf("%w: %s of %d bytes", ErrTooLarge, what, len(b))
	}
	return int64(sizeVarint(int32(len(b)))) + int64(len(b)), nil
}

func appendBytes(p, b []byte) []byte {
	if b == nil {
		return appendVarint(p, -1)
	}
	p = appendVarint(p, int32(len(b)))
	return append(p, b...)
}

// Build encodes the batch into dst, overwriting it from index 0 and
// growing it when its capacity is short, so one buffer can serve many
// batches: buf, err = b.Build(buf). The result is a complete batch with
// its CRC. Build leaves the Builder as it was; call Reset to start the next
// batch.
//
// A batch with no records is written uncompressed whatever the codec, as
// Kafka writes the empty batches compaction leaves behind: there is
// nothing to compress, and some readers cannot parse an empty compressed
// stream.
func (b *Builder) Build(dst []byte) (Batch, error) {
	codec := b.opts.Codec
	if b.count == 0 {
		codec = CodecNone
	}
	dst = slices.Grow(dst[:0], HeaderSize+len(b.recs))[:HeaderSize]
	clear(dst)
	dst, err := compress(dst, b.recs, codec, b.opts.Level)
	if err != nil {
		return nil, fmt.Errorf("record: compressing %d records with %s: %w", b.count, codec, err)
	}
	if int64(len(dst))-LogOverhead > math.MaxInt32 {
		return nil, fmt.Errorf("%w: batch of %d bytes", ErrTooLarge, len(dst))
	}

	attrs := uint16(codec)
	if b.LogAppendTime {
		attrs |= attrTimestampType
	}
	if b.Transactional {
		attrs |= attrTransactional
	}
	if b.Control {
		attrs |= attrControl
	}
	baseTS, maxTS := b.EmptyTimestamp, b.EmptyTimestamp
	if b.count > 0 {
		baseTS, maxTS = b.firstTS, b.maxTS
	}
	if b.LogAppendTime {
		maxTS = b.AppendTime
	}
	be := binary.BigEndian
	be.PutUint64(dst[offBaseOffset:], uint64(b.BaseOffset))
	be.PutUint32(dst[offLength:], uint32(len(dst)-LogOverhead))
	be.PutUint32(dst[offLeaderEpoch:], uint32(b.PartitionLeaderEpoch))
	dst[offMagic] = Magic
	be.PutUint16(dst[offAttributes:], attrs)
	be.PutUint32(dst[offLastOffsetDelta:], uint32(max(b.lastDelta, b.spanDelta, 0)))
	be.PutUint64(dst[offBaseTimestamp:], uint64(baseTS))
	be.PutUint64(dst[offMaxTimestamp:], uint64(maxTS))
	be.PutUint64(dst[offProducerID:], uint64(b.ProducerID))
	be.PutUint16(dst[offProducerEpoch:], uint16(b.ProducerEpoch))
	be.PutUint32(dst[offBaseSequence:], uint32(b.BaseSequence))
	be.PutUint32(dst[offRecordCount:], uint32(b.count))
	batch := Batch(dst)
	batch.updateCRC()
	return batch, nil
}

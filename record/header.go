package record

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

// Byte layout of a RecordBatch v2 header (Kafka's DefaultRecordBatch), big-endian.
const (
	offBaseOffset      = 0
	offLength          = 8
	offLeaderEpoch     = 12
	offMagic           = 16
	offCRC             = 17
	offAttributes      = 21
	offLastOffsetDelta = 23
	offBaseTimestamp   = 27
	offMaxTimestamp    = 35
	offProducerID      = 43
	offProducerEpoch   = 51
	offBaseSequence    = 53
	offRecordCount     = 57

	// HeaderSize is the size of a batch header; the records follow it.
	HeaderSize = 61
	// LogOverhead is the size of the baseOffset and length fields, which
	// the length field does not count.
	LogOverhead = 12
	// Magic is the only batch format version Folio reads and writes.
	Magic = 2
)

// Attribute bits.
const (
	attrCodecMask     = 0x07
	attrTimestampType = 0x08
	attrTransactional = 0x10
	attrControl       = 0x20
	attrDeleteHorizon = 0x40
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Batch is one encoded RecordBatch v2, header included, exactly as it is on
// disk and on the wire. Accessors read the header in place; they require
// len(b) >= HeaderSize (run CheckHeader, Validate or Parse first on
// untrusted bytes).
type Batch []byte

func (b Batch) BaseOffset() int64 { return int64(binary.BigEndian.Uint64(b[offBaseOffset:])) }
func (b Batch) Length() int32     { return int32(binary.BigEndian.Uint32(b[offLength:])) }
func (b Batch) PartitionLeaderEpoch() int32 {
	return int32(binary.BigEndian.Uint32(b[offLeaderEpoch:]))
}
func (b Batch) MagicByte() int8        { return int8(b[offMagic]) }
func (b Batch) CRC() uint32            { return binary.BigEndian.Uint32(b[offCRC:]) }
func (b Batch) Attributes() int16      { return int16(binary.BigEndian.Uint16(b[offAttributes:])) }
func (b Batch) LastOffsetDelta() int32 { return int32(binary.BigEndian.Uint32(b[offLastOffsetDelta:])) }
func (b Batch) LastOffset() int64      { return b.BaseOffset() + int64(b.LastOffsetDelta()) }
func (b Batch) BaseTimestamp() int64   { return int64(binary.BigEndian.Uint64(b[offBaseTimestamp:])) }
func (b Batch) MaxTimestamp() int64    { return int64(binary.BigEndian.Uint64(b[offMaxTimestamp:])) }
func (b Batch) ProducerID() int64      { return int64(binary.BigEndian.Uint64(b[offProducerID:])) }
func (b Batch) ProducerEpoch() int16   { return int16(binary.BigEndian.Uint16(b[offProducerEpoch:])) }
func (b Batch) BaseSequence() int32    { return int32(binary.BigEndian.Uint32(b[offBaseSequence:])) }
func (b Batch) NumRecords() int32      { return int32(binary.BigEndian.Uint32(b[offRecordCount:])) }

// Size is the batch's total size in bytes according to its length field.
func (b Batch) Size() int { return int(b.Length()) + LogOverhead }

// Codec is the compression codec in attribute bits 0-2.
func (b Batch) Codec() Codec { return Codec(b.Attributes() & attrCodecMask) }

// LogAppendTime reports whether the timestamp type bit is set: the broker's
// append time, held in MaxTimestamp, stands for every record's timestamp.
func (b Batch) LogAppendTime() bool   { return b.Attributes()&attrTimestampType != 0 }
func (b Batch) IsTransactional() bool { return b.Attributes()&attrTransactional != 0 }
func (b Batch) IsControl() bool       { return b.Attributes()&attrControl != 0 }

// ComputeCRC returns the CRC-32C of attributes..end, the value the crc field
// must hold.
func (b Batch) ComputeCRC() uint32 { return crc32.Checksum(b[offAttributes:], castagnoli) }

// SetBaseOffset rewrites the base offset. The field is outside the CRC.
func (b Batch) SetBaseOffset(o int64) { binary.BigEndian.PutUint64(b[offBaseOffset:], uint64(o)) }

// SetPartitionLeaderEpoch stamps the leader epoch. The field is outside the
// CRC, so no checksum is recomputed.
func (b Batch) SetPartitionLeaderEpoch(e int32) {
	binary.BigEndian.PutUint32(b[offLeaderEpoch:], uint32(e))
}

// SetLogAppendTime marks the batch as log-append-time, sets its max
// timestamp to ts and recomputes the CRC, as a broker does for topics with
// message.timestamp.type=LogAppendTime.
func (b Batch) SetLogAppendTime(ts int64) {
	binary.BigEndian.PutUint16(b[offAttributes:], uint16(b.Attributes()|attrTimestampType))
	binary.BigEndian.PutUint64(b[offMaxTimestamp:], uint64(ts))
	b.updateCRC()
}

func (b Batch) updateCRC() { binary.BigEndian.PutUint32(b[offCRC:], b.ComputeCRC()) }

// CheckHeader checks what can be checked from the first HeaderSize bytes
// alone: enough bytes, magic 2, a length of at least HeaderSize-LogOverhead,
// a non-negative last offset delta and record count. It returns the batch's
// total size. It never reads past HeaderSize bytes.
func CheckHeader(b []byte) (size int, err error) {
	if len(b) < HeaderSize {
		return 0, fmt.Errorf("%w: %d bytes, a batch header needs %d", ErrShortBatch, len(b), HeaderSize)
	}
	h := Batch(b)
	if m := h.MagicByte(); m != Magic {
		return 0, fmt.Errorf("%w: magic %d", ErrCorrupt, m)
	}
	l := h.Length()
	if int64(l) < HeaderSize-LogOverhead {
		return 0, fmt.Errorf("%w: length %d below the header size", ErrCorrupt, l)
	}
	if h.LastOffsetDelta() < 0 || h.NumRecords() < 0 {
		return 0, fmt.Errorf("%w: negative lastOffsetDelta %d or record count %d", ErrCorrupt, h.LastOffsetDelta(), h.NumRecords())
	}
	return int(l) + LogOverhead, nil
}

// Validate checks a whole batch: the header (CheckHeader), that b holds
// exactly the batch's size, and the CRC. It does not decode records.
func (b Batch) Validate() error {
	size, err := CheckHeader(b)
	if err != nil {
		return err
	}
	if size != len(b) {
		return fmt.Errorf("%w at offset %d: length field says %d bytes, have %d", ErrCorrupt, b.BaseOffset(), size, len(b))
	}
	if got, want := b.ComputeCRC(), b.CRC(); got != want {
		return fmt.Errorf("%w at offset %d: crc %08x, computed %08x", ErrCorrupt, b.BaseOffset(), want, got)
	}
	return nil
}

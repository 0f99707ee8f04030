package topic_test

import (
	"encoding/binary"

	"github.com/foliolog/folio/record"
)

// exampleBatch builds the 61-byte header of a RecordBatch v2 with the
// producer fields set; the producer state reads nothing else.
func exampleBatch(producerID int64, epoch int16, firstSeq, records int32) record.Batch {
	b := make([]byte, record.HeaderSize)
	binary.BigEndian.PutUint32(b[8:], record.HeaderSize-record.LogOverhead) // length
	b[16] = record.Magic
	binary.BigEndian.PutUint32(b[23:], uint32(records-1)) // lastOffsetDelta
	binary.BigEndian.PutUint64(b[43:], uint64(producerID))
	binary.BigEndian.PutUint16(b[51:], uint16(epoch))
	binary.BigEndian.PutUint32(b[53:], uint32(firstSeq))
	binary.BigEndian.PutUint32(b[57:], uint32(records))
	return b
}

package topic

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"sort"
)

// A producer-state snapshot, big-endian:
//
//	magic "FPSS" | version u16 | reserved u16 (0) | endOffset i64 | count u32
//	count entries, by strictly ascending producer id:
//	    id i64 | epoch i16 | n u8 | lastTimestamp i64 | seqStart i32 | seqSpan i64
//	    n batches: firstSeq i32 | lastSeq i32 | firstOffset i64 | lastOffset i64 | maxTimestamp i64
//	crc u32: CRC-32C of every byte before it
//
// It plays the part of Kafka's <offset>.snapshot files: the owner stores
// one (tmp + fsync + rename) when a segment rolls, loads the newest at open
// and replays only the batches from its endOffset on.
const (
	snapshotMagic      = "FPSS"
	snapshotVersion    = 1
	snapshotHeaderSize = 4 + 2 + 2 + 8 + 4
	snapshotEntrySize  = 8 + 2 + 1 + 8 + 4 + 8
	snapshotBatchSize  = 4 + 4 + 8 + 8 + 8
	snapshotCRCSize    = 4
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// MarshalSnapshot encodes the state; endOffset is the log offset it covers
// up to (exclusive): the first offset to Replay from after LoadSnapshot.
func (s *ProducerState) MarshalSnapshot(endOffset int64) []byte {
	s.producersMu.Lock()
	ids := make([]int64, 0, len(s.producers))
	size := snapshotHeaderSize + snapshotCRCSize
	for id, e := range s.producers {
		ids = append(ids, id)
		size += snapshotEntrySize + e.n*snapshotBatchSize
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	b := make([]byte, 0, size)
	b = append(b, snapshotMagic...)
	b = binary.BigEndian.AppendUint16(b, snapshotVersion)
	b = binary.BigEndian.AppendUint16(b, 0)
	b = binary.BigEndian.AppendUint64(b, uint64(endOffset))
	b = binary.BigEndian.AppendUint32(b, uint32(len(ids)))
	for _, id := range ids {
		e := s.producers[id]
		b = binary.BigEndian.AppendUint64(b, uint64(id))
		b = binary.BigEndian.AppendUint16(b, uint16(e.epoch))
		b = append(b, byte(e.n))
		b = binary.BigEndian.AppendUint64(b, uint64(e.lastTimestamp))
		b = binary.BigEndian.AppendUint32(b, uint32(e.seqStart))
		b = binary.BigEndian.AppendUint64(b, uint64(e.seqSpan))
		for _, m := range e.batches[:e.n] {
			b = binary.BigEndian.AppendUint32(b, uint32(m.FirstSeq))
			b = binary.BigEndian.AppendUint32(b, uint32(m.LastSeq))
			b = binary.BigEndian.AppendUint64(b, uint64(m.FirstOffset))
			b = binary.BigEndian.AppendUint64(b, uint64(m.LastOffset))
			b = binary.BigEndian.AppendUint64(b, uint64(m.MaxTimestamp))
		}
	}
	s.producersMu.Unlock()
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// LoadSnapshot replaces the state with the one data encodes and returns the
// snapshot's end offset. A snapshot that fails its checksum or any field
// check is an error wrapping ErrCorrupt (ErrUnsupportedVersion for a newer
// format), and the state is left unchanged.
func (s *ProducerState) LoadSnapshot(data []byte) (endOffset int64, err error) {
	producers, endOffset, err := decodeSnapshot(data)
	if err != nil {
		return 0, err
	}
	s.producersMu.Lock()
	s.producers = producers
	s.producersMu.Unlock()
	return endOffset, nil
}

func decodeSnapshot(data []byte) (map[int64]*producerEntry, int64, error) {
	corrupt := func(at int, format string, args ...any) error {
		return fmt.Errorf("%w: producer snapshot at byte %d: %s", ErrCorrupt, at, fmt.Sprintf(format, args...))
	}
	if len(data) < snapshotHeaderSize+snapshotCRCSize {
		return nil, 0, corrupt(0, "%d bytes, shorter than an empty snapshot", len(data))
	}
	if string(data[:4]) != snapshotMagic {
		return nil, 0, corrupt(0, "bad magic %q", data[:4])
	}
	body, sum := data[:len(data)-snapshotCRCSize], binary.BigEndian.Uint32(data[len(data)-snapshotCRCSize:])
	if got := crc32.Checksum(body, castagnoli); got != sum {
		return nil, 0, corrupt(len(body), "crc %08x, computed %08x", sum, got)
	}
	if v := binary.BigEndian.Uint16(data[4:]); v != snapshotVersion {
		return nil, 0, fmt.Errorf("%w: producer snapshot version %d, this build reads %d", ErrUnsupportedVersion, v, snapshotVersion)
	}
	if r := binary.BigEndian.Uint16(data[6:]); r != 0 {
		return nil, 0, corrupt(6, "reserved field %d", r)
	}
	endOffset := int64(binary.BigEndian.Uint64(data[8:]))
	if endOffset < 0 {
		return nil, 0, corrupt(8, "negative end offset %d", endOffset)
	}
	count := int64(binary.BigEndian.Uint32(data[16:]))
	pos := snapshotHeaderSize
	if count > int64(len(body)-pos)/snapshotEntrySize {
		return nil, 0, corrupt(16, "%d producers cannot fit in %d bytes", count, len(body)-pos)
	}
	producers := make(map[int64]*producerEntry, count)
	prev := int64(-1)
	for i := int64(0); i < count; i++ {
		if len(body)-pos < snapshotEntrySize {
			return nil, 0, corrupt(pos, "producer %d of %d truncated", i, count)
		}
		at := pos
		id := int64(binary.BigEndian.Uint64(body[pos:]))
		e := &producerEntry{
			epoch:         int16(binary.BigEndian.Uint16(body[pos+8:])),
			n:             int(body[pos+10]),
			lastTimestamp: int64(binary.BigEndian.Uint64(body[pos+11:])),
			seqStart:      int32(binary.BigEndian.Uint32(body[pos+19:])),
			seqSpan:       int64(binary.BigEndian.Uint64(body[pos+23:])),
		}
		pos += snapshotEntrySize
		switch {
		case id <= prev:
			return nil, 0, corrupt(at, "producer id %d after %d, want ascending ids", id, prev)
		case e.epoch < 0:
			return nil, 0, corrupt(at, "producer %d: negative epoch %d", id, e.epoch)
		case e.n > RetainedBatches:
			return nil, 0, corrupt(at, "producer %d: %d batches, at most %d are retained", id, e.n, RetainedBatches)
		case e.seqStart < 0 || e.seqSpan < 0 || e.seqSpan > seqSpace || (e.seqSpan == 0) != (e.n == 0):
			return nil, 0, corrupt(at, "producer %d: sequence span %d from %d with %d batches", id, e.seqSpan, e.seqStart, e.n)
		case len(body)-pos < e.n*snapshotBatchSize:
			return nil, 0, corrupt(pos, "producer %d: batches truncated", id)
		}
		for j := 0; j < e.n; j++ {
			m := BatchMeta{
				FirstSeq:     int32(binary.BigEndian.Uint32(body[pos:])),
				LastSeq:      int32(binary.BigEndian.Uint32(body[pos+4:])),
				FirstOffset:  int64(binary.BigEndian.Uint64(body[pos+8:])),
				LastOffset:   int64(binary.BigEndian.Uint64(body[pos+16:])),
				MaxTimestamp: int64(binary.BigEndian.Uint64(body[pos+24:])),
			}
			if m.FirstSeq < 0 || m.LastSeq < 0 || m.FirstOffset < 0 || m.LastOffset < m.FirstOffset {
				return nil, 0, corrupt(pos, "producer %d: batch %+v", id, m)
			}
			e.batches[j] = m
			pos += snapshotBatchSize
		}
		producers[id] = e
		prev = id
	}
	if pos != len(body) {
		return nil, 0, corrupt(pos, "%d bytes after the last producer", len(body)-pos)
	}
	return producers, endOffset, nil
}

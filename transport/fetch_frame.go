package transport

import (
	"encoding/binary"
	"io"

	"github.com/foliolog/folio/readpath"
)

// The Fetch response is the one response this package encodes itself
// rather than through kmsg, so that record bytes go from the segment to
// the socket without a copy into user space. The frame, for the versions
// served (4..16), is Kafka's:
//
//	int32  length of what follows
//	int32  correlation id
//	       (v12+) tagged fields: uvarint 0
//	int32  throttle_time_ms
//	int16  error_code         (v7+)
//	int32  session_id         (v7+)
//	array  responses:         int32 count (v12+: uvarint count+1)
//	  string topic            v4..v12: int16 length + bytes (v12: uvarint length+1)
//	  uuid   topic_id         v13+: 16 bytes, instead of the name
//	  array  partitions:
//	    int32 partition_index
//	    int16 error_code
//	    int64 high_watermark
//	    int64 last_stable_offset
//	    int64 log_start_offset    (v5+)
//	    array aborted_transactions, nullable: int32 count or -1 (v12+: uvarint
//	          count+1, 0 for null); each int64 producer_id, int64 first_offset
//	          (v12+: then tagged fields)
//	    int32 preferred_read_replica (v11+)
//	    records, nullable: int32 length (v12+: uvarint length+1), then the
//	          record bytes: whole RecordBatch v2 batches as the segment holds
//	          them, written by the partition's read path (positional sendfile
//	          into a TCP socket, one write from the mapping for mmap, a copy
//	          under TLS)
//	    (v12+) tagged fields: uvarint 0, or for a follower whose tail
//	          diverged 1, then tag 0 (DivergingEpoch): uvarint 0, uvarint
//	          13, int32 epoch, int64 end_offset, uvarint 0
//	  (v12+) tagged fields: uvarint 0
//	(v12+) tagged fields: uvarint 0
//
// Everything but the record bytes is built in memory first (the sizes of
// the record sets are known from their views), so the frame length is
// right before the first byte goes out. The pieces before a record set are
// written through the connection's buffer, which is flushed before the
// record bytes; on Linux the socket is corked for the whole frame
// (TCP_CORK), so the headers and the sendfile'd bytes leave in full
// segments. FuzzFetchFrame checks the frame against kmsg's decoder.

// recordSet is a partition's record bytes in a fetch response: a segment
// view (*readpath.View) or, in tests, a byte slice.
type recordSet interface {
	Len() int
	WriteTo(w io.Writer) (int64, error)
	Release()
}

// fetchPart is one partition of a fetch response.
type fetchPart struct {
	partition      int32
	errCode        int16
	hw, lso, start int64
	aborted        bool // read_committed: an empty aborted-transactions list, not null
	records        recordSet
	// diverging is the DivergingEpoch tagged field (v12+), nil for none.
	diverging *divergingEpoch
	// seen is the offset a parked fetch waits to pass (not encoded): the
	// high watermark for a consumer, the log end for a follower.
	seen int64
}

// fetchTopic is one topic of a fetch response.
type fetchTopic struct {
	name  string
	id    [16]byte
	parts []fetchPart
}

// fetchFrame is the frame minus its record bytes: chunks[i] precedes
// sets[i] (nil where none), and the last chunk closes the frame.
type fetchFrame struct {
	chunks [][]byte
	sets   []recordSet
	size   int64 // the frame length field's value
}

// buildFetchFrame encodes a fetch response of the given version for the
// correlation id.
func buildFetchFrame(version int16, corr int32, errCode int16, sessionID int32, topics []fetchTopic) *fetchFrame {
	flex := version >= 12
	f := &fetchFrame{}
	buf := make([]byte, 4, 256)
	buf = binary.BigEndian.AppendUint32(buf, uint32(corr))
	if flex {
		buf = append(buf, 0)
	}
	buf = binary.BigEndian.AppendUint32(buf, 0) // throttle
	if version >= 7 {
		buf = binary.BigEndian.AppendUint16(buf, uint16(errCode))
		buf = binary.BigEndian.AppendUint32(buf, uint32(sessionID))
	}
	buf = appendArrayLen(buf, flex, len(topics))
	for _, t := range topics {
		switch {
		case version >= 13:
			buf = append(buf, t.id[:]...)
		case flex:
			buf = binary.AppendUvarint(buf, uint64(len(t.name))+1)
			buf = append(buf, t.name...)
		default:
			buf = binary.BigEndian.AppendUint16(buf, uint16(len(t.name)))
			buf = append(buf, t.name...)
		}
		buf = appendArrayLen(buf, flex, len(t.parts))
		for i := range t.parts {
			p := &t.parts[i]
			buf = binary.BigEndian.AppendUint32(buf, uint32(p.partition))
			buf = binary.BigEndian.AppendUint16(buf, uint16(p.errCode))
			buf = binary.BigEndian.AppendUint64(buf, uint64(p.hw))
			buf = binary.BigEndian.AppendUint64(buf, uint64(p.lso))
			if version >= 5 {
				buf = binary.BigEndian.AppendUint64(buf, uint64(p.start))
			}
			switch {
			case !p.aborted && flex:
				buf = append(buf, 0)
			case !p.aborted:
				buf = binary.BigEndian.AppendUint32(buf, 0xffffffff)
			default:
				buf = appendArrayLen(buf, flex, 0)
			}
			if version >= 11 {
				buf = binary.BigEndian.AppendUint32(buf, 0xffffffff) // preferred read replica: none
			}
			n := 0
			if p.records != nil {
				n = p.records.Len()
			}
			if flex {
				buf = binary.AppendUvarint(buf, uint64(n)+1)
			} else {
				buf = binary.BigEndian.AppendUint32(buf, uint32(n))
			}
			if n > 0 {
				f.chunks = append(f.chunks, buf)
				f.sets = append(f.sets, p.records)
				f.size += int64(len(buf)) + int64(n)
				buf = make([]byte, 0, 128)
			}
			if flex {
				buf = appendPartitionTags(buf, p)
			}
		}
		if flex {
			buf = append(buf, 0)
		}
	}
	if flex {
		buf = append(buf, 0)
	}
	f.chunks = append(f.chunks, buf)
	f.sets = append(f.sets, nil)
	f.size += int64(len(buf)) - 4
	binary.BigEndian.PutUint32(f.chunks[0], uint32(f.size))
	return f
}

// appendPartitionTags appends a partition's tagged fields (v12+): none, or
// DivergingEpoch (tag 0: int32 epoch, int64 end offset, its own empty
// tagged fields).
func appendPartitionTags(buf []byte, p *fetchPart) []byte {
	if p.diverging == nil {
		return append(buf, 0)
	}
	buf = append(buf, 1, 0, 4+8+1) // one field, tag 0, its size
	buf = binary.BigEndian.AppendUint32(buf, uint32(p.diverging.epoch))
	buf = binary.BigEndian.AppendUint64(buf, uint64(p.diverging.end))
	return append(buf, 0)
}

func appendArrayLen(buf []byte, flex bool, n int) []byte {
	if flex {
		return binary.AppendUvarint(buf, uint64(n)+1)
	}
	return binary.BigEndian.AppendUint32(buf, uint32(n))
}

// writeFetchFrame writes f: chunks through the buffer, record sets straight
// to the connection (their WriteTo picks sendfile for a TCP socket).
func (w *respWriter) writeFetchFrame(f *fetchFrame) error {
	if views, ok := viewsOf(f.sets); ok {
		// Mapped record sets: the whole response in one vectored write
		// (no cork needed to keep the pieces in full segments).
		if err := w.bw.Flush(); err != nil {
			return err
		}
		if _, handled, err := readpath.WriteFramed(w.raw, f.chunks, views); handled {
			return err
		}
	}
	if w.nc != nil {
		uncork := cork(w.nc)
		defer uncork()
	}
	for i, c := range f.chunks {
		if _, err := w.bw.Write(c); err != nil {
			return err
		}
		if f.sets[i] == nil {
			continue
		}
		if err := w.bw.Flush(); err != nil {
			return err
		}
		if _, err := f.sets[i].WriteTo(w.raw); err != nil {
			return err
		}
	}
	return w.bw.Flush()
}

// viewsOf returns sets as views, false if one is of another kind.
func viewsOf(sets []recordSet) ([]*readpath.View, bool) {
	views := make([]*readpath.View, len(sets))
	for i, s := range sets {
		if s == nil {
			continue
		}
		v, ok := s.(*readpath.View)
		if !ok {
			return nil, false
		}
		views[i] = v
	}
	return views, true
}

// writeFrameTo writes f to any writer, for tests and fuzzing.
func writeFrameTo(dst io.Writer, f *fetchFrame) error {
	for i, c := range f.chunks {
		if _, err := dst.Write(c); err != nil {
			return err
		}
		if f.sets[i] != nil {
			if _, err := f.sets[i].WriteTo(dst); err != nil {
				return err
			}
		}
	}
	return nil
}

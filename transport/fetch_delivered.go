package transport

import (
	"io"

	"github.com/foliolog/folio/record"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// countDelivered reports what a fetch response hands to its client to
// each partition's Delivered (Stats' RecordsOut, the metrics hook's
// Consumed): for a partition with record bytes, the records at or after
// the fetch offset and the bytes of their batches. Followers' fetches are
// replication traffic and are not counted (Kafka counts them apart).
func countDelivered(req *kmsg.FetchRequest, resp *fetchResp, targets []fetchTarget) {
	for _, tg := range targets {
		if tg.p == nil || tg.ti >= len(resp.topics) || tg.pi >= len(resp.topics[tg.ti].parts) {
			continue
		}
		v, ok := resp.topics[tg.ti].parts[tg.pi].records.(batchHeaders)
		if !ok || v.Len() == 0 {
			continue
		}
		n := deliveredRecords(v, req.Topics[tg.ti].Partitions[tg.pi].FetchOffset)
		tg.p.Delivered(n, v.Len())
	}
}

// batchHeaders is a record set whose batch headers can be read without
// its bytes: *readpath.View.
type batchHeaders interface {
	Len() int
	io.ReaderAt
}

// deliveredRecords counts the records at or after from in v's batches,
// reading only their headers (one small ReadAt per batch: no copy of the
// records, and the view stays zero-copy for the send). A batch that holds
// from counts its offsets from there to its end (exact unless compaction
// removed records inside it, the one case a header cannot tell). A header
// that cannot be read or does not parse ends the count: the client gets
// those bytes and reports the damage itself.
func deliveredRecords(v batchHeaders, from int64) int {
	var hdr [record.HeaderSize]byte
	n := 0
	for pos := int64(0); pos < int64(v.Len()); {
		if _, err := v.ReadAt(hdr[:], pos); err != nil {
			break // a short view (io.EOF) or an unreadable one
		}
		size, err := record.CheckHeader(hdr[:])
		if err != nil {
			break
		}
		b := record.Batch(hdr[:])
		switch {
		case b.LastOffset() < from:
		case b.BaseOffset() >= from:
			n += int(b.NumRecords())
		default:
			n += int(min(b.LastOffset()-from+1, int64(b.NumRecords())))
		}
		pos += int64(size)
	}
	return n
}

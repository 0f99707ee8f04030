package transport

import (
	"io"

	"github.com/foliolog/folio/readpath"
	"github.com/foliolog/folio/record"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// countDelivered reports what a fetch response hands to its client to
// each partition's Delivered (Stats' RecordsOut, the metrics hook's
// Consumed): for a partition with record bytes, the records at or after
// the fetch offset and the bytes of their batches. Followers' fetches are
// replication traffic and are not counted (Kafka counts them apart).
//
// The count comes from the view's Framing, which the segment's read
// recorded while it walked the batch headers to frame the view: counting
// reads nothing more (under sendfile a second walk cost a pread per
// batch, about 5% of the send), except one read of the first batch when
// compaction thinned it and the fetch starts inside it.
func countDelivered(req *kmsg.FetchRequest, resp *fetchResp, targets []fetchTarget) {
	for _, tg := range targets {
		if tg.p == nil || tg.ti >= len(resp.topics) || tg.pi >= len(resp.topics[tg.ti].parts) {
			continue
		}
		v, ok := resp.topics[tg.ti].parts[tg.pi].records.(*readpath.View)
		if !ok || v.Len() == 0 {
			continue
		}
		fr, ok := v.Framing()
		if !ok {
			continue // not framed into batches: nothing to count by
		}
		n := deliveredRecords(v, fr, req.Topics[tg.ti].Partitions[tg.pi].FetchOffset)
		tg.p.Delivered(n, v.Len())
	}
}

// batchHeaders is a record set whose batches can be read without its
// bytes: *readpath.View.
type batchHeaders interface {
	Len() int
	io.ReaderAt
}

// deliveredRecords counts the records at or after from in the batches of
// v, which fr frames, from their headers' counts: every batch after the
// first counts whole (a read returns the batch holding from first, so the
// later ones start past it), and so does the first when from is at or
// before its base. A first batch that holds from past its base counts its
// offsets from there to its end when it has a record at every offset; one
// that compaction thinned (fewer records than offsets) is the one case
// the header cannot tell, and only then its records are read and counted
// (one read of that batch, decompressed if it is compressed; the bound
// min(offsets from from, its records) if it cannot be decoded).
// Records delivered = the last offset sent + 1 - from would be wrong
// under compaction for every batch, not only the first.
func deliveredRecords(v batchHeaders, fr readpath.Framing, from int64) int {
	first := int64(max(fr.FirstRecords, 0))
	rest := max(fr.Records-first, 0)
	switch span := fr.FirstLast - fr.FirstBase + 1; {
	case fr.FirstLast < from:
		first = 0
	case fr.FirstBase >= from:
	case first == span:
		first = fr.FirstLast - from + 1
	default:
		if n, ok := recordsFrom(v, from); ok {
			first = int64(n)
		} else {
			first = min(fr.FirstLast-from+1, first)
		}
	}
	return int(first + rest)
}

// recordsFrom decodes the first batch of v and counts its records at or
// after from; ok is false when it cannot be read or decoded.
func recordsFrom(v batchHeaders, from int64) (n int, ok bool) {
	var hdr [record.HeaderSize]byte
	if _, err := v.ReadAt(hdr[:], 0); err != nil {
		return 0, false
	}
	size, err := record.CheckHeader(hdr[:])
	if err != nil || size > v.Len() {
		return 0, false
	}
	b := make([]byte, size)
	if _, err := v.ReadAt(b, 0); err != nil {
		return 0, false
	}
	it := record.Batch(b).Records(nil)
	defer it.Close()
	for it.Next() {
		if it.Record().Offset() >= from {
			n++
		}
	}
	return n, it.Err() == nil
}

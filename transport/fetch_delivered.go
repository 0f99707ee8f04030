package transport

import (
	"github.com/foliolog/folio/readpath"
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
// batch, about 5% of the send).
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
		n := deliveredRecords(fr, req.Topics[tg.ti].Partitions[tg.pi].FetchOffset)
		tg.p.Delivered(n, v.Len())
	}
}

// deliveredRecords counts the records at or after from in the batches a
// view frames, from their headers' counts: every batch after the first
// counts whole (a read returns the batch holding from first, so the later
// ones start past it), and the first counts its offsets from from to its
// end, at most its record count. That is exact unless compaction removed
// records of the first batch at or after from, where it counts those too,
// at most: which of its records remain is written only in the records
// themselves (compressed, for a compressed batch), and the count must not
// read them. Records delivered = the last offset sent + 1 - from
// would be wrong under compaction for every batch, not only the first.
func deliveredRecords(fr readpath.Framing, from int64) int {
	first := int64(max(fr.FirstRecords, 0))
	rest := max(fr.Records-first, 0)
	switch {
	case fr.FirstLast < from:
		first = 0
	case fr.FirstBase < from:
		first = min(fr.FirstLast-from+1, first)
	}
	return int(first + rest)
}

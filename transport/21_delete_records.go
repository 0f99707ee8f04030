package transport

import (
	"context"

	"github.com/foliolog/folio/errs"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DeleteRecords v0..v2: each partition's log start offset moves to the
// offset asked (-1: the high watermark), durably, and the answer is the
// new log start offset (Kafka's low watermark). An offset past the high
// watermark is OFFSET_OUT_OF_RANGE.
func init() { register(kmsg.DeleteRecords.Int16(), 0, 2, handleDeleteRecords) }

func handleDeleteRecords(_ context.Context, rc *reqCtx, kreq kmsg.Request) (response, error) {
	req := kreq.(*kmsg.DeleteRecordsRequest)
	resp := kmsg.NewPtrDeleteRecordsResponse()
	resp.Version = req.Version
	for _, t := range req.Topics {
		rt := kmsg.NewDeleteRecordsResponseTopic()
		rt.Topic = t.Topic
		for _, rp := range t.Partitions {
			out := kmsg.NewDeleteRecordsResponseTopicPartition()
			out.Partition, out.LowWatermark = rp.Partition, -1
			p, err := rc.s.b.Partition(t.Topic, rp.Partition)
			if err == nil {
				offset := rp.Offset
				if offset == -1 {
					offset = p.HighWatermark()
				}
				if err = rc.s.b.DeleteRecordsBefore(t.Topic, rp.Partition, offset); err == nil {
					out.LowWatermark = p.LogStartOffset()
				}
			}
			out.ErrorCode = errs.Code(err)
			rt.Partitions = append(rt.Partitions, out)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return kmsgResp{resp}, nil
}

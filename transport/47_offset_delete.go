package transport

import (
	"context"

	"github.com/foliolog/folio/group"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// OffsetDelete v0 (KIP-496): deletes committed offsets of partitions the
// group is not subscribed to.
func init() { register(kmsg.OffsetDelete.Int16(), 0, 0, handleOffsetDelete) }

func handleOffsetDelete(ctx context.Context, rc *reqCtx, kreq kmsg.Request) (response, error) {
	req := kreq.(*kmsg.OffsetDeleteRequest)
	resp := kmsg.NewPtrOffsetDeleteResponse()
	resp.Version = req.Version
	gr := &group.OffsetDeleteRequest{Group: req.Group}
	for _, t := range req.Topics {
		gt := group.OffsetFetchTopic{Topic: t.Topic}
		for _, p := range t.Partitions {
			gt.Partitions = append(gt.Partitions, p.Partition)
		}
		gr.Topics = append(gr.Topics, gt)
	}
	co, err := rc.s.coordinator()
	var out *group.OffsetDeleteResponse
	if err == nil {
		out, err = co.OffsetDelete(ctx, gr)
	}
	if err != nil {
		resp.ErrorCode = groupCode(err)
		return kmsgResp{resp}, nil
	}
	for _, t := range out.Topics {
		rt := kmsg.NewOffsetDeleteResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetDeleteResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, groupCode(p.Err)
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return kmsgResp{resp}, nil
}

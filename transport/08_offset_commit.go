package transport

import (
	"context"

	"github.com/foliolog/folio/group"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// OffsetCommit v2..v9 (Kafka 4's range; v10 names topics by id). The
// commit is durable (a FlushSync __consumer_offsets record) when the
// response goes out. The retention time of v2..v4 is ignored, as Kafka 4
// ignores it: offsets live while the group does.
func init() { register(kmsg.OffsetCommit.Int16(), 2, 9, handleOffsetCommit) }

func handleOffsetCommit(ctx context.Context, rc *reqCtx, kreq kmsg.Request) (response, error) {
	req := kreq.(*kmsg.OffsetCommitRequest)
	resp := kmsg.NewPtrOffsetCommitResponse()
	resp.Version = req.Version
	gr := &group.OffsetCommitRequest{Group: req.Group, GenerationID: req.Generation, MemberID: req.MemberID, InstanceID: strOr(req.InstanceID)}
	for _, t := range req.Topics {
		gt := group.OffsetCommitTopic{Topic: t.Topic}
		for _, p := range t.Partitions {
			epoch := p.LeaderEpoch
			if req.Version < 6 {
				epoch = -1
			}
			gt.Partitions = append(gt.Partitions, group.OffsetCommitPartition{Partition: p.Partition, Offset: p.Offset, LeaderEpoch: epoch, Metadata: strOr(p.Metadata)})
		}
		gr.Topics = append(gr.Topics, gt)
	}
	co, err := rc.s.coordinator()
	var out *group.OffsetCommitResponse
	if err == nil {
		out, err = co.OffsetCommit(ctx, gr)
	}
	if err != nil {
		// A request-level error answers every partition with it.
		code := groupCode(err)
		for _, t := range req.Topics {
			rt := kmsg.NewOffsetCommitResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetCommitResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, code
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return kmsgResp{resp}, nil
	}
	for _, t := range out.Topics {
		rt := kmsg.NewOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetCommitResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, groupCode(p.Err)
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return kmsgResp{resp}, nil
}

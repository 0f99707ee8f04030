package transport

import (
	"context"

	"github.com/foliolog/folio/errs"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// OffsetForLeaderEpoch v2..v4. With one broker and no elections every
// partition has had one leader epoch, 0, which ends at the log end: a
// client validating its position after a metadata change (KIP-320) asks
// for epoch 0 and learns the log end; an epoch above 0 is unknown
// (-1, -1, as Kafka answers an epoch past the leader's), and a current
// leader epoch above 0 is FENCED_LEADER_EPOCH (no broker told the client
// of one). Replication will answer from its epoch lineage.
func init() { register(kmsg.OffsetForLeaderEpoch.Int16(), 2, 4, handleOffsetForLeaderEpoch) }

func handleOffsetForLeaderEpoch(_ context.Context, rc *reqCtx, kreq kmsg.Request) (response, error) {
	req := kreq.(*kmsg.OffsetForLeaderEpochRequest)
	resp := kmsg.NewPtrOffsetForLeaderEpochResponse()
	resp.Version = req.Version
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetForLeaderEpochResponseTopic()
		rt.Topic = t.Topic
		for _, rp := range t.Partitions {
			out := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			out.Partition, out.LeaderEpoch, out.EndOffset = rp.Partition, -1, -1
			p, err := rc.s.b.Partition(t.Topic, rp.Partition)
			switch {
			case err != nil:
			case rp.CurrentLeaderEpoch > 0:
				err = kerr.FencedLeaderEpoch
			case rp.LeaderEpoch <= 0:
				out.LeaderEpoch, out.EndOffset = 0, p.LogEndOffset()
			}
			out.ErrorCode = errs.Code(err)
			rt.Partitions = append(rt.Partitions, out)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return kmsgResp{resp}, nil
}

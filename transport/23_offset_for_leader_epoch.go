package transport

import (
	"context"

	"github.com/foliolog/folio/errs"
	"github.com/foliolog/folio/log"
	"github.com/foliolog/folio/partition"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// OffsetForLeaderEpoch v2..v4, answered from each partition's leader-epoch
// cache (partition.EndOffsetForEpoch, Kafka's semantics): the largest
// epoch of the partition's lineage not above the one asked for and the
// offset where it ends; the current epoch ends at the log end, also before
// it has records (a Kafka leader puts its epoch in the cache when elected).
// An epoch above the current one is answered (-1, -1). The request's
// current leader epoch (KIP-320; -1 skips the check) below the partition's
// is FENCED_LEADER_EPOCH, above it UNKNOWN_LEADER_EPOCH. A client
// validating its position after a metadata change learns from this where
// its epoch ended, and so whether the log was truncated under it.
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
			if err == nil {
				current := p.LeaderEpoch()
				switch {
				case rp.CurrentLeaderEpoch >= 0 && rp.CurrentLeaderEpoch < current:
					err = kerr.FencedLeaderEpoch
				case rp.CurrentLeaderEpoch > current:
					err = kerr.UnknownLeaderEpoch
				default:
					out.LeaderEpoch, out.EndOffset = leaderEndOffsetForEpoch(p, rp.LeaderEpoch)
				}
			}
			if out.LeaderEpoch == log.UndefinedEpoch {
				out.EndOffset = log.UndefinedOffset
			}
			out.ErrorCode = errs.Code(err)
			rt.Partitions = append(rt.Partitions, out)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return kmsgResp{resp}, nil
}

// leaderEndOffsetForEpoch is the partition's answer to "where does epoch
// end in your lineage": the largest epoch of its cache not above epoch and
// its end offset, the log end for the current epoch (also before it has
// records: a Kafka leader puts its epoch in the cache when elected), and
// (log.UndefinedEpoch, log.UndefinedOffset) when the cache holds none.
func leaderEndOffsetForEpoch(p *partition.Partition, epoch int32) (int32, int64) {
	if current := p.LeaderEpoch(); epoch == current {
		return current, p.LogEndOffset()
	}
	ep, end := p.EndOffsetForEpoch(epoch)
	if ep == log.UndefinedEpoch {
		end = log.UndefinedOffset
	}
	return ep, end
}

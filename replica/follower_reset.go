package replica

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// resetOutOfRange handles partitions whose fetch was OFFSET_OUT_OF_RANGE,
// as Kafka's follower does (AbstractFetcherThread.fetchOffsetAndTruncate):
// it asks the leader for its log start (ListOffsets earliest, with this
// replica's id), and a follower whose log ends below it truncates fully
// and restarts empty at the leader's log start, since the leader no longer
// holds what lies between. Otherwise the partition only reconciles again
// by epoch lineage (OffsetForLeaderEpoch), which is what an out-of-range
// last fetched epoch needs; Kafka's truncation to the leader's log end is
// not done, so that truncation stays at the point found from the lineage.
func (l *fetchLoop) resetOutOfRange(ctx context.Context, broker *kgo.Broker, parts []*followed) error {
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = l.f.o.ID
	byTopic := map[string]int{}
	for _, fp := range parts {
		i, ok := byTopic[fp.tp.Topic]
		if !ok {
			i = len(req.Topics)
			byTopic[fp.tp.Topic] = i
			rt := kmsg.NewListOffsetsRequestTopic()
			rt.Topic = fp.tp.Topic
			req.Topics = append(req.Topics, rt)
		}
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.CurrentLeaderEpoch, rp.Timestamp = fp.tp.Partition, fp.epoch, -2 // earliest
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
	}
	kresp, err := broker.Request(ctx, req)
	if err != nil {
		return fmt.Errorf("replica: ListOffsets to %d: %w", l.leader, err)
	}
	starts := map[TopicPartition]kmsg.ListOffsetsResponseTopicPartition{}
	for _, rt := range kresp.(*kmsg.ListOffsetsResponse).Topics {
		for _, rp := range rt.Partitions {
			starts[TopicPartition{rt.Topic, rp.Partition}] = rp
		}
	}
	for _, fp := range parts {
		rp, ok := starts[fp.tp]
		if !ok {
			fp.stale = true
			continue
		}
		if rp.ErrorCode != 0 {
			l.partitionError(fp, kerr.ErrorForCode(rp.ErrorCode))
			continue
		}
		fp.outOfRange = false
		fp.mu.Lock()
		if end := fp.p.LogEndOffset(); !fp.removed && rp.Offset > end {
			if err := fp.p.TruncateFullyAndStartAt(rp.Offset); err != nil {
				l.f.o.Logger.Error("replica: restarting at the leader's log start", "partition", fp.tp.String(), "start", rp.Offset, "err", err)
				fp.outOfRange, fp.retryAt = true, time.Now().Add(l.f.o.Backoff)
			} else {
				l.f.o.Logger.Info("replica: log end below the leader's log start: restarted there", "partition", fp.tp.String(),
					"from", end, "to", rp.Offset, "leader", l.leader)
			}
		}
		fp.mu.Unlock()
	}
	return nil
}

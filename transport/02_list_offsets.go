package transport

import (
	"context"
	"time"

	"github.com/foliolog/folio/log"
	"github.com/foliolog/folio/partition"
	"github.com/foliolog/folio/readpath"
	"github.com/foliolog/folio/record"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ListOffsets v1..v8. Timestamps: -1 latest (the high watermark, which is
// also the last stable offset), -2 earliest (the log start offset), -3
// the record with the largest timestamp (KIP-734: the first record of the
// batch that carries it), -4 earliest local (the log start offset: all
// of Folio's log is local); a timestamp t >= 0 the first record at or
// after t, with its timestamp, or offset -1 when there is none. Leader
// epochs are 0 on a single broker; a replicated partition (ClusterBackend)
// answers with its leader epoch, on its leader only, checking the
// request's current leader epoch (KIP-320).
func init() { register(kmsg.ListOffsets.Int16(), 1, 8, handleListOffsets) }

func handleListOffsets(_ context.Context, rc *reqCtx, kreq kmsg.Request) (response, error) {
	req := kreq.(*kmsg.ListOffsetsRequest)
	resp := kmsg.NewPtrListOffsetsResponse()
	resp.Version = req.Version
	for _, t := range req.Topics {
		rt := kmsg.NewListOffsetsResponseTopic()
		rt.Topic = t.Topic
		for _, rp := range t.Partitions {
			out := kmsg.NewListOffsetsResponseTopicPartition()
			out.Partition = rp.Partition
			out.Timestamp, out.Offset, out.LeaderEpoch = -1, -1, 0
			p, err := rc.s.b.Partition(t.Topic, rp.Partition)
			if err == nil {
				epoch, replicated, eerr := rc.s.leaderEpochCheck(t.Topic, rp.Partition, rp.CurrentLeaderEpoch)
				switch {
				case replicated:
					out.LeaderEpoch, err = epoch, eerr
				case rp.CurrentLeaderEpoch > 0:
					err = kerr.FencedLeaderEpoch
				}
			}
			if err == nil {
				out.Offset, out.Timestamp, err = listOffset(p, rp.Timestamp)
			}
			out.ErrorCode = partitionCode(err)
			rt.Partitions = append(rt.Partitions, out)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return kmsgResp{resp}, nil
}

// listOffset answers one partition of a ListOffsets.
func listOffset(p *partition.Partition, ts int64) (offset, timestamp int64, err error) {
	switch ts {
	case -1:
		return p.HighWatermark(), -1, nil
	case -2, -4:
		return p.LogStartOffset(), -1, nil
	case -3:
		o, t, ok, err := p.MaxTimestamp()
		if err != nil || !ok {
			return -1, -1, err
		}
		return o, t, nil
	}
	if ts < 0 {
		return -1, -1, kerr.InvalidRequest
	}
	o, ok, err := p.OffsetForTime(time.UnixMilli(ts))
	if err != nil || !ok {
		return -1, -1, err
	}
	return firstAtOrAfter(p, o, ts)
}

// firstAtOrAfter finds, in the batch holding offset, the first record at
// or after offset whose timestamp is at least ts (OffsetForTime answers
// with a batch; Kafka with a record). Past the batch it answers the next
// batch's start, which OffsetForTime guarantees qualifies.
func firstAtOrAfter(p *partition.Partition, offset, ts int64) (int64, int64, error) {
	v, err := p.Read(offset, 1, log.BoundHighWatermark)
	if err != nil {
		return -1, -1, err
	}
	defer v.Release()
	gotOff, gotTs := offset, int64(-1)
	err = readpath.Guard(func() error {
		buf, err := v.Bytes()
		if err != nil {
			return err
		}
		b, _, err := record.Parse(buf)
		if err != nil {
			return err
		}
		it := b.Records(nil)
		defer it.Close()
		for it.Next() {
			r := it.Record()
			if r.Offset() >= offset && r.Timestamp() >= ts {
				gotOff, gotTs = r.Offset(), r.Timestamp()
				return nil
			}
		}
		if err := it.Err(); err != nil {
			return err
		}
		gotOff, gotTs = b.LastOffset()+1, -1
		return nil
	})
	return gotOff, gotTs, err
}

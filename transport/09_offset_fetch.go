package transport

import (
	"context"

	"github.com/foliolog/folio/group"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// OffsetFetch v1..v9 (v8+: several groups in one request; v10 names
// topics by id). A partition without a committed offset answers -1.
// RequireStable needs nothing: with no transactions no offset is pending.
func init() { register(kmsg.OffsetFetch.Int16(), 1, 9, handleOffsetFetch) }

func handleOffsetFetch(ctx context.Context, rc *reqCtx, kreq kmsg.Request) (response, error) {
	req := kreq.(*kmsg.OffsetFetchRequest)
	resp := kmsg.NewPtrOffsetFetchResponse()
	resp.Version = req.Version
	co, cerr := rc.s.coordinator()
	fetch := func(groupID string, topics []group.OffsetFetchTopic) (*group.OffsetFetchResponse, error) {
		if cerr != nil {
			return nil, cerr
		}
		return co.OffsetFetch(ctx, &group.OffsetFetchRequest{Group: groupID, Topics: topics})
	}
	if req.Version < 8 {
		var topics []group.OffsetFetchTopic
		for _, t := range req.Topics {
			topics = append(topics, group.OffsetFetchTopic{Topic: t.Topic, Partitions: t.Partitions})
		}
		out, err := fetch(req.Group, topics)
		if err != nil {
			resp.ErrorCode = groupCode(err)
			if req.Version < 2 {
				// v0 and v1 have no top-level error: each partition says it.
				for _, t := range req.Topics {
					rt := kmsg.NewOffsetFetchResponseTopic()
					rt.Topic = t.Topic
					for _, p := range t.Partitions {
						rp := kmsg.NewOffsetFetchResponseTopicPartition()
						rp.Partition, rp.Offset, rp.ErrorCode = p, -1, resp.ErrorCode
						rt.Partitions = append(rt.Partitions, rp)
					}
					resp.Topics = append(resp.Topics, rt)
				}
			}
			return kmsgResp{resp}, nil
		}
		for _, t := range out.Topics {
			rt := kmsg.NewOffsetFetchResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetFetchResponseTopicPartition()
				rp.Partition, rp.Offset, rp.LeaderEpoch = p.Partition, p.Offset, p.LeaderEpoch
				rp.Metadata, rp.ErrorCode = nullable(p.Metadata), groupCode(p.Err)
				if rp.Metadata == nil {
					empty := ""
					rp.Metadata = &empty
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return kmsgResp{resp}, nil
	}
	for _, g := range req.Groups {
		rg := kmsg.NewOffsetFetchResponseGroup()
		rg.Group = g.Group
		var topics []group.OffsetFetchTopic
		for _, t := range g.Topics {
			topics = append(topics, group.OffsetFetchTopic{Topic: t.Topic, Partitions: t.Partitions})
		}
		out, err := fetch(g.Group, topics)
		if err != nil {
			rg.ErrorCode = groupCode(err)
			resp.Groups = append(resp.Groups, rg)
			continue
		}
		for _, t := range out.Topics {
			rt := kmsg.NewOffsetFetchResponseGroupTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
				rp.Partition, rp.Offset, rp.LeaderEpoch = p.Partition, p.Offset, p.LeaderEpoch
				rp.Metadata, rp.ErrorCode = nullable(p.Metadata), groupCode(p.Err)
				if rp.Metadata == nil {
					empty := ""
					rp.Metadata = &empty
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
			rg.Topics = append(rg.Topics, rt)
		}
		resp.Groups = append(resp.Groups, rg)
	}
	return kmsgResp{resp}, nil
}

package transport

import (
	"context"
	"errors"

	"github.com/foliolog/folio/errs"
	"github.com/foliolog/folio/topic"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DeleteTopics v1..v6 (v6: by name or id). Internal topics are refused.
func init() { register(kmsg.DeleteTopics.Int16(), 1, 6, handleDeleteTopics) }

func handleDeleteTopics(_ context.Context, rc *reqCtx, kreq kmsg.Request) (response, error) {
	req := kreq.(*kmsg.DeleteTopicsRequest)
	resp := kmsg.NewPtrDeleteTopicsResponse()
	resp.Version = req.Version
	topics := req.Topics
	for _, n := range req.TopicNames {
		t := kmsg.NewDeleteTopicsRequestTopic()
		t.Topic = &n
		topics = append(topics, t)
	}
	for _, t := range topics {
		rt := kmsg.NewDeleteTopicsResponseTopic()
		rt.Topic, rt.TopicID = t.Topic, t.TopicID
		var err error
		name := strOr(t.Topic)
		if name == "" {
			var in topic.Info
			if in, err = rc.s.b.TopicInfoByID(topic.ID(t.TopicID)); err == nil {
				name = in.Name
				rt.Topic = &in.Name
			} else if errors.Is(err, topic.ErrNotFound) {
				err = kerr.UnknownTopicID
			}
		}
		if err == nil {
			if in, ierr := rc.s.b.TopicInfo(name); ierr == nil {
				rt.TopicID = in.ID
			}
			err = rc.s.b.DeleteTopic(name)
		}
		if err != nil {
			rt.ErrorCode = errs.Code(err)
			msg := err.Error()
			rt.ErrorMessage = &msg
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return kmsgResp{resp}, nil
}

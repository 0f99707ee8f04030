package transport

import (
	"context"
	"fmt"

	"github.com/foliolog/folio/errs"
	"github.com/foliolog/folio/topic"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// CreatePartitions v0..v3: grows a topic to Count partitions (never
// shrinks). ValidateOnly checks and changes nothing.
func init() { register(kmsg.CreatePartitions.Int16(), 0, 3, handleCreatePartitions) }

func handleCreatePartitions(_ context.Context, rc *reqCtx, kreq kmsg.Request) (response, error) {
	req := kreq.(*kmsg.CreatePartitionsRequest)
	resp := kmsg.NewPtrCreatePartitionsResponse()
	resp.Version = req.Version
	for _, t := range req.Topics {
		rt := kmsg.NewCreatePartitionsResponseTopic()
		rt.Topic = t.Topic
		in, err := rc.s.b.TopicInfo(t.Topic)
		switch {
		case err != nil:
		case t.Count <= in.Config.Partitions:
			err = fmt.Errorf("%w: topic %q has %d partitions; %d would not add any", topic.ErrInvalidPartitions, t.Topic, in.Config.Partitions, t.Count)
		case !req.ValidateOnly:
			err = rc.s.b.SetPartitionCount(t.Topic, t.Count)
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

package transport

import (
	"context"
	"slices"
	"strconv"

	"github.com/foliolog/folio/errs"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DescribeConfigs v1..v4: a topic's configuration in Kafka's names and
// units with sources (DYNAMIC_TOPIC_CONFIG for a value set on the topic,
// DEFAULT_CONFIG for a default), and the broker's (resource type 4, named
// by its node id) for the server options Kafka clients look at.
func init() { register(kmsg.DescribeConfigs.Int16(), 1, 4, handleDescribeConfigs) }

func handleDescribeConfigs(_ context.Context, rc *reqCtx, kreq kmsg.Request) (response, error) {
	req := kreq.(*kmsg.DescribeConfigsRequest)
	resp := kmsg.NewPtrDescribeConfigsResponse()
	resp.Version = req.Version
	for _, r := range req.Resources {
		rr := kmsg.NewDescribeConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = r.ResourceType, r.ResourceName
		var cfgs []kafkaConfig
		switch r.ResourceType {
		case kmsg.ConfigResourceTypeTopic:
			in, err := rc.s.b.TopicInfo(r.ResourceName)
			if err != nil {
				rr.ErrorCode = errs.Code(err)
				msg := err.Error()
				rr.ErrorMessage = &msg
				break
			}
			cfgs = topicConfigs(in.Config)
		case kmsg.ConfigResourceTypeBroker:
			if r.ResourceName != "" && r.ResourceName != strconv.Itoa(int(rc.s.opts.NodeID)) {
				rr.ErrorCode = kerr.InvalidRequest.Code
				break
			}
			cfgs = rc.s.brokerConfigs()
		default:
			rr.ErrorCode = kerr.InvalidRequest.Code
		}
		for _, c := range cfgs {
			if r.ConfigNames != nil && !slices.Contains(r.ConfigNames, c.name) {
				continue
			}
			ce := kmsg.NewDescribeConfigsResponseResourceConfig()
			v := c.value
			ce.Name, ce.Value, ce.ReadOnly = c.name, &v, c.readOnly
			ce.Source = kmsg.ConfigSource(c.source)
			ce.IsDefault = c.source == sourceDefault
			ce.ConfigType = kmsg.ConfigTypeString
			rr.Configs = append(rr.Configs, ce)
		}
		resp.Resources = append(resp.Resources, rr)
	}
	return kmsgResp{resp}, nil
}

package transport

import (
	"context"
	"fmt"

	"github.com/foliolog/folio/errs"
	"github.com/foliolog/folio/partition"
	"github.com/foliolog/folio/topic"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// CreateTopics v2..v7. Partitions -1 take Options.AutoCreatePartitions; a
// replication factor other than -1 or 1 is INVALID_REPLICATION_FACTOR (one
// broker); a manual replica assignment gives the partition count. Configs
// use Kafka's names and units (kafka_config.go). ValidateOnly checks and
// creates nothing. v5+ answers with the topic's configuration.
func init() { register(kmsg.CreateTopics.Int16(), 2, 7, handleCreateTopics) }

func handleCreateTopics(_ context.Context, rc *reqCtx, kreq kmsg.Request) (response, error) {
	req := kreq.(*kmsg.CreateTopicsRequest)
	resp := kmsg.NewPtrCreateTopicsResponse()
	resp.Version = req.Version
	for _, t := range req.Topics {
		rt := kmsg.NewCreateTopicsResponseTopic()
		rt.Topic = t.Topic
		in, err := rc.s.createTopic(t, req.ValidateOnly)
		if err != nil {
			rt.ErrorCode = errs.Code(err)
			msg := err.Error()
			rt.ErrorMessage = &msg
			rt.NumPartitions, rt.ReplicationFactor = -1, -1
			resp.Topics = append(resp.Topics, rt)
			continue
		}
		rt.TopicID = in.ID
		rt.NumPartitions, rt.ReplicationFactor = in.Config.Partitions, 1
		for _, c := range topicConfigs(in.Config) {
			ce := kmsg.NewCreateTopicsResponseTopicConfig()
			v := c.value
			ce.Name, ce.Value, ce.ReadOnly, ce.Source = c.name, &v, c.readOnly, c.source
			rt.Configs = append(rt.Configs, ce)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return kmsgResp{resp}, nil
}

func (s *Server) createTopic(t kmsg.CreateTopicsRequestTopic, validateOnly bool) (topic.Info, error) {
	if t.ReplicationFactor != -1 && t.ReplicationFactor != 1 {
		return topic.Info{}, fmt.Errorf("%w: replication factor %d: this is one broker", kerr.InvalidReplicationFactor, t.ReplicationFactor)
	}
	cfg := topic.Config{Partitions: t.NumPartitions}
	switch {
	case len(t.ReplicaAssignment) > 0 && t.NumPartitions != -1:
		return topic.Info{}, fmt.Errorf("%w: both a partition count and a replica assignment", kerr.InvalidRequest)
	case len(t.ReplicaAssignment) > 0:
		cfg.Partitions = int32(len(t.ReplicaAssignment))
	case t.NumPartitions == -1:
		cfg.Partitions = s.opts.AutoCreatePartitions
	case t.NumPartitions <= 0:
		return topic.Info{}, fmt.Errorf("%w: %d partitions", topic.ErrInvalidPartitions, t.NumPartitions)
	}
	for _, c := range t.Configs {
		if c.Value == nil {
			continue
		}
		if err := setKafkaConfig(&cfg, c.Name, *c.Value); err != nil {
			return topic.Info{}, err
		}
	}
	if validateOnly {
		if err := topic.ValidateName(t.Topic); err != nil {
			return topic.Info{}, err
		}
		if _, err := s.b.TopicInfo(t.Topic); err == nil {
			return topic.Info{}, fmt.Errorf("%w: %q", topic.ErrExists, t.Topic)
		}
		if err := partition.ValidateConfig(cfg); err != nil {
			return topic.Info{}, err
		}
		return topic.Info{Name: t.Topic, Config: cfg.WithDefaults()}, nil
	}
	return s.b.CreateTopicInfo(t.Topic, cfg)
}

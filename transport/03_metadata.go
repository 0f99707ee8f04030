package transport

import (
	"context"
	"errors"

	"github.com/foliolog/folio/errs"
	"github.com/foliolog/folio/topic"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Metadata v0..v12. A single broker (this server) leads every partition,
// with itself as the only replica and in-sync replica, at leader epoch 0.
// A broker of a cluster (ClusterBackend) lists every broker of its address
// book, and for a replicated partition the real leader (-1 for none,
// LEADER_NOT_AVAILABLE), leader epoch, replicas and ISR, so that a client
// sends produce and fetch to the leader. A topic
// asked for by name that does not exist is created when the request
// allows it (v4+, always before) and Options.DisableAutoCreate is false,
// as Kafka's auto.create.topics.enable.
func init() { register(kmsg.Metadata.Int16(), 0, 12, handleMetadata) }

func handleMetadata(_ context.Context, rc *reqCtx, kreq kmsg.Request) (response, error) {
	req := kreq.(*kmsg.MetadataRequest)
	s := rc.s
	resp := kmsg.NewPtrMetadataResponse()
	resp.Version = req.Version
	cb, brokers, clustered := s.cluster()
	if clustered {
		for _, b := range brokers {
			br := kmsg.NewMetadataResponseBroker()
			br.NodeID, br.Host, br.Port = b.ID, b.Host, b.Port
			resp.Brokers = append(resp.Brokers, br)
		}
	} else {
		br := kmsg.NewMetadataResponseBroker()
		br.NodeID, br.Host, br.Port = s.opts.NodeID, rc.c.adv.host, rc.c.adv.port
		resp.Brokers = append(resp.Brokers, br)
	}
	cid := s.opts.ClusterID
	resp.ClusterID = &cid
	resp.ControllerID = s.opts.NodeID
	if clustered {
		resp.ControllerID = cb.ControllerID()
	}

	all := req.Topics == nil || (req.Version == 0 && len(req.Topics) == 0)
	if all {
		infos, err := s.b.TopicInfos()
		if err != nil {
			return nil, err
		}
		for _, in := range infos {
			resp.Topics = append(resp.Topics, s.metadataTopic(in))
		}
		return kmsgResp{resp}, nil
	}
	autoCreate := req.Version < 4 || req.AllowAutoTopicCreation
	for _, t := range req.Topics {
		var (
			in  topic.Info
			err error
		)
		switch {
		case t.Topic != nil && *t.Topic != "":
			in, err = s.topicInfo(*t.Topic, autoCreate)
		default:
			in, err = s.b.TopicInfoByID(topic.ID(t.TopicID))
			if errors.Is(err, topic.ErrNotFound) {
				err = kerr.UnknownTopicID
			}
		}
		if err != nil {
			mt := kmsg.NewMetadataResponseTopic()
			mt.Topic, mt.TopicID = t.Topic, t.TopicID
			mt.ErrorCode = errs.Code(err)
			resp.Topics = append(resp.Topics, mt)
			continue
		}
		resp.Topics = append(resp.Topics, s.metadataTopic(in))
	}
	return kmsgResp{resp}, nil
}

// topicInfo returns a topic, creating it when create and the server
// auto-creates topics.
func (s *Server) topicInfo(name string, create bool) (topic.Info, error) {
	in, err := s.b.TopicInfo(name)
	if err == nil || !create || s.opts.DisableAutoCreate || !errors.Is(err, topic.ErrNotFound) {
		return in, err
	}
	in, err = s.b.CreateTopicInfo(name, topic.Config{Partitions: s.opts.AutoCreatePartitions})
	if errors.Is(err, topic.ErrExists) {
		return s.b.TopicInfo(name) // created meanwhile by another request
	}
	if err == nil {
		s.opts.Logger.Info("transport: auto-created topic", "topic", name, "partitions", in.Config.Partitions)
	}
	return in, err
}

func (s *Server) metadataTopic(in topic.Info) kmsg.MetadataResponseTopic {
	mt := kmsg.NewMetadataResponseTopic()
	name := in.Name
	mt.Topic = &name
	mt.TopicID = in.ID
	mt.IsInternal = in.Internal
	cb, _, clustered := s.cluster()
	for p := range in.Config.Partitions {
		mp := kmsg.NewMetadataResponseTopicPartition()
		mp.Partition = p
		if r, ok := cb, clustered; ok {
			if pr, ok := r.PartitionReplicas(name, p); ok {
				mp.Leader, mp.LeaderEpoch = pr.Leader, pr.LeaderEpoch
				mp.Replicas, mp.ISR = pr.Replicas, pr.ISR
				if pr.Leader < 0 {
					mp.ErrorCode = kerr.LeaderNotAvailable.Code
				}
				mt.Partitions = append(mt.Partitions, mp)
				continue
			}
		}
		mp.Leader = s.opts.NodeID
		mp.LeaderEpoch = 0
		mp.Replicas = []int32{s.opts.NodeID}
		mp.ISR = []int32{s.opts.NodeID}
		mt.Partitions = append(mt.Partitions, mp)
	}
	return mt
}

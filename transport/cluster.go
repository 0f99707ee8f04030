package transport

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
)

// ClusterBackend is what a Backend that is one broker of a replicating
// cluster adds (folio.Broker opened with ClusterOptions). The server
// checks for it by type assertion, so a single-broker Backend stays as it
// is: it leads every partition, alone in its ISR, at leader epoch 0.
type ClusterBackend interface {
	Backend
	// ClusterBrokers lists every broker of the cluster, this one
	// included, by id; ok is false when the Backend is a single broker
	// (the server then answers as one).
	ClusterBrokers() (brokers []ClusterBroker, ok bool)
	// PartitionReplicas returns a replicated partition's leader (-1 for
	// none), leader epoch, replicas and ISR; ok is false for a partition
	// this broker alone serves (an unreplicated topic).
	PartitionReplicas(topic string, partition int32) (r PartitionReplicas, ok bool)
	// CoordinatorID returns the broker that coordinates consumer group
	// groupID: the leader of its partition of __consumer_offsets, -1 while
	// it has none.
	CoordinatorID(groupID string) int32
	// ControllerID returns the broker Metadata and DescribeCluster name as
	// the controller.
	ControllerID() int32
}

// ClusterBroker is one broker of the cluster as Metadata lists it.
type ClusterBroker struct {
	ID   int32
	Host string
	Port int32
}

// PartitionReplicas is a partition's replication state as Metadata
// answers it.
type PartitionReplicas struct {
	Leader      int32
	LeaderEpoch int32
	Replicas    []int32
	ISR         []int32
}

// cluster returns the Backend's cluster view, and false for a single
// broker.
func (s *Server) cluster() (ClusterBackend, []ClusterBroker, bool) {
	cb, ok := s.b.(ClusterBackend)
	if !ok {
		return nil, nil, false
	}
	brokers, ok := cb.ClusterBrokers()
	if !ok {
		return nil, nil, false
	}
	return cb, brokers, true
}

// clusterBroker returns broker id's entry.
func clusterBroker(brokers []ClusterBroker, id int32) (ClusterBroker, bool) {
	for _, b := range brokers {
		if b.ID == id {
			return b, true
		}
	}
	return ClusterBroker{}, false
}

// consumerFetchable refuses a consumer's fetch of a replicated partition
// on a broker that does not lead it with NOT_LEADER_OR_FOLLOWER, as
// Kafka does without follower fetching (KIP-392): the client refreshes its
// metadata and fetches from the leader.
func (s *Server) consumerFetchable(topicName string, p int32) error {
	cb, _, ok := s.cluster()
	if !ok {
		return nil
	}
	if pr, ok := cb.PartitionReplicas(topicName, p); ok && pr.Leader != s.opts.NodeID {
		return fmt.Errorf("%w: %s-%d is led by broker %d, not %d", kerr.NotLeaderForPartition, topicName, p, pr.Leader, s.opts.NodeID)
	}
	return nil
}

// leaderEpochCheck answers a client's request on a replicated partition
// carrying its current leader epoch (ListOffsets, KIP-320), as a Kafka
// leader does: NOT_LEADER_OR_FOLLOWER on a broker that does not lead it,
// FENCED_LEADER_EPOCH for an older epoch, UNKNOWN_LEADER_EPOCH for a newer
// one (-1 skips the check). It returns the leader epoch to answer with,
// and ok false for a partition this broker alone serves.
func (s *Server) leaderEpochCheck(topicName string, p, current int32) (epoch int32, ok bool, err error) {
	cb, _, clustered := s.cluster()
	if !clustered {
		return 0, false, nil
	}
	pr, ok := cb.PartitionReplicas(topicName, p)
	switch {
	case !ok:
		return 0, false, nil
	case pr.Leader != s.opts.NodeID:
		return pr.LeaderEpoch, true, fmt.Errorf("%w: %s-%d is led by broker %d", kerr.NotLeaderForPartition, topicName, p, pr.Leader)
	case current >= 0 && current < pr.LeaderEpoch:
		return pr.LeaderEpoch, true, fmt.Errorf("%w: %s-%d: epoch %d, the leader's is %d", kerr.FencedLeaderEpoch, topicName, p, current, pr.LeaderEpoch)
	case current > pr.LeaderEpoch:
		return pr.LeaderEpoch, true, fmt.Errorf("%w: %s-%d: epoch %d, the leader's is %d", kerr.UnknownLeaderEpoch, topicName, p, current, pr.LeaderEpoch)
	}
	return pr.LeaderEpoch, true, nil
}

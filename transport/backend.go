package transport

import (
	"context"

	"github.com/foliolog/folio/group"
	"github.com/foliolog/folio/partition"
	"github.com/foliolog/folio/topic"
)

// Backend is what the server needs of the data directory it serves.
// *folio.Broker satisfies it; the server never imports the root package
// (the way package group declares its Store).
//
// Errors are answered to clients with the Kafka code errs.Kafka finds in
// them, so they must carry the sentinels of the lower packages
// (topic.ErrNotFound for an unknown topic, partition's append errors, ...).
type Backend interface {
	// TopicInfos lists every topic, internal ones included, with
	// Config.Partitions its current partition count.
	TopicInfos() ([]topic.Info, error)
	// TopicInfo returns one topic, or an error wrapping topic.ErrNotFound.
	TopicInfo(name string) (topic.Info, error)
	// TopicInfoByID returns the topic of an id, or an error wrapping
	// topic.ErrNotFound.
	TopicInfoByID(id topic.ID) (topic.Info, error)
	// CreateTopicInfo creates a topic (Kafka's rules on names; zero
	// Config fields take the defaults) and returns it once it is durable.
	CreateTopicInfo(name string, cfg topic.Config) (topic.Info, error)
	// AlterTopicInfo changes a topic's configuration while its partitions
	// are open (IncrementalAlterConfigs, AlterConfigs): change edits a copy
	// of the current one, which the open partitions apply live. An invalid
	// configuration is refused with an error wrapping
	// topic.ErrInvalidConfig; with validateOnly nothing is written. It
	// returns the topic with the new configuration once it is durable.
	AlterTopicInfo(name string, validateOnly bool, change func(*topic.Config) error) (topic.Info, error)
	// DeleteTopic deletes a topic and its records (DeleteTopics);
	// internal topics are refused.
	DeleteTopic(name string) error
	// SetPartitionCount grows a topic to total partitions
	// (CreatePartitions); partitions are never removed.
	SetPartitionCount(name string, total int32) error
	// Partition returns a partition to append to and read from. The
	// server never closes it.
	Partition(topicName string, p int32) (*partition.Partition, error)
	// DeleteRecordsBefore moves a partition's log start offset (Kafka's
	// DeleteRecords), durably.
	DeleteRecordsBefore(topicName string, p int32, offset int64) error
	// AllocateProducerID hands out a producer id never handed out
	// before in this data directory (InitProducerId).
	AllocateProducerID() (int64, error)
	// GroupCoordinator returns the consumer-group coordinator.
	GroupCoordinator() (*group.Coordinator, error)
}

// ReplicaBackend is what a Backend that replicates its partitions adds so
// that the server can answer followers' fetches (a Fetch with a replica id
// >= 0). The server finds it by a type assertion on the Backend: one
// without it serves a follower's fetch as a consumer's, as a single broker
// does.
type ReplicaBackend interface {
	// PartitionLeader returns this broker's leadership of a partition, or,
	// when it does not lead it (it follows, or knows no leader), an error
	// matching NOT_LEADER_OR_FOLLOWER's code (replica.ErrNotLeader does),
	// and then a nil PartitionLeader, not a typed nil.
	PartitionLeader(topicName string, p int32) (PartitionLeader, error)
}

// PartitionLeader is one partition's leader in one leader epoch as a
// follower's fetch needs it. *replica.Leader satisfies it.
type PartitionLeader interface {
	// Epoch returns the leader epoch it leads.
	Epoch() int32
	// CheckEpoch answers a follower's current leader epoch: nil if it is
	// the leader's, else an error matching FENCED_LEADER_EPOCH (older),
	// UNKNOWN_LEADER_EPOCH (newer) or NOT_LEADER_OR_FOLLOWER (this leader
	// was fenced).
	CheckEpoch(epoch int32) error
	// FollowerFetched records that follower replica (under incarnation,
	// its broker epoch, -1 when the fetch carries none) fetched at offset
	// in leaderEpoch: it holds everything below offset in the leader's
	// lineage. It returns the high watermark (-1 while none is
	// established in this epoch) or an error with the Kafka code to
	// answer.
	FollowerFetched(ctx context.Context, replica int32, incarnation int64, leaderEpoch int32, offset int64) (int64, error)
}

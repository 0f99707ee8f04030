package transport

import (
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

package folio

import (
	"fmt"
	"sort"

	"github.com/foliolog/folio/topic"
)

// The methods in this file are what a Kafka endpoint (package transport)
// needs of the Broker, in the lower packages' types: transport.Backend.

// TopicInfos lists every topic, internal ones included, by name, as the
// topic package describes it, with Config.Partitions the partition count
// the Broker serves now.
func (b *Broker) TopicInfos() ([]topic.Info, error) {
	if b.closed.Load() {
		return nil, ErrClosed
	}
	if b.cluster != nil {
		for _, rec := range b.cluster.meta.Topics() {
			b.cluster.ensureTopic(rec.Name)
		}
	}
	m := *b.topics.Load()
	out := make([]topic.Info, 0, len(m))
	for _, ts := range m {
		out = append(out, ts.topicInfo())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// TopicInfo returns one topic as the topic package describes it, or an
// error wrapping ErrUnknownTopic.
func (b *Broker) TopicInfo(name string) (topic.Info, error) {
	if b.closed.Load() {
		return topic.Info{}, ErrClosed
	}
	ts, ok := (*b.topics.Load())[name]
	if !ok && b.cluster != nil && b.cluster.ensureTopic(name) {
		ts, ok = (*b.topics.Load())[name]
	}
	if !ok {
		return topic.Info{}, fmt.Errorf("%w: %q", ErrUnknownTopic, name)
	}
	return ts.topicInfo(), nil
}

// TopicInfoByID returns the topic with an id (Kafka's topic ids), or an
// error wrapping ErrUnknownTopic.
func (b *Broker) TopicInfoByID(id topic.ID) (topic.Info, error) {
	if b.closed.Load() {
		return topic.Info{}, ErrClosed
	}
	for _, ts := range *b.topics.Load() {
		if ts.info.ID == id {
			return ts.topicInfo(), nil
		}
	}
	if b.cluster != nil {
		for _, rec := range b.cluster.meta.Topics() {
			if rec.ID == id && b.cluster.ensureTopic(rec.Name) {
				return b.TopicInfo(rec.Name)
			}
		}
	}
	return topic.Info{}, fmt.Errorf("%w: id %s", ErrUnknownTopic, id)
}

// CreateTopicInfo is CreateTopic answering in the topic package's terms.
func (b *Broker) CreateTopicInfo(name string, cfg topic.Config) (topic.Info, error) {
	if _, err := b.CreateTopic(name, cfg); err != nil {
		return topic.Info{}, err
	}
	return b.TopicInfo(name)
}

// AllocateProducerID hands out a producer id never handed out before in
// this data directory (ids come from blocks whose end is in the catalog),
// for a Kafka client's InitProducerId.
func (b *Broker) AllocateProducerID() (int64, error) {
	if err := b.writable(); err != nil {
		return 0, err
	}
	id, err := b.catalog.AllocateProducerID()
	if err != nil {
		return 0, fmt.Errorf("folio: allocating a producer id: %w", err)
	}
	if b.cluster != nil {
		// Unique in the cluster: the brokers' own counters overlap.
		return b.cluster.meta.AllocateProducerID(id), nil
	}
	return id, nil
}

func (ts *topicState) topicInfo() topic.Info {
	in := ts.info
	in.Config.Partitions = int32(len(ts.parts))
	return in
}

// SetPartitionCount is AddPartitions without the description, for a
// Kafka client's CreatePartitions.
func (b *Broker) SetPartitionCount(name string, total int32) error {
	_, err := b.AddPartitions(name, total)
	return err
}

// AlterTopicInfo is AlterTopicConfig answering in the topic package's
// terms, for a Kafka client's IncrementalAlterConfigs and AlterConfigs.
func (b *Broker) AlterTopicInfo(name string, validateOnly bool, change func(*topic.Config) error) (topic.Info, error) {
	in, err := b.AlterTopicConfig(name, validateOnly, change)
	if err != nil {
		return topic.Info{}, err
	}
	out, err := b.TopicInfo(name)
	if err != nil {
		return topic.Info{}, err
	}
	out.Config = in.Config
	out.Config.Partitions = int32(len(in.Partitions))
	return out, nil
}

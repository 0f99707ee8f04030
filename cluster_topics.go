package folio

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/foliolog/folio/partition"
	"github.com/foliolog/folio/replica"
	"github.com/foliolog/folio/topic"
)

// Changes to a replicated topic go to the cluster's metadata first, the
// one place that says what the topic is; every broker hosting a replica
// (this one included) then applies them to its data directory when its
// manager sees the change (reconcileTopics), and the call returns once
// this broker's manager has. A broker that was down catches up at its
// next look at the metadata.

// applyTimeout bounds how long a change to a replicated topic waits for
// this broker's manager to apply it after the metadata took it.
const applyTimeout = 30 * time.Second

// assign returns the rf replicas of each of partitions [from, to) of a
// topic: the p-th partition's preferred leader is the p-th broker by id,
// round robin, followed by the next rf-1 brokers.
func (c *cluster) assign(from, to int32, rf int) [][]int32 {
	ids := make([]int32, 0, len(c.opts.Brokers))
	for id := range c.opts.Brokers {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	assignment := make([][]int32, 0, to-from)
	for p := from; p < to; p++ {
		rs := make([]int32, 0, rf)
		for r := range rf {
			rs = append(rs, ids[(int(p)+r)%len(ids)])
		}
		assignment = append(assignment, rs)
	}
	return assignment
}

// applied waits until this broker's manager has applied the metadata as
// it is now.
func (c *cluster) applied(what string) error {
	v, _ := c.meta.Changes()
	ctx, cancel := context.WithTimeout(c.ctx, applyTimeout)
	defer cancel()
	if err := c.waitSynced(ctx, v); err != nil {
		return fmt.Errorf("folio: %s is in the cluster's metadata, but this broker has not applied it yet: %w", what, err)
	}
	return nil
}

// deleteTopic deletes a replicated topic from the metadata; each broker
// drops its replica (this one before it returns).
func (c *cluster) deleteTopic(name string) error {
	if err := c.b.writable(); err != nil {
		return err
	}
	if !c.meta.DeleteTopic(name) {
		return fmt.Errorf("%w: %q", ErrUnknownTopic, name)
	}
	return c.applied(fmt.Sprintf("deleting topic %q", name))
}

// addPartitions grows a replicated topic in the metadata to total
// partitions, assigned as at creation; each broker hosting one opens its
// new partitions (this one before it returns).
func (c *cluster) addPartitions(name string, total int32) (TopicInfo, error) {
	if err := c.b.writable(); err != nil {
		return TopicInfo{}, err
	}
	rec, ok := c.meta.Topic(name)
	if !ok {
		return TopicInfo{}, fmt.Errorf("%w: %q", ErrUnknownTopic, name)
	}
	cur := rec.Config.Partitions
	if total <= cur || total > topic.MaxPartitions {
		return TopicInfo{}, fmt.Errorf("folio: adding partitions to %q: %w: it has %d; asked for %d, want more, at most %d",
			name, topic.ErrInvalidPartitions, cur, total, topic.MaxPartitions)
	}
	// The new partitions get as many replicas as the topic's first.
	rf := c.opts.ReplicationFactor
	if st, err := c.meta.Partition(c.ctx, replica.TopicPartition{Topic: name, Partition: 0}); err == nil {
		rf = len(st.Replicas)
	}
	rec, err := c.meta.AddPartitions(name, c.assign(cur, total, rf))
	if err != nil {
		return TopicInfo{}, fmt.Errorf("folio: adding partitions to %q in the cluster: %w", name, err)
	}
	if err := c.applied(fmt.Sprintf("adding partitions to %q", name)); err != nil {
		return TopicInfo{}, err
	}
	return c.describe(rec)
}

// alterTopicConfig changes a replicated topic's configuration in the
// metadata; each broker hosting one applies it (this one before it
// returns). change is checked as the Broker checks a local one, against
// this broker's partitions too when it hosts the topic.
func (c *cluster) alterTopicConfig(name string, change func(*TopicConfig) error) (TopicInfo, error) {
	if err := c.b.writable(); err != nil {
		return TopicInfo{}, err
	}
	rec, ok := c.meta.Topic(name)
	if !ok {
		return TopicInfo{}, fmt.Errorf("%w: %q", ErrUnknownTopic, name)
	}
	cfg := rec.Config.WithDefaults()
	if err := change(&cfg); err != nil {
		return TopicInfo{}, fmt.Errorf("folio: topic %q: %w", name, err)
	}
	if cfg.Partitions != rec.Config.Partitions {
		return TopicInfo{}, fmt.Errorf("folio: topic %q: %w: the partition count is changed by AddPartitions", name, ErrInvalidConfig)
	}
	if err := partition.ValidateConfig(cfg); err != nil {
		return TopicInfo{}, fmt.Errorf("folio: topic %q: %w: %w", name, ErrInvalidConfig, err)
	}
	if err := cfg.Validate(); err != nil {
		return TopicInfo{}, fmt.Errorf("folio: topic %q: %w", name, err)
	}
	if c.local(rec) != nil {
		// What this broker's partitions would refuse, refused before
		// any broker takes it.
		if _, err := c.b.alterLocalTopicConfig(name, true, func(tc *TopicConfig) error { *tc = cfg; return nil }); err != nil {
			return TopicInfo{}, err
		}
	}
	if !c.meta.AlterTopicConfig(name, cfg.WithDefaults()) {
		return TopicInfo{}, fmt.Errorf("%w: %q", ErrUnknownTopic, name)
	}
	if err := c.applied(fmt.Sprintf("altering topic %q", name)); err != nil {
		return TopicInfo{}, err
	}
	rec, _ = c.meta.Topic(name)
	return c.describe(rec)
}

// describe returns the replicated topic rec: this broker's replica of it,
// or, on a broker hosting none, what the metadata says.
func (c *cluster) describe(rec replica.TopicRecord) (TopicInfo, error) {
	if c.local(rec) != nil {
		return c.b.DescribeTopic(rec.Name)
	}
	return TopicInfo{Name: rec.Name, ID: rec.ID, Config: rec.Config}, nil
}

// local returns this broker's replica of the replicated topic rec, nil
// if it has none (or a topic of that name that is not rec's replica).
func (c *cluster) local(rec replica.TopicRecord) *topicState {
	ts, ok := (*c.b.topics.Load())[rec.Name]
	if !ok || ts.info.ID != rec.ID {
		return nil
	}
	return ts
}

// reconcileTopics brings this broker's replicas of the replicated topics
// to what the metadata holds: the replica of a topic the metadata no
// longer holds (deleted, or deleted and created again under another id)
// is dropped; a replica with fewer partitions than the metadata's count
// opens the new ones; one whose configuration differs takes the
// metadata's. The manager calls it (sync), before it gives partitions
// their roles.
func (c *cluster) reconcileTopics() {
	// By the id the replicas were opened for, not the Broker's topic of
	// the name: one being created (its partitions open, with their
	// replParts, before the topic is installed) is not a deleted one.
	for name, id := range c.replicaTopics() {
		if rec, ok := c.meta.Topic(name); !ok || rec.ID != id {
			c.dropTopic(name)
		}
	}
	for _, rec := range c.meta.Topics() {
		if !c.ensureTopic(rec.Name) {
			continue
		}
		ts := c.local(rec)
		if ts == nil {
			continue // a topic of this broker's own under the name
		}
		if n := int32(len(ts.parts)); n < rec.Config.Partitions {
			if _, err := c.b.addLocalPartitions(rec.Name, rec.Config.Partitions); err != nil {
				c.b.logger.Error("folio: growing a replica of a cluster topic", "topic", rec.Name, "from", n, "to", rec.Config.Partitions, "err", err)
			}
		}
		want := rec.Config
		want.Partitions = ts.info.Config.Partitions
		if want.WithDefaults() == ts.info.Config.WithDefaults() {
			continue
		}
		if _, err := c.b.alterLocalTopicConfig(rec.Name, false, func(tc *TopicConfig) error {
			n := tc.Partitions
			*tc = want
			tc.Partitions = n
			return nil
		}); err != nil {
			c.b.logger.Error("folio: applying a cluster topic's configuration", "topic", rec.Name, "err", err)
		}
	}
}

// replicaTopics returns the topics this broker holds replicated
// partitions of, with the id they were opened for.
func (c *cluster) replicaTopics() map[string]topic.ID {
	c.mu.Lock()
	defer c.mu.Unlock()
	ids := map[string]topic.ID{}
	for tp, rp := range c.parts {
		ids[tp.Topic] = rp.id
	}
	return ids
}

// dropTopic ends this broker's roles in topic name's partitions (a leader
// resigns, so that appends it holds fail; a follower stops) and deletes
// its replica of the topic.
func (c *cluster) dropTopic(name string) {
	c.mu.Lock()
	var gone []*replPart
	for tp, rp := range c.parts {
		if tp.Topic == name {
			gone = append(gone, rp)
			delete(c.parts, tp)
		}
	}
	c.mu.Unlock()
	for _, rp := range gone {
		if rp.leader != nil {
			rp.leader.Resign()
			rp.hook.SetLeader(nil)
			rp.leader = nil
		}
		c.stopFollowing(rp)
	}
	if err := c.b.deleteLocalTopic(name); err != nil && !errors.Is(err, ErrUnknownTopic) {
		c.b.logger.Error("folio: deleting the replica of a deleted cluster topic", "topic", name, "err", err)
		return
	}
	c.b.logger.Info("folio: deleted the replica of a deleted cluster topic", "topic", name)
}

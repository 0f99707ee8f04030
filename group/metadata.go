package group

import (
	"slices"
	"time"

	"github.com/foliolog/folio/record"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Group metadata records make a group's membership visible outside the
// process that runs it: a reader of __consumer_offsets (folio groups, a
// Kafka tool) sees the state, generation, leader and every member with its
// assignment of the latest completed rebalance, and sees the group Empty
// once its members are gone. A coordinator takes members back from them
// only with Options.LoadMembers (a cluster, where a load is a leadership
// move and the members live on); otherwise in-process members died with
// their process, so after a restart every group is Empty (see
// Coordinator.load).

// metadataValueLocked is the group's GroupMetadataValue now. Members are
// listed only in Stable, when each holds the assignment of the generation;
// an Empty group lists none.
func (g *group) metadataValueLocked() *kmsg.GroupMetadataValue {
	v := &kmsg.GroupMetadataValue{
		Version:               groupValueVersion,
		ProtocolType:          g.protocolType,
		Generation:            g.generation,
		CurrentStateTimestamp: g.stateSince.UnixMilli(),
	}
	if g.state != StateStable {
		return v
	}
	v.Protocol, v.Leader = kmsg.StringPtr(g.protocol), kmsg.StringPtr(g.leader)
	for _, id := range g.order {
		m := g.members[id]
		mv := kmsg.GroupMetadataValueMember{
			MemberID:               m.id,
			ClientID:               m.clientID,
			ClientHost:             m.clientHost,
			RebalanceTimeoutMillis: int32(min(m.rebalance.Milliseconds(), 1<<31-1)),
			SessionTimeoutMillis:   int32(min(m.session.Milliseconds(), 1<<31-1)),
			Subscription:           slices.Clone(m.metadataFor(g.protocol)),
			Assignment:             slices.Clone(m.assignment),
		}
		if m.instanceID != "" {
			mv.InstanceID = kmsg.StringPtr(m.instanceID)
		}
		v.Members = append(v.Members, mv)
	}
	return v
}

// storeMetadataLocked writes the group's metadata record: after a leader's
// sync completed a generation, when a static member took over its old
// member id, and when the group became Empty. The write is best effort: the
// record only reports membership to readers of the topic, so a failed one
// is logged and counted (Stats().MetadataErrors) and the rebalance goes on;
// the next one writes the group's state again. It runs under the group's
// lock, so records of one group reach the log in the order of its changes
// and the latest one is its state; the cost is that the group's other
// requests wait out the append (an fsync under FlushSync) once per
// rebalance.
//
// With Options.LoadMembers the record is more than a report: the next
// coordinator of the partition takes its members back. Its callers then
// do not let a generation or a member id the record does not hold take
// effect (SyncGroup, a static member's new id): they answer with the
// error and rebalance, as Kafka's coordinator does when the append of a
// group's metadata fails. It returns the write's error.
func (g *group) storeMetadataLocked() error {
	if g.closed {
		return nil
	}
	if err := g.c.writeGroupRecord(g, g.metadataValueLocked()); err != nil {
		g.c.stats.metadataErrors.Add(1)
		g.c.logger.Warn("group: writing the group's metadata record failed; readers of the offsets topic see an older membership",
			"group", g.id, "generation", g.generation, "state", g.state, "err", err)
		return err
	}
	g.c.stats.metadataWrites.Add(1)
	return nil
}

// metadataBinding reports whether the group's metadata record binds the
// next coordinator (Options.LoadMembers), so that a failed write must not
// let what it records take effect.
func (g *group) metadataBinding() bool { return g.c.opts.LoadMembers }

// writeGroupRecord appends a group's metadata record, or its tombstone
// when v is nil.
func (c *Coordinator) writeGroupRecord(g *group, v *kmsg.GroupMetadataValue) error {
	bld, err := record.NewBuilder(nil)
	if err != nil {
		return err
	}
	rec := record.Record{Key: appendGroupKey(nil, g.id), Timestamp: c.opts.Now().UnixMilli()}
	if v != nil {
		rec.Value = v.AppendTo(nil)
	}
	if err := bld.Append(rec); err != nil {
		return err
	}
	batch, err := bld.Build(nil)
	if err != nil {
		return err
	}
	_, err = c.store.Append(g.partition, batch)
	return err
}

// loadedGroup is what load keeps of a group's latest metadata record.
type loadedGroup struct {
	tombstone    bool
	generation   int32
	protocolType string
	members      int
	// value is the record, kept with Options.LoadMembers.
	value *kmsg.GroupMetadataValue
}

// restoreMembersLocked takes back the members a Stable generation's
// metadata record lists (Options.LoadMembers): the group is Stable in that
// generation, its leader and protocol as recorded, each member with its
// subscription, assignment and timeouts, its last heartbeat now. Their
// session timers start once the group is installed (armLoadedLocked). It
// reports false, taking nothing, for a record it cannot take back whole.
func (g *group) restoreMembersLocked(v *kmsg.GroupMetadataValue) bool {
	if v.Protocol == nil || v.Leader == nil || *v.Protocol == "" {
		return false
	}
	now := time.Now()
	members := make(map[string]*member, len(v.Members))
	order := make([]string, 0, len(v.Members))
	static := map[string]string{}
	for _, mv := range v.Members {
		if mv.MemberID == "" || members[mv.MemberID] != nil || mv.SessionTimeoutMillis <= 0 {
			return false
		}
		m := &member{
			id: mv.MemberID, clientID: mv.ClientID, clientHost: mv.ClientHost,
			session:       time.Duration(mv.SessionTimeoutMillis) * time.Millisecond,
			rebalance:     time.Duration(max(mv.RebalanceTimeoutMillis, mv.SessionTimeoutMillis)) * time.Millisecond,
			protocolType:  v.ProtocolType,
			protocols:     []JoinGroupProtocol{{Name: *v.Protocol, Metadata: slices.Clone(mv.Subscription)}},
			assignment:    slices.Clone(mv.Assignment),
			lastHeartbeat: now,
		}
		if mv.InstanceID != nil && *mv.InstanceID != "" {
			m.instanceID = *mv.InstanceID
			static[m.instanceID] = m.id
		}
		members[m.id] = m
		order = append(order, m.id)
	}
	if members[*v.Leader] == nil {
		return false
	}
	g.members, g.order, g.static = members, order, static
	g.state, g.stateSince = StateStable, now
	g.protocol, g.leader = *v.Protocol, *v.Leader
	return true
}

// armLoadedLocked starts the session timers of the members a load took
// back, once the group is installed: a member that does not heartbeat at
// this coordinator within its session timeout is removed.
func (g *group) armLoadedLocked() {
	for _, id := range g.order {
		if m := g.members[id]; m != nil && m.hbTimer == nil {
			g.armHeartbeatLocked(m)
		}
	}
}

// applyLoadedMetadata finishes loading the group metadata records: a group
// whose latest record is a tombstone was deleted; any other keeps its
// generation, so generations go on counting across restarts and a client
// of the previous process cannot pass for a member of a new generation
// with the same number, and its protocol type, so a consumer group is
// still described as one. Its members are not taken back (they died with
// the process that ran them): the group is Empty, and where the record
// still listed members (the process stopped without them leaving), an
// Empty record is written so that readers of the topic see that too.
func (c *Coordinator) applyLoadedMetadata(groups map[string]*group, meta map[string]loadedGroup) {
	for id, lg := range meta {
		if lg.tombstone {
			continue
		}
		g := groups[id]
		if g == nil {
			g = newGroup(c, id)
			groups[id] = g
		}
		g.generation, g.protocolType = lg.generation, lg.protocolType
		if lg.members == 0 {
			continue
		}
		if c.opts.LoadMembers && lg.value != nil && g.restoreMembersLocked(lg.value) {
			continue
		}
		c.logger.Info("group: members of the previous process are gone; the group is Empty",
			"group", id, "generation", g.generation, "members", lg.members)
		_ = g.storeMetadataLocked() // a report for readers: no member was told anything
	}
}

package group

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/foliolog/folio/errs"
	"github.com/foliolog/folio/log"
	"github.com/foliolog/folio/record"
	"github.com/twmb/franz-go/pkg/kerr"
)

// committedOffset is a group's committed position in one partition.
type committedOffset struct {
	offset      int64
	leaderEpoch int32
	metadata    string
	commitTime  int64 // Unix milliseconds
	// at is the offset of the record in the offsets topic that set it:
	// concurrent commits of one partition are applied in log order, the
	// order a reload would replay them in.
	at int64
}

// applyLocked applies a record of the offsets topic at log offset at,
// unless the group already reflects a later one.
func (g *group) applyLocked(r offsetRecord, at int64) {
	cur := g.offsets[r.tp]
	if cur != nil && cur.at > at {
		return
	}
	if r.tombstone {
		delete(g.offsets, r.tp)
		return
	}
	g.offsets[r.tp] = &committedOffset{offset: r.offset, leaderEpoch: r.leaderEpoch, metadata: r.metadata, commitTime: r.commitTime, at: at}
}

// OffsetCommit commits offsets for a group, and returns once the commit
// record is as durable as the offsets topic's flush policy promises (under
// FlushSync, fsynced; concurrent commits share fsyncs). A member's commit
// must carry its current member id and generation: a member the group
// removed gets ErrUnknownMemberID, one from an earlier generation
// ErrIllegalGeneration, and a commit between a join and its sync
// ErrRebalanceInProgress, so a zombie's commit never overwrites its
// successor's. Those request-level errors are returned as the error;
// per-partition errors (unknown partition, metadata too large, a failed
// write) are in the response, see OffsetCommitResponse.Err.
//
// A commit in flight is not abandoned when ctx ends: ctx is checked before
// the commit starts.
func (c *Coordinator) OffsetCommit(ctx context.Context, req *OffsetCommitRequest) (*OffsetCommitResponse, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	g, err := c.lookup(req.Group)
	if err != nil {
		return nil, err
	}
	if g == nil {
		if req.GenerationID >= 0 {
			return nil, fmt.Errorf("group %q does not exist; commit at generation %d: %w", req.Group, req.GenerationID, ErrIllegalGeneration)
		}
		if g, err = c.getOrCreate(req.Group); err != nil {
			return nil, err
		}
	}
	g.fenceMu.RLock()
	defer g.fenceMu.RUnlock()
	g.mu.Lock()
	err = g.validateCommitLocked(req)
	g.mu.Unlock()
	if err != nil {
		return nil, err
	}

	resp := &OffsetCommitResponse{Topics: make([]OffsetCommitResponseTopic, len(req.Topics))}
	type target struct{ t, p int }
	var (
		valid []target
		recs  []offsetRecord
	)
	now := c.opts.Now().UnixMilli()
	for i, t := range req.Topics {
		rt := &resp.Topics[i]
		rt.Topic = t.Topic
		rt.Partitions = make([]OffsetCommitResponsePartition, len(t.Partitions))
		n, perr := c.topics.Partitions(t.Topic)
		for j, p := range t.Partitions {
			rp := &rt.Partitions[j]
			rp.Partition = p.Partition
			switch {
			case perr != nil:
				rp.Err = fmt.Errorf("group %q: commit of %s-%d: %w", g.id, t.Topic, p.Partition, perr)
			case p.Partition < 0 || p.Partition >= n:
				rp.Err = fmt.Errorf("group %q: commit of %s-%d (the topic has %d): %w", g.id, t.Topic, p.Partition, n, ErrUnknownTopicOrPartition)
			case len(p.Metadata) > c.opts.MaxMetadataBytes:
				rp.Err = fmt.Errorf("group %q: commit of %s-%d: metadata of %d bytes, at most %d: %w", g.id, t.Topic, p.Partition, len(p.Metadata), c.opts.MaxMetadataBytes, ErrOffsetMetadataTooLarge)
			case p.Offset < 0:
				rp.Err = fmt.Errorf("group %q: commit of %s-%d: offset %d: %w", g.id, t.Topic, p.Partition, p.Offset, ErrInvalidRequest)
			default:
				valid = append(valid, target{i, j})
				recs = append(recs, offsetRecord{group: g.id, tp: TopicPartition{t.Topic, p.Partition},
					offset: p.Offset, leaderEpoch: p.LeaderEpoch, metadata: p.Metadata, commitTime: now})
			}
		}
	}
	if len(recs) == 0 {
		return resp, nil
	}
	first, err := c.write(g, recs)
	if err != nil {
		c.stats.commitErrors.Add(int64(len(recs)))
		err = storeError(g, err)
		for _, v := range valid {
			resp.Topics[v.t].Partitions[v.p].Err = err
		}
		return resp, nil
	}
	c.stats.commits.Add(int64(len(recs)))
	g.mu.Lock()
	for i, r := range recs {
		g.applyLocked(r, first+int64(i))
	}
	g.mu.Unlock()
	return resp, nil
}

// Err returns the first per-partition error of the response, nil if every
// partition was committed.
func (r *OffsetCommitResponse) Err() error {
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			if p.Err != nil {
				return p.Err
			}
		}
	}
	return nil
}

// storeError maps a failed append of the offsets topic to a protocol error,
// keeping the cause in the chain: Kafka answers a commit too large for the
// log with INVALID_COMMIT_OFFSET_SIZE and other storage failures with
// errors the client may retry after the coordinator recovers.
func storeError(g *group, err error) error {
	if errors.Is(err, log.ErrBatchTooLarge) {
		return fmt.Errorf("group %q: %w: %w", g.id, ErrInvalidCommitOffsetSize, err)
	}
	if errors.Is(err, log.ErrClosed) {
		return fmt.Errorf("group %q: %w: %w", g.id, ErrCoordinatorNotAvailable, err)
	}
	// A replicated offsets partition, as Kafka's coordinator maps its
	// append errors: a leader that lost its partition sends the client to
	// the new coordinator; too few replicas, or a commit not acknowledged
	// in time, make it retry.
	if errors.Is(err, kerr.NotLeaderForPartition) {
		return fmt.Errorf("group %q: %s-%d: %w: %w", g.id, OffsetsTopic, g.partition, ErrNotCoordinator, err)
	}
	if errors.Is(err, kerr.NotEnoughReplicas) || errors.Is(err, kerr.NotEnoughReplicasAfterAppend) ||
		errors.Is(err, kerr.RequestTimedOut) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("group %q: %s-%d: %w: %w", g.id, OffsetsTopic, g.partition, ErrCoordinatorNotAvailable, err)
	}
	return fmt.Errorf("group %q: writing to %s-%d: %w: %w", g.id, OffsetsTopic, g.partition, ErrUnknownServerError, err)
}

// validateCommitLocked checks who may commit, as Kafka's
// ClassicGroup.validateOffsetCommit does.
func (g *group) validateCommitLocked(req *OffsetCommitRequest) error {
	if g.closed {
		return g.closeErr
	}
	if g.state == StateDead {
		return fmt.Errorf("group %q: %w", g.id, ErrCoordinatorNotAvailable)
	}
	if req.GenerationID < 0 && g.state == StateEmpty {
		return nil // an admin, or a consumer without group management
	}
	if req.GenerationID >= 0 || req.MemberID != "" || req.InstanceID != "" {
		m, err := g.validateMemberLocked(req.MemberID, req.InstanceID)
		if err != nil {
			return err
		}
		if req.GenerationID != g.generation {
			return fmt.Errorf("group %q: member %q committed at generation %d, group at %d: %w", g.id, req.MemberID, req.GenerationID, g.generation, ErrIllegalGeneration)
		}
		if g.state == StateCompletingRebalance {
			return fmt.Errorf("group %q: commit between join and sync: %w", g.id, ErrRebalanceInProgress)
		}
		m.lastHeartbeat = time.Now()
		return nil
	}
	return fmt.Errorf("group %q has members; a commit without member id: %w", g.id, ErrUnknownMemberID)
}

// write appends commit (or tombstone) records for a group as one batch,
// and returns the offset of the first.
func (c *Coordinator) write(g *group, recs []offsetRecord) (int64, error) {
	bld, err := record.NewBuilder(nil)
	if err != nil {
		return 0, err
	}
	var key, val []byte
	for _, r := range recs {
		key = appendOffsetKey(key[:0], r.group, r.tp)
		rec := record.Record{Key: slices.Clone(key), Timestamp: r.commitTime}
		if !r.tombstone {
			val = appendOffsetValue(val[:0], r.offset, r.leaderEpoch, r.metadata, r.commitTime)
			rec.Value = slices.Clone(val)
		}
		if err := bld.Append(rec); err != nil {
			return 0, err
		}
	}
	batch, err := bld.Build(nil)
	if err != nil {
		return 0, err
	}
	return c.store.Append(g.partition, batch)
}

// OffsetFetch returns a group's committed offsets: for the partitions
// asked, -1 where there is none; with no topics, every committed offset.
// An unknown group has no offsets; that is not an error.
func (c *Coordinator) OffsetFetch(ctx context.Context, req *OffsetFetchRequest) (*OffsetFetchResponse, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	g, err := c.lookup(req.Group)
	if err != nil {
		return nil, err
	}
	resp := &OffsetFetchResponse{}
	get := func(tp TopicPartition) OffsetFetchResponsePartition {
		if g != nil {
			if co := g.offsets[tp]; co != nil {
				return OffsetFetchResponsePartition{Partition: tp.Partition, Offset: co.offset, LeaderEpoch: co.leaderEpoch, Metadata: co.metadata}
			}
		}
		return OffsetFetchResponsePartition{Partition: tp.Partition, Offset: -1, LeaderEpoch: -1}
	}
	if g != nil {
		g.mu.Lock()
		defer g.mu.Unlock()
		if g.state == StateDead {
			return nil, fmt.Errorf("group %q is being deleted: %w", g.id, ErrGroupIDNotFound)
		}
	}
	if req.Topics != nil {
		for _, t := range req.Topics {
			rt := OffsetFetchResponseTopic{Topic: t.Topic}
			for _, p := range t.Partitions {
				rt.Partitions = append(rt.Partitions, get(TopicPartition{t.Topic, p}))
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil
	}
	if g == nil {
		return resp, nil
	}
	tps := make([]TopicPartition, 0, len(g.offsets))
	for tp := range g.offsets {
		tps = append(tps, tp)
	}
	for _, tp := range sortedPartitions(tps) {
		if n := len(resp.Topics); n == 0 || resp.Topics[n-1].Topic != tp.Topic {
			resp.Topics = append(resp.Topics, OffsetFetchResponseTopic{Topic: tp.Topic})
		}
		rt := &resp.Topics[len(resp.Topics)-1]
		rt.Partitions = append(rt.Partitions, get(tp))
	}
	return resp, nil
}

// OffsetDelete deletes committed offsets of a group, durably (tombstones),
// for partitions of topics no member subscribes to (KIP-496): those give
// ErrGroupSubscribedToTopic. An explicit reset of a consumer's position to
// its reset policy is a delete; a reset to chosen offsets is an
// OffsetCommit with GenerationID -1 while the group is Empty.
func (c *Coordinator) OffsetDelete(ctx context.Context, req *OffsetDeleteRequest) (*OffsetDeleteResponse, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	g, err := c.lookup(req.Group)
	if err != nil {
		return nil, err
	}
	if g == nil {
		return nil, fmt.Errorf("group %q: %w", req.Group, ErrGroupIDNotFound)
	}
	g.fenceMu.Lock()
	defer g.fenceMu.Unlock()
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return nil, g.closeErr
	}
	if g.state == StateDead {
		g.mu.Unlock()
		return nil, fmt.Errorf("group %q: %w", g.id, ErrGroupIDNotFound)
	}
	if g.state != StateEmpty && g.protocolType != ProtocolTypeConsumer {
		g.mu.Unlock()
		return nil, fmt.Errorf("group %q is %v: %w", g.id, g.state, ErrNonEmptyGroup)
	}
	subscribed := g.subscribedTopicsLocked()
	resp := &OffsetDeleteResponse{}
	var recs []offsetRecord
	for _, t := range req.Topics {
		rt := OffsetCommitResponseTopic{Topic: t.Topic}
		for _, p := range t.Partitions {
			rp := OffsetCommitResponsePartition{Partition: p}
			tp := TopicPartition{t.Topic, p}
			if subscribed[t.Topic] {
				rp.Err = fmt.Errorf("group %q: %s: %w", g.id, tp, ErrGroupSubscribedToTopic)
			} else if g.offsets[tp] != nil {
				recs = append(recs, offsetRecord{group: g.id, tp: tp, tombstone: true, commitTime: c.opts.Now().UnixMilli()})
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	g.mu.Unlock()
	if len(recs) == 0 {
		return resp, nil
	}
	first, err := c.write(g, recs)
	if err != nil {
		return nil, storeError(g, err)
	}
	g.mu.Lock()
	for i, r := range recs {
		g.applyLocked(r, first+int64(i))
	}
	g.mu.Unlock()
	return resp, nil
}

// DeleteTopicOffsets removes every group's committed offsets in the named
// topics, durably: a tombstone per offset in __consumer_offsets, as Kafka's
// coordinator does when topics are deleted (onPartitionsDeleted), whether
// or not members subscribe to them. The data directory's owner calls it
// when it deletes a topic, once the topic can take no more commits, so
// that a topic created again under the name starts without them. An offset
// whose tombstone could not be written is dropped from memory all the same
// (this session never serves it); the load drops what is left of a topic
// that no longer exists (see NewCoordinator).
func (c *Coordinator) DeleteTopicOffsets(topics ...string) error {
	gone := map[string]bool{}
	for _, t := range topics {
		gone[t] = true
	}
	c.groupsMu.Lock()
	if c.closed {
		c.groupsMu.Unlock()
		return errClosed()
	}
	groups := make([]*group, 0, len(c.groups))
	for _, g := range c.groups {
		groups = append(groups, g)
	}
	c.groupsMu.Unlock()
	var errs []error
	for _, g := range groups {
		if err := c.deleteGroupOffsets(g, func(tp TopicPartition) bool { return gone[tp.Topic] }); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// deleteGroupOffsets writes tombstones for g's offsets that drop selects,
// and removes them from memory even if the write fails.
func (c *Coordinator) deleteGroupOffsets(g *group, drop func(TopicPartition) bool) error {
	g.fenceMu.Lock() // no commit of g is between its check and its write
	defer g.fenceMu.Unlock()
	g.mu.Lock()
	var tps []TopicPartition
	for tp := range g.offsets {
		if drop(tp) {
			tps = append(tps, tp)
		}
	}
	g.mu.Unlock()
	if len(tps) == 0 {
		return nil
	}
	now := c.opts.Now().UnixMilli()
	recs := make([]offsetRecord, 0, len(tps))
	for _, tp := range sortedPartitions(tps) {
		recs = append(recs, offsetRecord{group: g.id, tp: tp, tombstone: true, commitTime: now})
	}
	first, err := c.write(g, recs)
	g.mu.Lock()
	defer g.mu.Unlock()
	for i, r := range recs {
		if err != nil {
			delete(g.offsets, r.tp)
			continue
		}
		g.applyLocked(r, first+int64(i))
	}
	if err != nil {
		return storeError(g, err)
	}
	return nil
}

// dropDeletedTopics removes, at load, the offsets of topics that no longer
// exist: their topic was deleted without its tombstones reaching the log
// (a crash between the two). A commit is only taken for a topic that
// exists, so such offsets are stale, and one kept would be inherited by a
// topic created again under the name.
func (c *Coordinator) dropDeletedTopics(groups map[string]*group) { // before they are shared, like loadPartition
	ids := slices.Sorted(maps.Keys(groups))
	for _, id := range ids {
		g := groups[id]
		unknown := map[string]bool{}
		for tp := range g.offsets {
			if _, seen := unknown[tp.Topic]; !seen {
				_, err := c.topics.Partitions(tp.Topic)
				unknown[tp.Topic] = errors.Is(err, ErrUnknownTopicOrPartition)
			}
		}
		n := 0
		for _, u := range unknown {
			if u {
				n++
			}
		}
		if n == 0 {
			continue
		}
		if err := c.deleteGroupOffsets(g, func(tp TopicPartition) bool { return unknown[tp.Topic] }); err != nil {
			c.logger.Error("group: deleting the offsets of deleted topics failed; they hold in memory only", "group", id, "err", err)
			continue
		}
		c.logger.Info("group: deleted the committed offsets of topics that no longer exist", "group", id, "topics", n)
	}
}

// subscribedTopicsLocked returns the topics the members subscribe to, read
// from their consumer-protocol metadata.
func (g *group) subscribedTopicsLocked() map[string]bool {
	out := map[string]bool{}
	if g.protocolType != ProtocolTypeConsumer {
		return out
	}
	for _, m := range g.members {
		for _, p := range m.protocols {
			s, err := decodeSubscription(m.id, m.instanceID, p.Metadata)
			if err != nil {
				continue
			}
			for _, t := range s.Topics {
				out[t] = true
			}
		}
	}
	return out
}

// DeleteGroups deletes Empty groups and their committed offsets, durably
// (a tombstone per offset). A group with members gives ErrNonEmptyGroup,
// an unknown one ErrGroupIDNotFound.
func (c *Coordinator) DeleteGroups(ctx context.Context, groupIDs []string) ([]DeleteGroupResult, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out := make([]DeleteGroupResult, 0, len(groupIDs))
	for _, id := range groupIDs {
		out = append(out, DeleteGroupResult{Group: id, Err: c.deleteGroup(id)})
	}
	return out, nil
}

func (c *Coordinator) deleteGroup(id string) error {
	g, err := c.lookup(id)
	if err != nil {
		return err
	}
	if g == nil {
		return fmt.Errorf("group %q: %w", id, ErrGroupIDNotFound)
	}
	g.fenceMu.Lock()
	defer g.fenceMu.Unlock()
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return g.closeErr
	}
	switch g.state {
	case StateDead:
		return fmt.Errorf("group %q: %w", id, ErrGroupIDNotFound)
	case StateEmpty:
	default:
		return fmt.Errorf("group %q is %v: %w", id, g.state, ErrNonEmptyGroup)
	}
	if len(g.offsets) > 0 {
		tps := make([]TopicPartition, 0, len(g.offsets))
		for tp := range g.offsets {
			tps = append(tps, tp)
		}
		now := c.opts.Now().UnixMilli()
		recs := make([]offsetRecord, 0, len(tps))
		for _, tp := range sortedPartitions(tps) {
			recs = append(recs, offsetRecord{group: id, tp: tp, tombstone: true, commitTime: now})
		}
		// The group stays as it is if the tombstones do not make it.
		if _, err := c.write(g, recs); err != nil {
			return storeError(g, err)
		}
		clear(g.offsets)
	}
	// The metadata tombstone lets compaction drop the group's membership
	// records; should it fail, the group's last record says Empty, and
	// the next load keeps the group, Empty, without offsets.
	if err := c.writeGroupRecord(g, nil); err != nil {
		c.stats.metadataErrors.Add(1)
		c.logger.Warn("group: writing the deleted group's metadata tombstone failed", "group", id, "err", err)
	}
	g.transitionLocked(StateDead)
	for _, t := range g.pending {
		t.Stop()
	}
	c.forget(g)
	c.logger.Info("group: deleted", "group", id)
	return nil
}

// Lag returns, for every partition of the topics the group has a committed
// offset in or assigns in its current generation, how far the committed
// offset trails the high watermark (from the log start where it has none).
// Partitions of topics that no longer exist are left out. An unknown group
// is ErrGroupIDNotFound.
func (c *Coordinator) Lag(groupID string) ([]PartitionLag, error) {
	g, err := c.lookup(groupID)
	if err != nil {
		return nil, err
	}
	if g == nil {
		return nil, fmt.Errorf("group %q: %w", groupID, ErrGroupIDNotFound)
	}
	g.mu.Lock()
	committed := make(map[TopicPartition]int64, len(g.offsets))
	for tp, co := range g.offsets {
		committed[tp] = co.offset
	}
	owners := map[TopicPartition]string{}
	if g.state == StateStable && g.protocolType == ProtocolTypeConsumer {
		for id, m := range g.members {
			tps, err := decodeAssignment(m.assignment)
			if err != nil {
				continue
			}
			for _, tp := range tps {
				owners[tp] = id
			}
		}
	}
	g.mu.Unlock()
	all := make([]TopicPartition, 0, len(committed)+len(owners))
	for tp := range committed {
		all = append(all, tp)
	}
	for tp := range owners {
		all = append(all, tp)
	}
	// Every partition of those topics, so that the backlog of a partition
	// nobody committed in yet shows (from the log start), whether or not a
	// member owns it now.
	topics := map[string]bool{}
	for _, tp := range all {
		topics[tp.Topic] = true
	}
	for t := range topics {
		n, err := c.topics.Partitions(t)
		if err != nil {
			continue
		}
		for p := range n {
			all = append(all, TopicPartition{Topic: t, Partition: p})
		}
	}
	out := make([]PartitionLag, 0, len(all))
	for _, tp := range sortedPartitions(all) {
		po, err := c.topics.Offsets(tp.Topic, tp.Partition)
		if err != nil {
			continue
		}
		pl := PartitionLag{Topic: tp.Topic, Partition: tp.Partition, Committed: -1, LogStartOffset: po.LogStart, HighWatermark: po.HighWatermark, MemberID: owners[tp]}
		from := po.LogStart
		if off, ok := committed[tp]; ok {
			pl.Committed, from = off, off
		}
		pl.Lag = max(po.HighWatermark-from, 0)
		out = append(out, pl)
	}
	return out, nil
}

// load reads every partition of the offsets topic into the groups and
// owns them all: NewCoordinator's load, one broker's. It runs before the
// coordinator is returned.
func (c *Coordinator) load() error {
	for p := range c.store.Partitions() {
		groups, err := c.loadPartition(context.Background(), p)
		if err != nil {
			return err
		}
		maps.Copy(c.groups, groups)
		c.parts[p].state = owned
		armLoaded(groups)
	}
	return nil
}

// loadPartition reads partition p of the offsets topic into groups of its
// own (their committed offsets, and the generation of their latest
// metadata record, but no members), then clamps offsets beyond their
// partition's end. The groups are not shared until the caller installs
// them, so it touches them without their locks.
func (c *Coordinator) loadPartition(ctx context.Context, p int32) (map[string]*group, error) {
	const maxLogged = 10
	start := time.Now()
	defer func() { c.stats.loadTime.Add(int64(time.Since(start))) }()
	groups := map[string]*group{}
	meta := map[string]loadedGroup{}
	err := c.store.Scan(p, func(b record.Batch) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		it := b.Records(nil)
		defer it.Close()
		for it.Next() {
			r := it.Record()
			c.stats.loaded.Add(1)
			or, kind, err := decodeOffsetRecord(r.Key(), r.Value(), r.ValueIsNull())
			if err != nil {
				if c.stats.skipped.Add(1) <= maxLogged {
					c.logger.Warn("group: skipping an offsets record that does not decode",
						"partition", p, "offset", r.Offset(), "err", err)
				}
				continue
			}
			if kind == kindGroupMetadata {
				gr, err := decodeGroupRecord(r.Key(), r.Value(), r.ValueIsNull())
				switch {
				case err != nil:
					if c.stats.skipped.Add(1) <= maxLogged {
						c.logger.Warn("group: skipping a group metadata record that does not decode",
							"partition", p, "offset", r.Offset(), "err", err)
					}
				case PartitionFor(gr.group, c.store.Partitions()) != p:
					if c.stats.skipped.Add(1) <= maxLogged {
						c.logger.Warn("group: skipping a group metadata record in the wrong partition",
							"group", gr.group, "partition", p, "offset", r.Offset())
					}
				default:
					// Records of a group are in one partition, in the
					// order they were written: the last one wins.
					lg := loadedGroup{tombstone: gr.tombstone, generation: gr.value.Generation, protocolType: gr.value.ProtocolType, members: len(gr.value.Members)}
					if c.opts.LoadMembers && !gr.tombstone {
						lg.value = &gr.value
					}
					meta[gr.group] = lg
				}
				continue
			}
			if kind != kindOffsetCommit {
				continue
			}
			g := groups[or.group]
			if g == nil {
				g = newGroup(c, or.group)
				groups[or.group] = g
			}
			if g.partition != p {
				if c.stats.skipped.Add(1) <= maxLogged {
					c.logger.Warn("group: skipping an offsets record in the wrong partition",
						"group", or.group, "partition", p, "want", g.partition, "offset", r.Offset())
				}
				continue
			}
			g.applyLocked(or, r.Offset())
		}
		if err := it.Err(); err != nil {
			return errs.Corrupt(ErrCorrupt, fmt.Sprintf("%s-%d", OffsetsTopic, p), -1, err).AtOffset(b.BaseOffset())
		}
		return nil
	})
	if ce, located := errors.AsType[*errs.Corruption](err); located {
		if !c.cutDamage(p, ce, err) {
			// It names the partition and offset itself.
			return nil, fmt.Errorf("group: loading offsets: %w", err)
		}
		err = nil
	}
	if err != nil {
		return nil, fmt.Errorf("group: loading %s-%d: %w", OffsetsTopic, p, err)
	}
	for id, g := range groups {
		if g.partition != p {
			delete(groups, id) // its records were all in the wrong partition
			continue
		}
		if lg, ok := meta[id]; len(g.offsets) == 0 && (!ok || lg.tombstone) {
			delete(groups, id) // deleted, or only tombstones left
		}
	}
	c.applyLoadedMetadata(groups, meta)
	c.dropDeletedTopics(groups)
	c.clamp(groups)
	return groups, nil
}

// cutDamage cuts partition p of the Store at the damage ce reports, when
// the Store can (see Truncater), and says whether it did. The records
// before the damage are loaded already; those from it on are gone, and the
// warning says which.
func (c *Coordinator) cutDamage(p int32, ce *errs.Corruption, err error) bool {
	t, ok := c.store.(Truncater)
	if !ok || ce.Offset < 0 {
		return false
	}
	end, terr := t.Truncate(p, ce.Offset)
	if terr != nil {
		c.logger.Error("group: cutting a damaged offsets partition failed",
			"partition", p, "offset", ce.Offset, "damage", err, "err", terr)
		return false
	}
	c.logger.Warn("group: offsets partition damaged; cut at the damage, as after a crash: commits from there on are lost and their groups restart from earlier commits",
		"partition", p, "path", ce.Path, "cutFrom", ce.Offset, "cutTo", end, "damage", err)
	return true
}

// clamp moves committed offsets that lie beyond their partition's log end
// back to it, durably, and reports them. Such an offset means records the
// group consumed were lost after the commit (a power cut under a flush
// policy other than FlushSync); without the clamp, the records later
// written at those offsets would be skipped.
func (c *Coordinator) clamp(groups map[string]*group) { // before they are shared, like loadPartition
	for _, id := range slices.Sorted(maps.Keys(groups)) {
		g := groups[id]
		var recs []offsetRecord
		tps := make([]TopicPartition, 0, len(g.offsets))
		for tp := range g.offsets {
			tps = append(tps, tp)
		}
		for _, tp := range sortedPartitions(tps) {
			co := g.offsets[tp]
			po, err := c.topics.Offsets(tp.Topic, tp.Partition)
			if err != nil || po.Follower || co.offset <= po.LogEnd {
				continue
			}
			c.logger.Warn("group: committed offset beyond the partition's log end (records lost after the commit); clamping it",
				"group", id, "topic", tp.Topic, "partition", tp.Partition, "committed", co.offset, "logEnd", po.LogEnd)
			c.stats.clamped.Add(1)
			recs = append(recs, offsetRecord{group: id, tp: tp, offset: po.LogEnd, leaderEpoch: -1,
				metadata: co.metadata, commitTime: c.opts.Now().UnixMilli()})
		}
		if len(recs) == 0 {
			continue
		}
		first, err := c.write(g, recs)
		if err != nil {
			// Serve the clamped offsets anyway; the next load clamps
			// again unless the partition grew past them meanwhile.
			c.logger.Error("group: writing clamped offsets failed; they hold in memory only",
				"group", id, "err", err)
			for _, r := range recs {
				g.offsets[r.tp].offset = r.offset
			}
			continue
		}
		for i, r := range recs {
			g.applyLocked(r, first+int64(i))
		}
	}
}

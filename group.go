package folio

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"sync"
	"sync/atomic"
	"time"

	"github.com/foliolog/folio/errs"
	"github.com/foliolog/folio/group"
	"github.com/foliolog/folio/log"
	"github.com/foliolog/folio/replica"
	"github.com/foliolog/folio/topic"
)

// Consumer groups: the Broker wires the group package's coordinator to its
// partitions (the offsets topic __consumer_offsets and the data topics),
// and a GroupConsumer is a plain Consumer whose assignment a group member
// drives. See the group package for the protocol and its guarantees.

// Defaults of the offsets topic, Kafka's.
const (
	// DefaultOffsetsPartitions is the partition count of
	// __consumer_offsets when the Broker creates it
	// (offsets.topic.num.partitions). A group's commits go to one
	// partition, group.PartitionFor(group, n); partitions share nothing,
	// so more of them spread the fsyncs of many groups.
	DefaultOffsetsPartitions = 50
	// OffsetsSegmentBytes is the segment size of __consumer_offsets
	// (offsets.topic.segment.bytes).
	OffsetsSegmentBytes = 100 << 20
)

// brokerGroups is the Broker's consumer-group state (Broker.groups): the
// coordinator from the first group call (or Open, when the offsets topic
// exists) until Close, and the group consumers to close with it.
type brokerGroups struct {
	// mu guards coord, consumers and closed. Lock order: mu, then the
	// Broker's topicsMu (the offsets topic is created under mu).
	mu        sync.Mutex
	coord     *group.Coordinator
	offsets   []*log.Log
	consumers map[*GroupConsumer]struct{}
	closed    bool
	// loaded is coord once loaded (nil before and after Close), for
	// DeleteTopic, which runs under topicsMu and so may not take mu.
	loaded atomic.Pointer[group.Coordinator]
}

// open loads the committed offsets if __consumer_offsets exists: Open calls
// it, so a Broker serves every group's last commit from its first call and
// reports offsets clamped at load right away. Without the topic, the
// coordinator starts with the first group call.
func (g *brokerGroups) open(b *Broker) error {
	if _, ok := (*b.topics.Load())[group.OffsetsTopic]; !ok {
		return nil
	}
	_, err := g.coordinator(b)
	return err
}

// coordinator returns the Broker's coordinator, creating the offsets topic
// and loading it on first use.
func (g *brokerGroups) coordinator(b *Broker) (*group.Coordinator, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed || b.closed.Load() {
		return nil, ErrClosed
	}
	if g.coord != nil {
		return g.coord, nil
	}
	if b.readOnly {
		return nil, fmt.Errorf("%w: consumer groups write their commits", ErrReadOnly)
	}
	ts, ok := (*b.topics.Load())[group.OffsetsTopic]
	if !ok && b.cluster != nil {
		if err := b.cluster.ensureOffsetsTopic(); err != nil {
			return nil, err
		}
		if ts, ok = (*b.topics.Load())[group.OffsetsTopic]; !ok {
			return nil, fmt.Errorf("%w: broker %d holds no replica of %s", errNotCoordinator, b.cluster.opts.BrokerID, group.OffsetsTopic)
		}
	}
	if !ok {
		if _, err := b.createTopic(group.OffsetsTopic, offsetsTopicConfig(), true); err != nil && !errors.Is(err, ErrTopicExists) {
			return nil, fmt.Errorf("folio: creating %s: %w", group.OffsetsTopic, err)
		}
		if ts, ok = (*b.topics.Load())[group.OffsetsTopic]; !ok {
			return nil, fmt.Errorf("folio: %s missing after its creation", group.OffsetsTopic)
		}
	}
	c, logs, err := b.loadCoordinator(ts)
	if err != nil {
		return nil, err
	}
	if st := c.Stats(); st.Clamped > 0 {
		b.logger.Warn("folio: committed offsets beyond their partition's end were clamped at load", "offsets", st.Clamped)
	}
	g.coord, g.offsets = c, logs
	g.loaded.Store(c)
	return c, nil
}

// offsetsTopicConfig is the config of __consumer_offsets, Kafka's: FlushSync,
// compacted, kept for ever.
func offsetsTopicConfig() TopicConfig {
	return TopicConfig{
		Partitions:   DefaultOffsetsPartitions,
		Cleanup:      topic.CleanupCompact,
		SegmentBytes: OffsetsSegmentBytes,
		RetentionAge: topic.Unlimited,
		Flush:        FlushSync,
	}
}

// close closes the group consumers, then the coordinator.
func (g *brokerGroups) close() error {
	g.mu.Lock()
	g.closed = true
	consumers := make([]*GroupConsumer, 0, len(g.consumers))
	for gc := range g.consumers {
		consumers = append(consumers, gc)
	}
	c := g.coord
	g.coord, g.offsets = nil, nil
	g.loaded.Store(nil)
	g.mu.Unlock()
	var errs []error
	for _, gc := range consumers {
		if err := gc.Close(); err != nil && !errors.Is(err, ErrClosed) {
			errs = append(errs, err)
		}
	}
	if c != nil {
		if err := c.Close(); err != nil && !errors.Is(err, group.ErrClosed) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// groupTopics is the coordinator's view of the Broker's topics.
type groupTopics struct{ b *Broker }

// Partitions is the topic's partition count: the Broker's own topic's,
// or on a cluster the metadata's for a replicated topic this broker holds
// no replica of (a topic needs not have a replica on the coordinator of
// every group that reads it: without the metadata's answer its commits
// would be refused, and taken at load for a deleted topic's and dropped).
func (t groupTopics) Partitions(name string) (int32, error) {
	if ts, ok := (*t.b.topics.Load())[name]; ok {
		return int32(len(ts.parts)), nil
	}
	if c := t.b.cluster; c != nil {
		if rec, ok := c.meta.Topic(name); ok {
			return rec.Config.Partitions, nil
		}
	}
	return 0, fmt.Errorf("%w: %q", ErrUnknownTopic, name) // UNKNOWN_TOPIC_OR_PARTITION
}

// Offsets are the Broker's replica's offsets of the partition, marked a
// follower's on a cluster when this broker does not lead it.
func (t groupTopics) Offsets(name string, partition int32) (group.PartitionOffsets, error) {
	p, err := t.b.lookup(name, partition)
	if err != nil {
		return group.PartitionOffsets{}, errs.Mark(err, group.ErrUnknownTopicOrPartition)
	}
	po := group.PartitionOffsets{
		LogStart:      p.LogStartOffset(),
		HighWatermark: p.HighWatermark(),
		LogEnd:        p.LogEndOffset(),
	}
	if c := t.b.cluster; c != nil {
		if rec, ok := c.meta.Topic(name); ok && rec.ID == p.TopicID() {
			st, err := c.meta.Partition(context.Background(), replica.TopicPartition{Topic: name, Partition: partition})
			po.Follower = err != nil || st.Leader != c.opts.BrokerID
		}
	}
	return po, nil
}

// groupReader is the group member's view of a plain Consumer.
type groupReader struct{ c *Consumer }

// Offsets are the Consumer's Broker's: where the member reads, whichever
// broker coordinates its group (group.OffsetsReader).
func (r groupReader) Offsets(topicName string, partition int32) (group.PartitionOffsets, error) {
	return groupTopics{r.c.b}.Offsets(topicName, partition)
}

func (r groupReader) Assign(starts []group.StartOffset) error {
	as := make([]Assignment, len(starts))
	for i, s := range starts {
		as[i] = Assignment{Topic: s.Topic, Partition: s.Partition, Start: AtOffset(s.Offset)}
	}
	return r.c.Assign(as...)
}

func (r groupReader) Unassign(tps []TopicPartition) error {
	if err := r.c.Unassign(tps...); err != nil && !errors.Is(err, ErrClosed) {
		return err // a closed consumer reads nothing anyway
	}
	return nil
}

func (r groupReader) Poll(ctx context.Context) ([]Record, error) { return r.c.Poll(ctx) }

func (r groupReader) Locate(rec Record) (TopicPartition, int64) {
	return TopicPartition{Topic: rec.Topic, Partition: rec.Partition}, rec.Offset
}

// GroupOptions configure a GroupConsumer. A nil *GroupOptions, and every
// zero field, means the default stated on the field.
type GroupOptions struct {
	// Assignors are the assignors the member supports, preferred first.
	// Default [group.CooperativeSticky()]: incremental rebalances in
	// which no partition ever has two owners.
	Assignors []group.Assignor
	// SessionTimeout: without a heartbeat for this long the member is
	// expelled. Default group.DefaultSessionTimeout (45 s); the
	// coordinator accepts 6 s to 30 min.
	SessionTimeout time.Duration
	// RebalanceTimeout bounds how long a rebalance waits for the member,
	// and how long the application may go without polling before the
	// member leaves on its own (max.poll.interval.ms). Default
	// group.DefaultRebalanceTimeout (5 min).
	RebalanceTimeout time.Duration
	// HeartbeatInterval: default group.DefaultHeartbeatInterval (3 s) or a
	// third of SessionTimeout if shorter.
	HeartbeatInterval time.Duration
	// InstanceID makes the member static (group.instance.id): it keeps its
	// partitions across a restart within SessionTimeout. Default "".
	InstanceID string
	// Reset is where to start in a partition without a committed offset,
	// and where to go when a position falls outside the partition
	// (auto.offset.reset). Default ResetEarliest: a new group reads what
	// was produced before it joined (franz-go's and kafka-go's default;
	// Java Kafka's is latest).
	Reset ResetPolicy
	// DisableAutoCommit turns auto-commit off. With it on (the default),
	// what the application has processed is committed every
	// AutoCommitInterval, before partitions are given up and at Close:
	// at-least-once delivery.
	DisableAutoCommit bool
	// AutoCommitInterval: default group.DefaultAutoCommitInterval (5 s).
	AutoCommitInterval time.Duration
	// OnAssigned, OnRevoked and OnLost are called (on the goroutine that
	// polls) with partitions the member gains, gives up in a rebalance or
	// at Close (it may Commit there), or lost because it was expelled
	// (OnLost defaults to OnRevoked). Default nil.
	OnAssigned func(ctx context.Context, partitions []TopicPartition)
	OnRevoked  func(ctx context.Context, partitions []TopicPartition)
	OnLost     func(ctx context.Context, partitions []TopicPartition)
	// Consumer configures the underlying Consumer (name, batch sizes,
	// zero-copy records); its Reset is replaced by this Reset. Default nil.
	Consumer *ConsumerOptions
}

// GroupConsumer consumes as a member of a consumer group: the partitions of
// its subscription are divided among the group's members, each record
// going to one member (queue), while every group gets every record
// (pub/sub). Poll and Records work as a plain Consumer's; rebalances and
// their callbacks run inside them. Methods other than Poll and Records
// are safe for concurrent use.
type GroupConsumer struct {
	b *Broker
	c *Consumer
	m *group.Member[Record]
}

// JoinGroup joins the consumer group groupID, subscribed to topics, and
// returns once the member holds its first assignment or ctx ends. Committed
// offsets are durable in __consumer_offsets, which the Broker creates on
// the first call (FlushSync, compacted).
//
// With ClusterOptions, the member talks to its group's coordinator,
// wherever it is: the Broker of this process's cluster that leads the
// group's partition of __consumer_offsets (CoordinatorID), this one or
// another. When that leadership moves (the Broker is shut down or
// crashes), the member follows it as a Kafka client does
// (group.MemberOptions.FindCoordinator): it retries every 100 ms until a
// new leader has loaded the partition, rejoins the group there and
// resumes from the committed offsets. It reads the records through this
// Broker's replicas, as it always does.
func (b *Broker) JoinGroup(ctx context.Context, groupID string, topics []string, opts *GroupOptions) (*GroupConsumer, error) {
	var o GroupOptions
	if opts != nil {
		o = *opts
	}
	if o.Reset > ResetNone {
		return nil, fmt.Errorf("%w: GroupOptions.Reset %d is not a reset policy", ErrInvalidConfig, o.Reset)
	}
	gs := &b.groups
	// On a cluster the group's coordinator is wherever its offsets
	// partition is led, and moves with it: the member finds it as a Kafka
	// client does, and starts from FindCoordinator's answer (nil here).
	var coord *group.Coordinator
	var find func(context.Context) (*group.Coordinator, error)
	if b.cluster != nil {
		if b.closed.Load() {
			return nil, ErrClosed
		}
		find = b.cluster.groupCoordinatorFinder(groupID)
	} else {
		var err error
		if coord, err = gs.coordinator(b); err != nil {
			return nil, err
		}
	}
	var co ConsumerOptions
	if o.Consumer != nil {
		co = *o.Consumer
	}
	co.Reset = o.Reset
	if co.Name == "" {
		co.Name = "group-" + groupID
	}
	c, err := b.NewConsumer(&co)
	if err != nil {
		return nil, err
	}
	m, err := group.Join(ctx, coord, groupID, groupReader{c}, &group.MemberOptions{
		Topics: topics, Assignors: o.Assignors, SessionTimeout: o.SessionTimeout,
		RebalanceTimeout: o.RebalanceTimeout, HeartbeatInterval: o.HeartbeatInterval,
		InstanceID: o.InstanceID, ClientID: co.Name, Reset: o.Reset,
		DisableAutoCommit: o.DisableAutoCommit, AutoCommitInterval: o.AutoCommitInterval,
		OnAssigned: o.OnAssigned, OnRevoked: o.OnRevoked, OnLost: o.OnLost,
		Logger: b.logger, FindCoordinator: find,
	})
	if err != nil {
		_ = c.Close()
		if errors.Is(err, group.ErrInvalidOptions) {
			return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
		}
		return nil, err
	}
	gc := &GroupConsumer{b: b, c: c, m: m}
	gs.mu.Lock()
	closed := gs.closed
	if !closed {
		if gs.consumers == nil {
			gs.consumers = map[*GroupConsumer]struct{}{}
		}
		gs.consumers[gc] = struct{}{}
	}
	gs.mu.Unlock()
	if closed {
		_ = gc.close()
		return nil, ErrClosed
	}
	return gc, nil
}

// Poll returns the next records of the member's partitions, blocking until
// there are some or ctx ends. Calling it marks the previous Poll's records
// processed (for auto-commit). It also runs the group's work: a pending
// rebalance with its callbacks, the auto-commit when due.
func (g *GroupConsumer) Poll(ctx context.Context) ([]Record, error) { return g.m.Poll(ctx) }

// Records iterates over the member's records, as Consumer.Records does; a
// record counts as processed once its loop body returned.
func (g *GroupConsumer) Records(ctx context.Context) iter.Seq2[Record, error] {
	return g.m.Records(ctx)
}

// Commit commits the position after every record handed out so far and
// returns once it is durable. A member that lost its partitions to a
// rebalance gets an error matching ErrCommitFailed.
func (g *GroupConsumer) Commit(ctx context.Context) error { return g.m.Commit(ctx) }

// CommitOffsets commits the given positions (next offsets to read) and
// returns once they are durable.
func (g *GroupConsumer) CommitOffsets(ctx context.Context, offsets map[TopicPartition]int64) error {
	return g.m.CommitOffsets(ctx, offsets)
}

// Seek moves the position in a partition the member owns, as
// Consumer.Seek does: to an offset (AtOffset), the log start
// (AtEarliest), the high watermark (AtLatest) or a time (AtTime). The next
// commit covers the new position. A partition the member does not own is
// an error.
func (g *GroupConsumer) Seek(topicName string, partition int32, to Offset) error {
	p, err := g.b.lookup(topicName, partition)
	if err != nil {
		return err
	}
	pos, err := g.c.resolve(p, to)
	if err != nil {
		return err
	}
	return g.m.Seek(TopicPartition{Topic: topicName, Partition: partition}, pos)
}

// Assignment returns the partitions the member owns, sorted.
func (g *GroupConsumer) Assignment() []TopicPartition { return g.m.Assignment() }

// Lag returns how many offsets of an owned partition are visible but not
// yet consumed by this member.
func (g *GroupConsumer) Lag(topicName string, partition int32) (int64, error) {
	return g.c.Lag(topicName, partition)
}

// Position returns the offset of the next record the member will read
// from an owned partition: where it started, until it reads.
func (g *GroupConsumer) Position(topicName string, partition int32) (int64, error) {
	return g.c.Position(topicName, partition)
}

// Group returns the group id; MemberID and Generation the member's
// current ones ("" and -1 while it is not in the group).
func (g *GroupConsumer) Group() string     { return g.m.Group() }
func (g *GroupConsumer) MemberID() string  { return g.m.MemberID() }
func (g *GroupConsumer) Generation() int32 { return g.m.Generation() }

// Close leaves the group (a static member keeps its place until its
// session times out): with auto-commit, the position after every record
// handed out is committed first, and OnRevoked runs. Then the underlying
// Consumer closes. Close is idempotent; later calls return ErrClosed.
func (g *GroupConsumer) Close() error {
	gs := &g.b.groups
	gs.mu.Lock()
	delete(gs.consumers, g)
	gs.mu.Unlock()
	return g.close()
}

func (g *GroupConsumer) close() error {
	err := g.m.Close()
	if errors.Is(err, group.ErrClosed) {
		return ErrClosed
	}
	if cerr := g.c.Close(); cerr != nil && !errors.Is(cerr, ErrClosed) {
		err = errors.Join(err, cerr)
	}
	return err
}

// GroupCoordinator returns the Broker's group coordinator, which answers
// Kafka's group APIs: DescribeGroups, ListGroups, DeleteGroups,
// OffsetFetch, and OffsetCommit with generation -1 to reset an Empty
// group's offsets (what a Kafka endpoint serves, and what an admin tool
// such as folio groups uses). Members join through JoinGroup instead. It
// creates __consumer_offsets on first use; a read-only Broker has none
// (ErrReadOnly), but its GroupLag works.
//
// With ClusterOptions, it coordinates the groups whose partition of the
// replicated __consumer_offsets this broker leads (CoordinatorID); a call
// about any other group gets an error matching group.ErrNotCoordinator
// (a *group.NotCoordinatorError), and group.ErrCoordinatorLoadInProgress
// while it loads a partition it has just come to lead.
func (b *Broker) GroupCoordinator() (*group.Coordinator, error) {
	return b.groups.coordinator(b)
}

// PartitionLag is one partition's progress for a group, as GroupLag
// reports it. It is the group package's type.
type PartitionLag = group.PartitionLag

// GroupLag returns, per partition, how far a group's committed offset
// trails the high watermark. A read-only Broker (OpenReadOnly) reads the
// commits from the files at each call, so a monitoring program can watch a
// running application's groups; a group it does not find is an error
// matching ErrGroupNotFound.
func (b *Broker) GroupLag(groupID string) ([]PartitionLag, error) {
	if b.readOnly {
		return b.readOnlyGroupLag(groupID)
	}
	c, err := b.groups.coordinator(b)
	if err != nil {
		return nil, err
	}
	return c.Lag(groupID)
}

// readOnlyGroupLag loads a coordinator over the offsets topic's read-only
// logs for one call: it writes nothing (its Store refuses appends), and a
// fresh load sees what the writer committed since the last call.
func (b *Broker) readOnlyGroupLag(groupID string) ([]PartitionLag, error) {
	if b.closed.Load() {
		return nil, ErrClosed
	}
	ts, ok := (*b.topics.Load())[group.OffsetsTopic]
	if !ok {
		return nil, fmt.Errorf("group %q: %w", groupID, group.ErrGroupIDNotFound)
	}
	c, _, err := b.loadCoordinator(ts)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	return c.Lag(groupID)
}

// GroupStats returns the group coordinator's counters: groups, members,
// rebalances, commits, members expired, and what the load of
// __consumer_offsets read, skipped and clamped. All zero before the first
// group call of a Broker that has no offsets topic yet.
func (b *Broker) GroupStats() group.Stats {
	g := &b.groups
	g.mu.Lock()
	c := g.coord
	g.mu.Unlock()
	if c == nil {
		return group.Stats{}
	}
	return c.Stats()
}

// closeGroups closes the Broker's group consumers (each commits and leaves)
// and then its coordinator. Close calls it before the logs close.
func (b *Broker) closeGroups() error {
	return b.groups.close()
}

// loadCoordinator loads a group coordinator over the partitions of
// __consumer_offsets (ts), and returns their logs with it.
func (b *Broker) loadCoordinator(ts *topicState) (*group.Coordinator, []*log.Log, error) {
	logs := make([]*log.Log, len(ts.parts))
	for i, p := range ts.parts {
		if p == nil {
			return nil, nil, fmt.Errorf("folio: partition %d of %s did not open", i, group.OffsetsTopic)
		}
		logs[i] = p.Log()
	}
	o := &group.Options{
		Store:  group.LogStore(logs),
		Topics: groupTopics{b},
		Logger: b.logger,
		Now:    b.opts.Now,
	}
	if b.cluster != nil && b.cluster.replicated(group.OffsetsTopic) {
		// Replicated: the cluster's manager loads each partition this
		// broker comes to lead and unloads it when it stops (cluster.go),
		// and a commit is acknowledged once committed (acks=all).
		o.Store = group.NewLogStore(logs, &group.LogStoreOptions{Append: b.cluster.offsetsAppend(ts), ScanToLogEnd: true})
		o.Unloaded = true
		// A load is a leadership move: the members live on (in other
		// brokers' processes, or Kafka clients) and go on heartbeating.
		o.LoadMembers = true
	}
	c, err := group.NewCoordinator(o)
	if err != nil {
		return nil, nil, fmt.Errorf("folio: loading %s: %w", group.OffsetsTopic, err)
	}
	return c, logs, nil
}

package folio

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/foliolog/folio/errs"
	"github.com/foliolog/folio/log"
	"github.com/foliolog/folio/partition"
	"github.com/foliolog/folio/record"
	"github.com/foliolog/folio/replica"
	"github.com/foliolog/folio/topic"
	"github.com/foliolog/folio/transport"
	"github.com/twmb/franz-go/pkg/kerr"
)

// ClusterOptions make a Broker one of several that replicate topics
// between them, Kafka's way (package replica): each partition has one
// leader per leader epoch, which takes produce and serves consumers, and
// followers that copy its log; a leader acknowledges an acks=all append
// once every in-sync replica holds it. The cluster's state (topics,
// replicas, leaders, ISRs) lives in Metadata, shared by the brokers of
// one process for now; a Raft-backed metadata for brokers in several
// processes is the next issue.
//
// With ClusterOptions, topics created through the Broker (CreateTopic, a
// Kafka client's CreateTopics or auto-creation) are created in Metadata
// with ReplicationFactor replicas per partition, and every broker hosting
// a replica creates the topic locally under the same id, at its next
// look at the metadata or the first request naming the topic.
// __consumer_offsets is not replicated (yet): it lives on one broker, the
// coordinator (CoordinatorID), which coordinates every group.
type ClusterOptions struct {
	// BrokerID is this broker's id, unique in the cluster, >= 0. Required.
	BrokerID int32

	// Metadata is the cluster's metadata, the same value for every broker
	// of the cluster. Required.
	Metadata *replica.Mem

	// Brokers is the address book: every broker's id and the host:port
	// Kafka clients (and followers) reach it at, this broker's own
	// included. Metadata responses list them. Required.
	Brokers map[int32]string

	// ReplicationFactor is the replicas of each partition of a topic
	// created through this broker, at most len(Brokers). Default
	// min(3, len(Brokers)).
	ReplicationFactor int

	// MinInsyncReplicas is min.insync.replicas: an acks=all append is
	// refused (NOT_ENOUGH_REPLICAS, nothing written) while a partition's
	// ISR is smaller, and its high watermark stands still. acks 0 and 1
	// are not held to it. Default 1.
	MinInsyncReplicas int

	// LagTime is replica.lag.time.max.ms: a follower that has not caught
	// up with its leader's log end for this long leaves the ISR. Default
	// replica.DefaultLagTime (30 s).
	LagTime time.Duration

	// UncleanLeaderElection is unclean.leader.election.enable: when every
	// in-sync replica is gone, a replica outside the ISR may be elected,
	// losing the records only the others held. Open sets it on Metadata
	// (Mem.Unclean) when true. Default false.
	UncleanLeaderElection bool
}

func (o *ClusterOptions) withDefaults() ClusterOptions {
	c := *o
	if c.ReplicationFactor == 0 {
		c.ReplicationFactor = min(3, len(c.Brokers))
	}
	if c.MinInsyncReplicas == 0 {
		c.MinInsyncReplicas = 1
	}
	if c.LagTime == 0 {
		c.LagTime = replica.DefaultLagTime
	}
	return c
}

func (o *ClusterOptions) validate() error {
	switch {
	case o.BrokerID < 0:
		return fmt.Errorf("%w: ClusterOptions.BrokerID %d is negative", ErrInvalidConfig, o.BrokerID)
	case o.Metadata == nil:
		return fmt.Errorf("%w: ClusterOptions.Metadata is nil", ErrInvalidConfig)
	case o.Brokers[o.BrokerID] == "":
		return fmt.Errorf("%w: ClusterOptions.Brokers has no address of broker %d itself", ErrInvalidConfig, o.BrokerID)
	case o.ReplicationFactor < 1 || o.ReplicationFactor > len(o.Brokers):
		return fmt.Errorf("%w: ClusterOptions.ReplicationFactor %d with %d brokers", ErrInvalidConfig, o.ReplicationFactor, len(o.Brokers))
	case o.MinInsyncReplicas < 1:
		return fmt.Errorf("%w: ClusterOptions.MinInsyncReplicas %d", ErrInvalidConfig, o.MinInsyncReplicas)
	case o.LagTime < 0:
		return fmt.Errorf("%w: ClusterOptions.LagTime %s is negative", ErrInvalidConfig, o.LagTime)
	}
	for id, addr := range o.Brokers {
		if _, _, err := splitHostPort(addr); err != nil {
			return fmt.Errorf("%w: ClusterOptions.Brokers[%d] %q: %w", ErrInvalidConfig, id, addr, err)
		}
	}
	return nil
}

func splitHostPort(addr string) (string, int32, error) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, err
	}
	port, err := strconv.ParseUint(p, 10, 16)
	if err != nil {
		return "", 0, fmt.Errorf("port %q: %w", p, err)
	}
	return host, int32(port), nil
}

// errNotCoordinator answers a group call on a broker of a cluster that
// does not coordinate groups: Kafka clients look for the coordinator
// again (FindCoordinator) and find CoordinatorID.
var errNotCoordinator = errs.New("folio: this broker does not coordinate groups", kerr.NotCoordinator)

// Cluster replication wiring, one per Broker opened with ClusterOptions.
//
// A manager goroutine looks at the metadata at every change (Mem.Changes)
// and every LagTime/2: it creates the replicated topics this broker holds
// replicas of, and puts each of their partitions in the role the metadata
// gives it. A leader in epoch E is a replica.Leader behind the
// partition's replica.Hook (it stamps E on its batches, holds acks=all
// appends until the high watermark passes them, shrinks the ISR of
// laggards on each tick); a follower runs a fetch loop: it reconciles its
// log with the leader's by epoch lineage first (replica.Reconcile, over
// OffsetForLeaderEpoch), then copies the leader's batches with
// partition.AppendFollower and takes its high watermark from the leader.
// A change of role stops the old one before the new one starts: a
// follower that becomes leader stops fetching first, a leader that
// becomes follower is fenced (its waiting appends fail, indeterminate)
// before it reconciles.
type cluster struct {
	b    *Broker
	opts ClusterOptions
	meta *replica.Mem
	inc  int64 // this broker's incarnation
	link replicaLink

	mu    sync.Mutex // guards parts
	parts map[replica.TopicPartition]*replPart

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// replPart is one replicated partition on this broker.
type replPart struct {
	tp   replica.TopicPartition
	hook *replica.Hook
	part atomic.Pointer[partition.Partition] // set once the partition is open

	// appendMu guards appended: closed and replaced after every append,
	// so a follower's fetch waiting at the leader's end wakes.
	appendMu sync.Mutex
	appended chan struct{}

	// The role, changed by the manager goroutine only.
	leader     *replica.Leader
	following  int32 // the leader followed, -1 none
	followEpch int32
	stopFollow context.CancelFunc
	followDone chan struct{}
}

func (rp *replPart) partOrNil() *partition.Partition {
	if rp == nil {
		return nil
	}
	return rp.part.Load()
}

func (rp *replPart) appendedChan() <-chan struct{} {
	rp.appendMu.Lock()
	defer rp.appendMu.Unlock()
	return rp.appended
}

// replHook is the partition's Replication: the replica.Hook, and the
// signal that the log end moved for followers waiting on it.
type replHook struct {
	*replica.Hook
	rp *replPart
}

func (h replHook) AfterAppend(ctx context.Context, p *partition.Partition, first, last int64) error {
	h.rp.appendMu.Lock()
	close(h.rp.appended)
	h.rp.appended = make(chan struct{})
	h.rp.appendMu.Unlock()
	return h.Hook.AfterAppend(ctx, p, first, last)
}

func newCluster(b *Broker, o *ClusterOptions) (*cluster, error) {
	opts := o.withDefaults()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	if opts.UncleanLeaderElection {
		opts.Metadata.SetUnclean(true)
	}
	// The incarnation rises with every start, so that the metadata never
	// readmits what this broker held before a crash (KIP-903).
	inc := max(time.Now().UnixNano(), opts.Metadata.Incarnation(opts.BrokerID)+1)
	ctx, cancel := context.WithCancel(context.Background())
	return &cluster{b: b, opts: opts, meta: opts.Metadata, inc: inc, link: localLinkOf(opts.Metadata),
		parts: map[replica.TopicPartition]*replPart{}, ctx: ctx, cancel: cancel}, nil
}

// replication returns the Replication partition p of topic in opens with:
// a hook when the metadata holds the topic under in's id, nil (one
// broker) otherwise.
func (c *cluster) replication(in topic.Info, p int32) partition.Replication {
	rec, ok := c.meta.Topic(in.Name)
	if !ok || rec.ID != in.ID {
		return nil
	}
	tp := replica.TopicPartition{Topic: in.Name, Partition: p}
	c.mu.Lock()
	defer c.mu.Unlock()
	rp := c.parts[tp]
	if rp == nil {
		rp = &replPart{tp: tp, hook: replica.NewHook(tp), appended: make(chan struct{}), following: -1}
		c.parts[tp] = rp
	}
	return replHook{rp.hook, rp}
}

// start registers the broker and runs the manager.
func (c *cluster) start() {
	c.meta.Register(c.opts.BrokerID, c.inc)
	c.link.add(c.opts.BrokerID, c.b)
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		c.manage()
	}()
}

func (c *cluster) manage() {
	tick := time.NewTicker(max(c.opts.LagTime/2, time.Millisecond))
	defer tick.Stop()
	for {
		_, next := c.meta.Changes()
		c.sync()
		select {
		case <-c.ctx.Done():
			return
		case <-next:
		case <-tick.C:
			c.tickLeaders()
		}
	}
}

// stop is the broker's controlled shutdown: it hands each partition it
// leads to another in-sync replica (or leaves it leaderless), leaves the
// ISRs, stops its followers and leaders, and leaves the in-process link.
func (c *cluster) stop() {
	c.link.remove(c.opts.BrokerID, c.b)
	for _, rp := range c.snapshot() {
		st, err := c.meta.Partition(c.ctx, rp.tp)
		if err != nil {
			continue
		}
		if st.Leader == c.opts.BrokerID {
			next := slices.IndexFunc(st.ISR, func(m replica.Member) bool { return m.ID != c.opts.BrokerID })
			if next >= 0 {
				if _, _, err := c.meta.Elect(rp.tp, st.ISR[next].ID); err == nil {
					continue
				}
			}
		}
		if st.InISR(c.opts.BrokerID) || st.Leader == c.opts.BrokerID {
			if st, err = c.meta.Fence(rp.tp, c.opts.BrokerID); err == nil && st.Leader >= 0 {
				// As Kafka's controller tells the leader, so that it stops
				// counting this broker before the next append.
				c.link.refresh(st.Leader, rp.tp)
			}
		}
	}
	c.cancel()
	c.wg.Wait()
	for _, rp := range c.snapshot() {
		c.stopFollowing(rp)
		if rp.leader != nil {
			_ = rp.leader.Refresh(context.Background())
			rp.hook.SetLeader(nil)
		}
	}
}

func (c *cluster) snapshot() []*replPart {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]*replPart, 0, len(c.parts))
	for _, rp := range c.parts {
		out = append(out, rp)
	}
	return out
}

func (c *cluster) part(tp replica.TopicPartition) *replPart {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.parts[tp]
}

// hosts reports whether this broker holds a replica of some partition of
// rec.
func (c *cluster) hosts(rec replica.TopicRecord) bool {
	for p := range rec.Config.Partitions {
		st, err := c.meta.Partition(c.ctx, replica.TopicPartition{Topic: rec.Name, Partition: p})
		if err == nil && slices.Contains(st.Replicas, c.opts.BrokerID) {
			return true
		}
	}
	return false
}

// ensureTopic creates the local replica of the replicated topic name if
// the metadata holds one this broker hosts and the Broker does not have
// it yet; it reports whether the topic is local now.
func (c *cluster) ensureTopic(name string) bool {
	if _, ok := (*c.b.topics.Load())[name]; ok {
		return true
	}
	rec, ok := c.meta.Topic(name)
	if !ok || !c.hosts(rec) {
		return false
	}
	_, err := c.b.createReplicaTopic(rec)
	if err != nil && !errors.Is(err, ErrTopicExists) {
		c.b.logger.Error("folio: creating a replica of a cluster topic", "topic", name, "err", err)
		return false
	}
	return true
}

// sync brings every replicated partition to the role the metadata gives
// it.
func (c *cluster) sync() {
	for _, rec := range c.meta.Topics() {
		c.ensureTopic(rec.Name)
	}
	for _, rp := range c.snapshot() {
		if rp.part.Load() == nil {
			continue
		}
		st, err := c.meta.Partition(c.ctx, rp.tp)
		if err != nil {
			continue
		}
		c.apply(rp, st)
	}
}

func (c *cluster) apply(rp *replPart, st replica.State) {
	me := c.opts.BrokerID
	if st.Leader == me {
		if rp.leader != nil && !rp.leader.Fenced() && rp.leader.Epoch() == st.LeaderEpoch {
			_ = rp.leader.Refresh(c.ctx)
			return
		}
		c.stopFollowing(rp)
		ld, err := replica.NewLeader(c.ctx, c.meta, rp.tp, me, rp.part.Load(), &replica.LeaderOptions{
			MinInsyncReplicas: c.opts.MinInsyncReplicas, LagTime: c.opts.LagTime, Now: c.b.opts.Now})
		if err != nil {
			c.b.logger.Warn("folio: taking the lead", "partition", rp.tp.String(), "err", err)
			return
		}
		rp.leader = ld
		rp.hook.SetLeader(ld)
		c.b.logger.Info("folio: leading", "partition", rp.tp.String(), "epoch", st.LeaderEpoch, "isr", len(st.ISR))
		return
	}
	if rp.leader != nil {
		// Fenced first: its held appends fail (indeterminate) before this
		// replica truncates anything as a follower.
		_ = rp.leader.Refresh(c.ctx)
		rp.hook.SetLeader(nil)
		rp.leader = nil
	}
	if !slices.Contains(st.Replicas, me) || st.Leader < 0 {
		c.stopFollowing(rp)
		return
	}
	if rp.following == st.Leader && rp.followEpch == st.LeaderEpoch {
		return
	}
	c.stopFollowing(rp)
	ctx, cancel := context.WithCancel(c.ctx)
	done := make(chan struct{})
	rp.following, rp.followEpch, rp.stopFollow, rp.followDone = st.Leader, st.LeaderEpoch, cancel, done
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		defer close(done)
		c.follow(ctx, rp, st.Leader, st.LeaderEpoch)
	}()
}

func (c *cluster) stopFollowing(rp *replPart) {
	if rp.stopFollow == nil {
		return
	}
	rp.stopFollow()
	<-rp.followDone
	rp.following, rp.stopFollow, rp.followDone = -1, nil, nil
}

func (c *cluster) tickLeaders() {
	for _, rp := range c.snapshot() {
		if ld := rp.leader; ld != nil {
			_ = ld.Tick(c.ctx)
		}
	}
}

// Fetch sizes and waits of a follower.
const (
	followerFetchBytes = 1 << 20
	followerMaxWait    = 250 * time.Millisecond
	followerBackoff    = 50 * time.Millisecond
)

// follow is the follower's loop on partition rp, led by leader in epoch:
// reconcile, then fetch until ctx ends or the leader refuses (a newer
// epoch: the manager starts the next loop once the metadata says so).
func (c *cluster) follow(ctx context.Context, rp *replPart, leader, epoch int32) {
	part := rp.part.Load()
	fl := followerLog{part}
	for {
		if ctx.Err() != nil {
			return
		}
		le, end, err := c.link.endOffsetForEpoch(ctx, leader, rp.tp, epoch, fl.LastEpoch())
		if err == nil {
			var done bool
			if done, err = replica.Reconcile(fl, le, end); done && err == nil {
				break
			}
		}
		if err != nil && !c.backoff(ctx, rp, err) {
			return
		}
	}
	for ctx.Err() == nil {
		f := replica.Fetch{Replica: c.opts.BrokerID, Incarnation: c.inc, LeaderEpoch: epoch, Offset: part.LogEndOffset()}
		records, hw, err := c.link.fetch(ctx, leader, rp.tp, f, followerFetchBytes, followerMaxWait)
		if err == nil && len(records) > 0 {
			err = appendFollowed(part, records)
		}
		if err == nil && hw > part.HighWatermark() {
			if serr := part.SetHighWatermark(min(hw, part.LogEndOffset())); serr != nil {
				c.b.logger.Debug("folio: follower high watermark", "partition", rp.tp.String(), "err", serr)
			}
		}
		if err != nil && !c.backoff(ctx, rp, err) {
			return
		}
	}
}

// backoff waits after a failed step of a follower (a leader not yet
// leading, fenced, unreachable) and reports whether to go on: until ctx
// ends, which the manager does once the metadata names another leader or
// epoch, the follower retries.
func (c *cluster) backoff(ctx context.Context, rp *replPart, err error) bool {
	if ctx.Err() != nil {
		return false
	}
	c.b.logger.Debug("folio: follower retries", "partition", rp.tp.String(), "err", err)
	t := time.NewTimer(followerBackoff)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// splitBatches cuts a fetch response's records into whole batches.
func splitBatches(records []byte) ([]record.Batch, error) {
	var out []record.Batch
	for len(records) > 0 {
		size, err := record.CheckHeader(records)
		if err == nil && size > len(records) {
			err = fmt.Errorf("a batch of %d bytes in %d", size, len(records))
		}
		if err != nil {
			return nil, fmt.Errorf("folio: records from the leader: %w", err)
		}
		out = append(out, record.Batch(records[:size:size]))
		records = records[size:]
	}
	return out, nil
}

// appendFollowed appends the leader's batches as they are.
func appendFollowed(p *partition.Partition, records []byte) error {
	batches, err := splitBatches(records)
	if err != nil {
		return err
	}
	_, _, err = p.AppendFollower(batches...)
	return err
}

// followerLog is a partition as replica.Reconcile sees it.
type followerLog struct{ p *partition.Partition }

func (f followerLog) LogEndOffset() int64 { return f.p.LogEndOffset() }
func (f followerLog) LastEpoch() int32    { return f.p.Log().LatestEpoch() }
func (f followerLog) EndOffsetForEpoch(epoch int32) (int32, int64) {
	return f.p.EndOffsetForEpoch(epoch)
}
func (f followerLog) TruncateTo(offset int64) error { return f.p.TruncateTo(offset) }

// serveEndOffsetForEpoch is a leader's answer to a follower's
// OffsetForLeaderEpoch: only in the leader's own epoch (KIP-320).
func (c *cluster) serveEndOffsetForEpoch(tp replica.TopicPartition, currentEpoch, epoch int32) (int32, int64, error) {
	rp := c.part(tp)
	if rp == nil || rp.part.Load() == nil {
		return -1, -1, fmt.Errorf("%w: %s", replica.ErrNotLeader, tp)
	}
	ld := rp.hook.Leader()
	if ld == nil {
		return -1, -1, fmt.Errorf("%w: %s: broker %d follows", replica.ErrNotLeader, tp, c.opts.BrokerID)
	}
	if err := ld.CheckEpoch(currentEpoch); err != nil {
		return -1, -1, err
	}
	le, end := rp.part.Load().EndOffsetForEpoch(epoch)
	return le, end, nil
}

// serveFetch is a leader's answer to a follower's fetch: it records the
// follower's position (replica.Leader.Fetched), then returns the batches
// from f.Offset up to the log end, waiting up to maxWait for one, with
// the high watermark.
func (c *cluster) serveFetch(ctx context.Context, tp replica.TopicPartition, f replica.Fetch, maxBytes int, maxWait time.Duration) ([]byte, int64, error) {
	rp := c.part(tp)
	part := rp.partOrNil()
	if part == nil {
		return nil, -1, fmt.Errorf("%w: %s", replica.ErrNotLeader, tp)
	}
	ld := rp.hook.Leader()
	if ld == nil {
		return nil, -1, fmt.Errorf("%w: %s: broker %d follows", replica.ErrNotLeader, tp, c.opts.BrokerID)
	}
	if _, err := ld.Fetched(ctx, f); err != nil {
		return nil, -1, err
	}
	t := time.NewTimer(maxWait)
	defer t.Stop()
	for {
		more := rp.appendedChan()
		v, err := part.Read(f.Offset, maxBytes, log.BoundLogEnd)
		if err == nil {
			b, berr := v.Bytes()
			out := slices.Clone(b)
			v.Release()
			hw, _ := ld.HighWatermark()
			return out, hw, berr
		}
		if !errors.Is(err, log.ErrNoData) {
			return nil, -1, err
		}
		select {
		case <-more:
		case <-t.C:
			hw, _ := ld.HighWatermark()
			return nil, hw, nil
		case <-ctx.Done():
			return nil, -1, context.Cause(ctx)
		}
	}
}

// replicaLink is how a follower reaches its leader: OffsetForLeaderEpoch
// and Fetch as a follower sends them. The in-process link (localLink)
// calls the leader Broker directly; Kafka's Fetch over the network (the
// transport's follower fetch) is the link across processes.
type replicaLink interface {
	endOffsetForEpoch(ctx context.Context, leader int32, tp replica.TopicPartition, currentEpoch, epoch int32) (int32, int64, error)
	fetch(ctx context.Context, leader int32, tp replica.TopicPartition, f replica.Fetch, maxBytes int, maxWait time.Duration) ([]byte, int64, error)
	// refresh has the leader adopt the metadata's state of tp now.
	refresh(leader int32, tp replica.TopicPartition)
	add(id int32, b *Broker)
	remove(id int32, b *Broker)
}

// localLink connects the brokers of one process opened on one Metadata.
type localLink struct {
	mu      sync.Mutex
	brokers map[int32]*Broker
}

var (
	localLinksMu sync.Mutex
	localLinks   = map[*replica.Mem]*localLink{}
)

func localLinkOf(m *replica.Mem) *localLink {
	localLinksMu.Lock()
	defer localLinksMu.Unlock()
	l := localLinks[m]
	if l == nil {
		l = &localLink{brokers: map[int32]*Broker{}}
		localLinks[m] = l
	}
	return l
}

func (l *localLink) add(id int32, b *Broker) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.brokers[id] = b
}

func (l *localLink) remove(id int32, b *Broker) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.brokers[id] == b {
		delete(l.brokers, id)
	}
}

// errBrokerUnreachable is a leader the link does not reach (stopped).
var errBrokerUnreachable = errs.New("folio: broker unreachable", kerr.BrokerNotAvailable)

func (l *localLink) peer(id int32) (*cluster, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.brokers[id]
	if b == nil || b.cluster == nil {
		return nil, fmt.Errorf("%w: %d", errBrokerUnreachable, id)
	}
	return b.cluster, nil
}

func (l *localLink) endOffsetForEpoch(_ context.Context, leader int32, tp replica.TopicPartition, currentEpoch, epoch int32) (int32, int64, error) {
	c, err := l.peer(leader)
	if err != nil {
		return -1, -1, err
	}
	return c.serveEndOffsetForEpoch(tp, currentEpoch, epoch)
}

func (l *localLink) fetch(ctx context.Context, leader int32, tp replica.TopicPartition, f replica.Fetch, maxBytes int, maxWait time.Duration) ([]byte, int64, error) {
	c, err := l.peer(leader)
	if err != nil {
		return nil, -1, err
	}
	return c.serveFetch(ctx, tp, f, maxBytes, maxWait)
}

// errReplicatedChange refuses a change the cluster does not replicate
// yet: deleting a replicated topic or adding partitions to it.
var errReplicatedChange = errs.New("folio: not supported on a replicated topic yet", kerr.PolicyViolation)

// createTopic creates a replicated topic in the metadata, ReplicationFactor
// replicas per partition spread over the brokers (partition p's preferred
// leader is the p-th broker by id, round robin), then this broker's
// replica if it hosts one; the other brokers create theirs at their next
// look at the metadata.
func (c *cluster) createTopic(name string, cfg TopicConfig) (TopicInfo, error) {
	if err := partition.ValidateConfig(cfg); err != nil {
		return TopicInfo{}, fmt.Errorf("folio: topic %q: %w: %w", name, ErrInvalidConfig, err)
	}
	if err := cfg.Validate(); err != nil {
		return TopicInfo{}, fmt.Errorf("folio: topic %q: %w", name, err)
	}
	if err := c.b.writable(); err != nil {
		return TopicInfo{}, err
	}
	rec := replica.TopicRecord{Name: name, ID: topic.NewID(), Config: cfg.WithDefaults()}
	ids := make([]int32, 0, len(c.opts.Brokers))
	for id := range c.opts.Brokers {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	assignment := make([][]int32, rec.Config.Partitions)
	for p := range assignment {
		for r := range c.opts.ReplicationFactor {
			assignment[p] = append(assignment[p], ids[(p+r)%len(ids)])
		}
	}
	if err := c.meta.CreateTopic(rec, assignment); err != nil {
		c.ensureTopic(name)
		if errors.Is(err, topic.ErrExists) {
			return TopicInfo{}, err
		}
		return TopicInfo{}, fmt.Errorf("folio: creating topic %q in the cluster: %w", name, err)
	}
	if c.ensureTopic(name) {
		return c.b.DescribeTopic(name)
	}
	return TopicInfo{Name: rec.Name, ID: rec.ID, Config: rec.Config}, nil
}

// replicated reports whether name is a replicated topic.
func (c *cluster) replicated(name string) bool {
	_, ok := c.meta.Topic(name)
	return ok
}

// coordinatorID is the broker that coordinates every group and holds
// __consumer_offsets, unreplicated for now: the lowest id of the address
// book.
func (c *cluster) coordinatorID() int32 {
	first := true
	var least int32
	for id := range c.opts.Brokers {
		if first || id < least {
			least, first = id, false
		}
	}
	return least
}

// ClusterBrokers lists the cluster's brokers from the address book, by id,
// for a Kafka endpoint's Metadata (transport.ClusterBackend); ok is false
// for a Broker opened without ClusterOptions.
func (b *Broker) ClusterBrokers() (brokers []transport.ClusterBroker, ok bool) {
	if b.cluster == nil {
		return nil, false
	}
	for id, addr := range b.cluster.opts.Brokers {
		host, port, _ := splitHostPort(addr) // validated at Open
		brokers = append(brokers, transport.ClusterBroker{ID: id, Host: host, Port: port})
	}
	slices.SortFunc(brokers, func(x, y transport.ClusterBroker) int { return int(x.ID) - int(y.ID) })
	return brokers, true
}

// PartitionReplicas returns a replicated partition's leader, leader
// epoch, replicas and ISR as the cluster's metadata holds them
// (transport.ClusterBackend); ok is false for a partition of an
// unreplicated topic.
func (b *Broker) PartitionReplicas(topicName string, p int32) (transport.PartitionReplicas, bool) {
	if b.cluster == nil {
		return transport.PartitionReplicas{}, false
	}
	st, err := b.cluster.meta.Partition(context.Background(), replica.TopicPartition{Topic: topicName, Partition: p})
	if err != nil {
		return transport.PartitionReplicas{}, false
	}
	r := transport.PartitionReplicas{Leader: st.Leader, LeaderEpoch: st.LeaderEpoch, Replicas: st.Replicas}
	for _, m := range st.ISR {
		r.ISR = append(r.ISR, m.ID)
	}
	return r, true
}

// CoordinatorID returns the broker that coordinates every consumer group
// (transport.ClusterBackend): the lowest id of the address book, which
// holds __consumer_offsets unreplicated for now; for a single Broker it
// is -1.
func (b *Broker) CoordinatorID() int32 {
	if b.cluster == nil {
		return -1
	}
	return b.cluster.coordinatorID()
}

func (l *localLink) refresh(leader int32, tp replica.TopicPartition) {
	c, err := l.peer(leader)
	if err != nil {
		return
	}
	if rp := c.part(tp); rp != nil {
		if ld := rp.hook.Leader(); ld != nil {
			_ = ld.Refresh(context.Background())
		}
	}
}

var _ transport.ClusterBackend = (*Broker)(nil)

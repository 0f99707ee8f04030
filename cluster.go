package folio

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/foliolog/folio/errs"
	"github.com/foliolog/folio/group"
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
// __consumer_offsets is replicated like any topic (replication factor
// min(3, len(Brokers)), MinInsyncReplicas as configured), created at the
// first group call or FindCoordinator: the coordinator of a group is the
// leader of its partition, group.PartitionFor(group, n) (CoordinatorID),
// which loads the partition's groups when it takes the lead and drops
// them when it loses it (Kafka's onElection and onResignation); the other
// brokers answer NOT_COORDINATOR. A commit is acknowledged once the
// partition's high watermark passed it (acks=all), within
// OffsetCommitTimeout. Kafka clients find the coordinator with
// FindCoordinator; in-process members (JoinGroup) find it among the
// cluster's Brokers of this process, and follow it when it moves.
//
// A data directory a broker used alone joins the cluster with its topics:
// opened with ClusterOptions while the metadata holds no
// __consumer_offsets, it enters its own __consumer_offsets and its other
// topics into the metadata, led by this broker, and the other replicas
// copy them (see adoptStandalone). Open it before any other broker
// creates the cluster's __consumer_offsets; after that, Open fails rather
// than split the groups' commits between two topics. A directory once
// opened with ClusterOptions (ClusterFile) never adopts: its topics may
// be stale replicas.
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
	// (Mem.Unclean) when true, for every topic of the cluster, as Kafka's
	// broker-level default; a topic's own
	// TopicConfig.UncleanLeaderElection allows it for that topic. Default
	// false: the partition stays leaderless until an in-sync replica is
	// back.
	UncleanLeaderElection bool

	// SessionTimeout is broker.session.timeout.ms: the broker heartbeats
	// to Metadata every SessionTimeout/4, and a broker that has not
	// heartbeat for SessionTimeout is taken for crashed by the others,
	// which elect new leaders for its partitions (replica.Mem's
	// ExpireSessions). Default DefaultSessionTimeout.
	SessionTimeout time.Duration
}

// DefaultSessionTimeout is ClusterOptions.SessionTimeout's default,
// Kafka's broker.session.timeout.ms.
const DefaultSessionTimeout = 9 * time.Second

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
	if c.SessionTimeout == 0 {
		c.SessionTimeout = DefaultSessionTimeout
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
	case o.SessionTimeout < 0:
		return fmt.Errorf("%w: ClusterOptions.SessionTimeout %s is negative", ErrInvalidConfig, o.SessionTimeout)
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
// holds no replica of __consumer_offsets, so coordinates no group: Kafka
// clients look for the coordinator again (FindCoordinator) and find
// CoordinatorID.
var errNotCoordinator = errs.New("folio: this broker does not coordinate groups", kerr.NotCoordinator)

// OffsetCommitTimeout bounds how long a commit to a replicated
// __consumer_offsets waits for its acknowledgement (acks=all): Kafka's
// offsets.commit.timeout.ms. A commit that times out is answered
// COORDINATOR_NOT_AVAILABLE, and its outcome is unknown: the client
// retries.
const OffsetCommitTimeout = 5 * time.Second

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
	// follower copies the partitions this broker follows from their
	// leaders over the Kafka endpoint (replica.Follower).
	follower *replica.Follower

	// syncMu guards synced and syncedCh: the metadata version the
	// manager last brought the roles to, and a channel closed when it
	// moves (waitSynced).
	syncMu   sync.Mutex
	synced   int64
	syncedCh chan struct{}

	mu    sync.Mutex // guards parts
	parts map[replica.TopicPartition]*replPart

	// crashed makes stop skip the controlled shutdown's hand-over, as a
	// crash would (tests).
	crashed atomic.Bool
	// uncleanElections counts the unclean elections that made this broker
	// a leader (Stats.UncleanElections).
	uncleanElections atomic.Int64

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// replPart is one replicated partition on this broker.
type replPart struct {
	tp replica.TopicPartition
	// id is the topic incarnation the partition was opened for: the
	// metadata holding the name under another id means that one was
	// deleted (reconcileTopics).
	id   topic.ID
	hook *replica.Hook
	part atomic.Pointer[partition.Partition] // set once the partition is open

	// coordMu orders this partition's loads into the group coordinator
	// and its unloads, for a partition of __consumer_offsets.
	coordMu sync.Mutex

	// The role, changed by the manager goroutine only.
	leader       *replica.Leader
	followed     bool // handed to the Follower
	followLeader int32
	followEpoch  int32
}

// replHook is the partition's Replication, the replica.Hook, with the
// partition it belongs to.
type replHook struct {
	*replica.Hook
	rp *replPart
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
	c := &cluster{b: b, opts: opts, meta: opts.Metadata, inc: inc,
		parts: map[replica.TopicPartition]*replPart{}, syncedCh: make(chan struct{})}
	f, err := replica.NewFollower(&replica.FollowerOptions{
		ID: opts.BrokerID, Incarnation: inc, Metadata: opts.Metadata, Logger: b.logger,
		Addr: func(id int32) (string, error) {
			if addr, ok := opts.Brokers[id]; ok {
				return addr, nil
			}
			return "", fmt.Errorf("folio: broker %d is not in ClusterOptions.Brokers", id)
		},
	})
	if err != nil {
		return nil, err
	}
	c.follower = f
	c.ctx, c.cancel = context.WithCancel(context.Background())
	return c, nil
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
		rp = &replPart{tp: tp, id: in.ID, hook: replica.NewHook(tp)}
		c.parts[tp] = rp
	}
	return replHook{rp.hook, rp}
}

// start registers the broker, opens its session, and runs the manager.
func (c *cluster) start() {
	registerClusterBroker(c)
	c.meta.Register(c.opts.BrokerID, c.inc)
	c.heartbeat()
	c.wg.Add(2)
	go func() {
		defer c.wg.Done()
		c.manage()
	}()
	go func() {
		defer c.wg.Done()
		c.beat()
	}()
}

// beat heartbeats every SessionTimeout/4 on a goroutine of its own, so
// that a manager busy creating a topic or changing roles does not let
// the session lapse.
func (c *cluster) beat() {
	t := time.NewTicker(max(c.opts.SessionTimeout/4, time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-t.C:
			c.heartbeat()
		}
	}
}

func (c *cluster) manage() {
	tick := time.NewTicker(max(c.opts.LagTime/2, time.Millisecond))
	defer tick.Stop()
	for {
		v, next := c.meta.Changes()
		c.sync()
		c.setSynced(v)
		select {
		case <-c.ctx.Done():
			return
		case <-next:
		case <-tick.C:
			c.tickLeaders()
		}
	}
}

// heartbeat keeps this broker's session alive and plays the controller:
// brokers whose sessions lapsed are taken for crashed, and their
// partitions get new leaders (replica.Mem's ExpireSessions).
func (c *cluster) heartbeat() {
	now := c.b.opts.Now()
	if err := c.meta.Heartbeat(c.opts.BrokerID, c.inc, now); err != nil {
		c.b.logger.Error("folio: heartbeat to the cluster metadata", "broker", c.opts.BrokerID, "err", err)
	}
	for _, e := range c.meta.ExpireSessions(now, c.opts.SessionTimeout) {
		c.b.logger.Info("folio: a broker's session lapsed: new leader", "partition", e.String(),
			"leader", e.Leader, "epoch", e.LeaderEpoch, "unclean", e.Unclean)
	}
}

// stop is the broker's controlled shutdown: it hands each partition it
// leads to another in-sync replica (or leaves it leaderless), leaves the
// ISRs, stops its followers and leaders, and leaves the in-process link.
func (c *cluster) stop() {
	// First: in-process members stop finding this broker's coordinator
	// before it hands its offsets partitions over.
	unregisterClusterBroker(c)
	if c.crashed.Load() {
		c.halt()
		return
	}
	for _, rp := range c.snapshot() {
		st, err := c.meta.Partition(c.ctx, rp.tp)
		if err != nil {
			continue
		}
		if st.Leader == c.opts.BrokerID {
			next := slices.IndexFunc(st.ISR, func(m replica.Member) bool { return m.ID != c.opts.BrokerID })
			if next >= 0 {
				if st2, _, err := c.meta.Elect(rp.tp, st.ISR[next].ID); err == nil {
					st = st2 // led by another now; out of its ISR below
					if ld := rp.hook.Leader(); ld != nil {
						_ = ld.Refresh(c.ctx) // fenced: it admits no more appends
					}
				}
			}
		}
		if st.InISR(c.opts.BrokerID) || st.Leader == c.opts.BrokerID {
			_, _ = c.meta.Fence(rp.tp, c.opts.BrokerID)
		}
	}
	c.meta.EndSession(c.opts.BrokerID)
	c.halt()
}

// halt stops the manager, the followers and the leaders without a word to
// the metadata: all of a crash but the lost bytes. The others learn of it
// when the session lapses.
func (c *cluster) halt() {
	c.cancel()
	c.wg.Wait()
	_ = c.follower.Close()
	for _, rp := range c.snapshot() {
		if rp.leader != nil {
			_ = rp.leader.Refresh(context.Background())
			rp.hook.SetLeader(nil)
		}
	}
}

func (c *cluster) snapshot() []*replPart {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Collect(maps.Values(c.parts))
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
	c.reconcileTopics()
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
		c.loadOffsets(rp, ld)
		if st.Recovering {
			// An unclean election made this replica the leader: what
			// only the others held is lost, and consumers past its log
			// end learn it on their next fetch (KIP-320).
			c.uncleanElections.Add(1)
			c.b.logger.Warn("folio: unclean leader election: leading from outside the ISR, records only the others held are lost",
				"partition", rp.tp.String(), "epoch", st.LeaderEpoch, "logEnd", rp.part.Load().LogEndOffset())
			c.meta.Recovered(rp.tp, me, st.LeaderEpoch)
			return
		}
		c.b.logger.Info("folio: leading", "partition", rp.tp.String(), "epoch", st.LeaderEpoch, "isr", len(st.ISR))
		return
	}
	if rp.leader != nil {
		// Fenced first: its held appends fail (indeterminate) before this
		// replica truncates anything as a follower.
		_ = rp.leader.Refresh(c.ctx)
		rp.hook.SetLeader(nil)
		rp.leader = nil
		c.unloadOffsets(rp)
	}
	if !slices.Contains(st.Replicas, me) {
		c.stopFollowing(rp)
		return
	}
	if rp.followed && rp.followLeader == st.Leader && rp.followEpoch == st.LeaderEpoch {
		return
	}
	// A new leader or epoch: follow afresh, reconciling first.
	c.stopFollowing(rp)
	if err := c.follower.Follow(rp.tp, rp.part.Load()); err != nil {
		c.b.logger.Warn("folio: following", "partition", rp.tp.String(), "err", err)
		return
	}
	rp.followed, rp.followLeader, rp.followEpoch = true, st.Leader, st.LeaderEpoch
}

// loadOffsets makes this broker the coordinator of the groups of rp, a
// partition of __consumer_offsets it now leads as ld (Kafka's
// onElection): on a goroutine of its own, so that the manager goes on
// while it reads the partition, the coordinator drops what it held of an
// earlier epoch and loads the partition to its log end, which holds every
// commit acknowledged before. Until then the partition's groups get
// COORDINATOR_LOAD_IN_PROGRESS. It does nothing for other topics.
func (c *cluster) loadOffsets(rp *replPart, ld *replica.Leader) {
	if rp.tp.Topic != group.OffsetsTopic {
		return
	}
	c.wg.Go(func() {
		rp.coordMu.Lock()
		defer rp.coordMu.Unlock()
		if rp.hook.Leader() != ld || ld.Fenced() {
			return // lost again meanwhile: unloadOffsets ran or will
		}
		coord, err := c.b.groups.coordinator(c.b)
		if err != nil {
			if !errors.Is(err, ErrClosed) {
				c.b.logger.Error("folio: starting the group coordinator", "partition", rp.tp.String(), "err", err)
			}
			return
		}
		_ = coord.UnloadPartition(rp.tp.Partition) // another epoch's state is stale
		start := time.Now()
		if err := coord.LoadPartition(c.ctx, rp.tp.Partition); err != nil {
			if c.ctx.Err() == nil && !errors.Is(err, group.ErrClosed) {
				c.b.logger.Error("folio: loading the groups of an offsets partition this broker leads", "partition", rp.tp.String(), "err", err)
			}
			return
		}
		c.b.logger.Info("folio: coordinating the groups of an offsets partition", "partition", rp.tp.String(),
			"epoch", ld.Epoch(), "took", time.Since(start))
	})
}

// unloadOffsets drops the groups of rp, a partition of __consumer_offsets
// this broker no longer leads (Kafka's onResignation), once its leader is
// fenced: their members get NOT_COORDINATOR and find the new leader. A
// load in progress finishes first.
func (c *cluster) unloadOffsets(rp *replPart) {
	if rp.tp.Topic != group.OffsetsTopic {
		return
	}
	rp.coordMu.Lock()
	defer rp.coordMu.Unlock()
	if coord := c.b.groups.loaded.Load(); coord != nil {
		_ = coord.UnloadPartition(rp.tp.Partition)
	}
}

// ensureOffsetsTopic creates __consumer_offsets in the metadata, replicated
// with min(3, len(Brokers)) replicas per partition, unless it is there,
// and this broker's replica if it hosts one.
func (c *cluster) ensureOffsetsTopic() error {
	if _, ok := c.meta.Topic(group.OffsetsTopic); ok {
		c.ensureTopic(group.OffsetsTopic)
		return nil
	}
	_, err := c.createTopicRF(group.OffsetsTopic, offsetsTopicConfig(), min(3, len(c.opts.Brokers)))
	if err != nil && !errors.Is(err, ErrTopicExists) {
		return fmt.Errorf("folio: creating %s: %w", group.OffsetsTopic, err)
	}
	return nil
}

// adoptStandalone makes the topics of a broker that kept consumer groups
// alone (its data directory's, from before it was opened with
// ClusterOptions) the cluster's, so that its records and its groups'
// commits stay where clients look for them: when the directory's
// __consumer_offsets is not in the metadata and the metadata holds none,
// every topic of the directory that the metadata does not name enters it
// under its local id and configuration, __consumer_offsets first,
// replicated as ensureOffsetsTopic and createTopic would create them
// (min(3, brokers) replicas for __consumer_offsets, ReplicationFactor for
// the others), with this broker first among every partition's replicas:
// it leads each in epoch 0 and is each one's whole ISR, and the others
// join the ISR once they have copied its log (replica.Mem's AdoptTopic).
// All of them, not __consumer_offsets alone: a coordinator on another
// broker would take the commits of a topic it cannot see for commits of a
// deleted topic, and drop them. Run at Open, after the catalog is read and
// before the partitions open, so that they open with their replication
// hooks.
//
// A directory whose __consumer_offsets is in the metadata under its id (a
// replica of the cluster's) adopts nothing, nor does one without
// __consumer_offsets: their topics outside the metadata stay this
// broker's own, as before. A topic whose name the metadata holds under
// another id stays this broker's own too, with a warning; for
// __consumer_offsets that cannot be (its commits and the cluster's would
// answer for the same groups), and Open fails naming both ids: the
// directory opens as before without ClusterOptions.
//
// The metadata is replica.Mem, which lives as long as the process: after
// a restart of the whole process it is empty, and the first broker to
// open adopts its own copies. Restarting a cluster keeps its metadata
// only with the Raft issue's.
func (c *cluster) adoptStandalone(infos []topic.Info) error {
	member, err := c.wasMember()
	if err != nil {
		return err
	}
	if err := c.adoptStandaloneTopics(infos, member); err != nil {
		return err
	}
	if member {
		return nil
	}
	return c.writeMarker()
}

// wasMember reports whether the directory was opened with ClusterOptions
// before (ClusterFile). A damaged file counts as one, with a warning, and
// is written again: adopting a former replica's topics could make a stale
// copy the cluster's, where refusing only keeps a single broker's topics
// to itself.
func (c *cluster) wasMember() (bool, error) {
	data, err := readMetaFile(c.b.fs, c.b.dir, ClusterFile)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err == nil {
		var payload []byte
		if _, payload, err = decodeMeta(ClusterFile, clusterMagic, data); err == nil && len(payload) == 4 {
			return true, nil
		}
	}
	c.b.logger.Warn("folio: the data directory's cluster marker is unreadable; taking the directory for a cluster member's", "file", filepath.Join(c.b.dir, ClusterFile), "err", err)
	if werr := c.writeMarker(); werr != nil {
		return true, werr
	}
	return true, nil
}

// writeMarker writes ClusterFile, with this broker's id.
func (c *cluster) writeMarker() error {
	return writeMetaFile(c.b.fs, c.b.dir, ClusterFile, encodeMeta(clusterMagic, clusterVersion, binary.BigEndian.AppendUint32(nil, uint32(c.opts.BrokerID))))
}

// adoptStandaloneTopics is adoptStandalone's adoption, of none for a
// directory that was a cluster member.
func (c *cluster) adoptStandaloneTopics(infos []topic.Info, member bool) error {
	i := slices.IndexFunc(infos, func(in topic.Info) bool { return in.Name == group.OffsetsTopic })
	if i < 0 {
		return nil
	}
	offsets := infos[i]
	conflict := func(rec replica.TopicRecord) error {
		return fmt.Errorf("%w: broker %d: the data directory's %s (topic id %s) is not the cluster's (topic id %s), which another broker created first; "+
			"to keep its commits, open this broker before any other creates the cluster's (at the first group call or FindCoordinator)",
			ErrInvalidConfig, c.opts.BrokerID, group.OffsetsTopic, offsets.ID, rec.ID)
	}
	if rec, ok := c.meta.Topic(group.OffsetsTopic); ok {
		if rec.ID != offsets.ID && !member {
			return conflict(rec)
		}
		return nil // adopted before, or a replica of the cluster's
	}
	if member {
		// A former replica: the metadata lost the cluster's history (a
		// restart of the whole process with replica.Mem). Its copy may be
		// stale; making it the cluster's could truncate the others'.
		c.b.logger.Warn("folio: the metadata holds no __consumer_offsets, and this directory was a cluster member's: its topics are not adopted",
			"dir", c.b.dir, "broker", c.opts.BrokerID)
		return nil
	}
	order := append([]topic.Info{offsets}, slices.Delete(slices.Clone(infos), i, i+1)...)
	for _, in := range order {
		if err := c.adopt(in); err != nil {
			if in.Name == group.OffsetsTopic {
				if cur, ok := c.meta.Topic(in.Name); ok && cur.ID != in.ID {
					return conflict(cur)
				}
				if errors.Is(err, topic.ErrExists) {
					return nil // another broker's Open adopted the same copy meanwhile
				}
				return err
			}
			c.b.logger.Warn("folio: a topic of the data directory stays this broker's own, outside the cluster", "topic", in.Name, "id", in.ID, "err", err)
		}
	}
	return nil
}

// adopt enters topic in into the metadata with this broker as the leader
// and whole ISR of each partition (see adoptStandalone).
func (c *cluster) adopt(in topic.Info) error {
	rf := c.opts.ReplicationFactor
	if in.Name == group.OffsetsTopic {
		rf = min(3, len(c.opts.Brokers))
	}
	assignment := c.assign(0, in.Config.Partitions, rf)
	self := c.opts.BrokerID
	for p, rs := range assignment {
		if j := slices.Index(rs, self); j >= 0 {
			rs = slices.Delete(rs, j, j+1)
		} else {
			rs = rs[:len(rs)-1]
		}
		assignment[p] = append([]int32{self}, rs...)
	}
	rec := replica.TopicRecord{Name: in.Name, ID: in.ID, Internal: in.Internal, Config: in.Config.WithDefaults()}
	if err := c.meta.AdoptTopic(rec, assignment, replica.Member{ID: self, Incarnation: c.inc}); err != nil {
		return fmt.Errorf("folio: adopting topic %q into the cluster: %w", in.Name, err)
	}
	c.b.logger.Info("folio: a topic of the data directory is now the cluster's", "topic", in.Name,
		"id", in.ID, "broker", self, "replicationFactor", rf, "partitions", in.Config.Partitions)
	return nil
}

// offsetsAppend is the group Store's append to partition p of the
// replicated __consumer_offsets ts: the leader's acks=all append, so that
// a commit is acknowledged once committed, bounded by
// OffsetCommitTimeout. On a broker that does not lead p it fails with
// NOT_LEADER_OR_FOLLOWER, which the coordinator answers NOT_COORDINATOR.
func (c *cluster) offsetsAppend(ts *topicState) func(p int32, b record.Batch) (int64, error) {
	return func(p int32, b record.Batch) (int64, error) {
		if p < 0 || int(p) >= len(ts.parts) {
			return 0, fmt.Errorf("folio: %s-%d: %w", group.OffsetsTopic, p, ErrUnknownTopic)
		}
		ctx, cancel := context.WithTimeout(c.ctx, OffsetCommitTimeout)
		defer cancel()
		res, err := ts.parts[p].AppendBatch(partition.WithAcks(ctx, partition.AckAll), b)
		return res.BaseOffset, err
	}
}

// coordinatorFor is the broker that coordinates group groupID: the leader
// of its partition of __consumer_offsets (created if need be), -1 while
// it has none.
func (c *cluster) coordinatorFor(groupID string) int32 {
	if err := c.ensureOffsetsTopic(); err != nil {
		c.b.logger.Warn("folio: finding a group's coordinator", "group", groupID, "err", err)
		return -1
	}
	rec, ok := c.meta.Topic(group.OffsetsTopic)
	if !ok {
		return -1
	}
	tp := replica.TopicPartition{Topic: group.OffsetsTopic, Partition: group.PartitionFor(groupID, rec.Config.Partitions)}
	st, err := c.meta.Partition(c.ctx, tp)
	if err != nil {
		return -1
	}
	return st.Leader
}

// clusterBrokers is the process's registry of Brokers opened with
// ClusterOptions, by their shared metadata and broker id: how an
// in-process group member (Broker.JoinGroup) reaches the coordinator of
// its group on another Broker of its cluster. It works because the
// brokers of a cluster share one replica.Mem in one process today; with
// brokers in separate processes (the Raft issue), the member will have to
// reach the coordinator over the Kafka wire, as a Kafka client does.
var clusterBrokers struct {
	// mu guards m. A leaf: nothing is called under it.
	mu sync.Mutex
	m  map[clusterBrokerKey]*cluster
}

type clusterBrokerKey struct {
	meta *replica.Mem
	id   int32
}

// registerClusterBroker adds c to the registry (a restarted broker
// replaces the entry of its earlier incarnation).
func registerClusterBroker(c *cluster) {
	clusterBrokers.mu.Lock()
	defer clusterBrokers.mu.Unlock()
	if clusterBrokers.m == nil {
		clusterBrokers.m = map[clusterBrokerKey]*cluster{}
	}
	clusterBrokers.m[clusterBrokerKey{c.meta, c.opts.BrokerID}] = c
}

// unregisterClusterBroker removes c from the registry, if the entry is
// still c's.
func unregisterClusterBroker(c *cluster) {
	clusterBrokers.mu.Lock()
	defer clusterBrokers.mu.Unlock()
	k := clusterBrokerKey{c.meta, c.opts.BrokerID}
	if clusterBrokers.m[k] == c {
		delete(clusterBrokers.m, k)
	}
}

// clusterBroker returns the running Broker id of the cluster of meta in
// this process, nil if there is none.
func clusterBroker(meta *replica.Mem, id int32) *Broker {
	clusterBrokers.mu.Lock()
	defer clusterBrokers.mu.Unlock()
	if c := clusterBrokers.m[clusterBrokerKey{meta, id}]; c != nil {
		return c.b
	}
	return nil
}

// groupCoordinatorFinder is group.MemberOptions.FindCoordinator for an
// in-process member of groupID on this broker of a cluster: the
// coordinator of the broker that leads the group's offsets partition
// (coordinatorFor), found through the process's registry. No leader, or
// a leader not running here (crashed, stopped, starting), is
// COORDINATOR_NOT_AVAILABLE: the member retries. This broker's own
// coordinator closed is ErrClosed: the member stops.
func (c *cluster) groupCoordinatorFinder(groupID string) func(context.Context) (*group.Coordinator, error) {
	return func(ctx context.Context) (*group.Coordinator, error) {
		// Not refused while this Broker closes: the members it closes
		// commit their last offsets, wherever the coordinator went.
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		id := c.coordinatorFor(groupID)
		if id < 0 {
			return nil, fmt.Errorf("group %q: its offsets partition has no leader: %w", groupID, group.ErrCoordinatorNotAvailable)
		}
		b := clusterBroker(c.meta, id)
		if b == nil {
			return nil, fmt.Errorf("group %q: coordinator %d does not run in this process: %w", groupID, id, group.ErrCoordinatorNotAvailable)
		}
		coord, err := b.groups.coordinator(b)
		if err != nil {
			if b == c.b && errors.Is(err, ErrClosed) {
				return nil, fmt.Errorf("%w: %w", err, group.ErrClosed)
			}
			return nil, fmt.Errorf("group %q: coordinator %d: %w: %w", groupID, id, group.ErrCoordinatorNotAvailable, err)
		}
		return coord, nil
	}
}

func (c *cluster) stopFollowing(rp *replPart) {
	if !rp.followed {
		return
	}
	c.follower.Unfollow(rp.tp)
	rp.followed = false
}

func (c *cluster) tickLeaders() {
	for _, rp := range c.snapshot() {
		if ld := rp.leader; ld != nil {
			_ = ld.Tick(c.ctx)
		}
	}
}

// createTopic creates a replicated topic in the metadata, ReplicationFactor
// replicas per partition spread over the brokers (partition p's preferred
// leader is the p-th broker by id, round robin), then this broker's
// replica if it hosts one; the other brokers create theirs at their next
// look at the metadata.
func (c *cluster) createTopic(name string, cfg TopicConfig) (TopicInfo, error) {
	return c.createTopicRF(name, cfg, c.opts.ReplicationFactor)
}

// createTopicRF is createTopic with rf replicas per partition.
func (c *cluster) createTopicRF(name string, cfg TopicConfig, rf int) (TopicInfo, error) {
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
	if err := c.meta.CreateTopic(rec, c.assign(0, rec.Config.Partitions, rf)); err != nil {
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

// controllerID is the broker Metadata names as the controller: the
// lowest id of the address book (the metadata lives in the process for
// now).
func (c *cluster) controllerID() int32 {
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

// CoordinatorID returns the broker that coordinates consumer group
// groupID (transport.ClusterBackend): the leader of its partition of the
// replicated __consumer_offsets, which it creates if need be; -1 while
// that partition has no leader, and for a single Broker.
func (b *Broker) CoordinatorID(groupID string) int32 {
	if b.cluster == nil {
		return -1
	}
	return b.cluster.coordinatorFor(groupID)
}

// ControllerID returns the broker Metadata names as the controller
// (transport.ClusterBackend): the lowest id of the address book; -1 for a
// single Broker.
func (b *Broker) ControllerID() int32 {
	if b.cluster == nil {
		return -1
	}
	return b.cluster.controllerID()
}

var _ transport.ClusterBackend = (*Broker)(nil)

// setSynced records that the roles match metadata version v.
func (c *cluster) setSynced(v int64) {
	c.syncMu.Lock()
	defer c.syncMu.Unlock()
	if v > c.synced {
		c.synced = v
		close(c.syncedCh)
		c.syncedCh = make(chan struct{})
	}
}

// waitSynced waits until the manager has brought the roles to metadata
// version v or later: a leader has then adopted an ISR the controller
// changed.
func (c *cluster) waitSynced(ctx context.Context, v int64) error {
	for {
		c.syncMu.Lock()
		done, ch := c.synced >= v, c.syncedCh
		c.syncMu.Unlock()
		if done {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}

// PartitionLeader returns this broker's leadership of a replicated
// partition, for the Kafka endpoint to serve followers' fetches
// (transport.ReplicaBackend); an error matching NOT_LEADER_OR_FOLLOWER
// when it does not lead it.
func (b *Broker) PartitionLeader(topicName string, p int32) (transport.PartitionLeader, error) {
	tp := replica.TopicPartition{Topic: topicName, Partition: p}
	if b.cluster == nil {
		return nil, fmt.Errorf("%w: %s: not replicated", replica.ErrNotLeader, tp)
	}
	rp := b.cluster.part(tp)
	if rp == nil {
		return nil, fmt.Errorf("%w: %s: not a replica here", replica.ErrNotLeader, tp)
	}
	ld := rp.hook.Leader()
	if ld == nil {
		return nil, fmt.Errorf("%w: %s: broker %d follows", replica.ErrNotLeader, tp, b.cluster.opts.BrokerID)
	}
	return ld, nil
}

var _ transport.ReplicaBackend = (*Broker)(nil)

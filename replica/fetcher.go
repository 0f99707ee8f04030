package replica

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/foliolog/folio/log"
	"github.com/foliolog/folio/partition"
	"github.com/foliolog/folio/record"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// FollowerOptions configure a Follower. Zero fields mean the defaults
// stated; ID, Metadata and Addr are required.
type FollowerOptions struct {
	// ID is this broker's id: the replica id of its fetches.
	ID int32
	// Incarnation is this broker's incarnation (broker epoch, rising at
	// every start), sent with each fetch (Fetch v15+'s ReplicaState.Epoch)
	// so that a leader keeps a restarted follower out of the ISR until it
	// has caught up again (KIP-903). Default 0.
	Incarnation int64
	// Metadata tells each partition's leader and leader epoch.
	Metadata Metadata
	// Addr returns the host:port of a broker's Kafka endpoint.
	Addr func(broker int32) (string, error)
	// MaxWait is how long the leader may hold a fetch while it has fewer
	// than MinBytes to send (Kafka's replica.fetch.wait.max.ms). Default
	// 500 ms.
	MaxWait time.Duration
	// MinBytes is how many record bytes a fetch waits for (Kafka's
	// replica.fetch.min.bytes). Default 1.
	MinBytes int32
	// MaxBytes bounds one fetch response (Kafka's
	// replica.fetch.response.max.bytes). Default 16 MiB.
	MaxBytes int32
	// PartitionMaxBytes bounds one partition of a fetch response (Kafka's
	// replica.fetch.max.bytes), except that a first batch above it still
	// comes whole. Default 8 MiB.
	PartitionMaxBytes int32
	// Backoff is the pause after a failed fetch, or while a partition has
	// no leader to fetch from (Kafka's replica.fetch.backoff.ms). Default
	// 200 ms.
	Backoff time.Duration
	// ClientOptions are added to the options of the kgo client made for
	// each leader broker (TLS, SASL, dialer).
	ClientOptions []kgo.Opt
	// Logger receives truncations and fetch errors. Default: discard.
	Logger *slog.Logger
}

func (o *FollowerOptions) withDefaults() (FollowerOptions, error) {
	var v FollowerOptions
	if o != nil {
		v = *o
	}
	if v.ID < 0 || v.Metadata == nil || v.Addr == nil {
		return v, errors.New("replica: FollowerOptions need an ID >= 0, Metadata and Addr")
	}
	if v.MaxWait <= 0 {
		v.MaxWait = 500 * time.Millisecond
	}
	if v.MinBytes <= 0 {
		v.MinBytes = 1
	}
	if v.MaxBytes <= 0 {
		v.MaxBytes = 16 << 20
	}
	if v.PartitionMaxBytes <= 0 {
		v.PartitionMaxBytes = 8 << 20
	}
	if v.Backoff <= 0 {
		v.Backoff = 200 * time.Millisecond
	}
	if v.Logger == nil {
		v.Logger = slog.New(slog.DiscardHandler)
	}
	return v, nil
}

// Follower is a broker's follower side: it copies the partitions it
// follows from their leaders over the Kafka endpoint, one fetch loop (and
// one kgo client) per leader broker, every partition that broker leads in
// the one Fetch request (Kafka's ReplicaFetcherThread).
//
// For each partition it:
//   - learns the leader and leader epoch from the Metadata;
//   - reconciles by epoch lineage before it fetches anything
//     (OffsetForLeaderEpoch, Reconcile): it truncates only to the point
//     where its log leaves the leader's lineage, never to a high watermark;
//   - fetches from its log end with its replica id, incarnation, current
//     leader epoch and last fetched epoch, and appends what comes with
//     partition.AppendFollower (the leader's offsets and epochs kept);
//   - on a DivergingEpoch truncates (TruncationPoint) and goes on, asking
//     OffsetForLeaderEpoch again if one step did not reconcile it;
//   - sets its own high watermark from the leader's, capped at its log
//     end, only forward;
//   - on FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH or
//     NOT_LEADER_OR_FOLLOWER re-reads the Metadata and moves to the new
//     leader's loop (or waits, Backoff at a time, while there is none, or
//     while the Metadata names this broker: the broker then makes it a
//     leader and calls Unfollow).
//
// # Durability
//
// A fetch offset is the follower's acknowledgement of everything below it
// (the leader counts it toward the high watermark). The next fetch is sent
// only after AppendFollower returned, and AppendFollower applies the
// topic's flush policy as an append does, so:
//   - FlushSync: the offset counts only once the records are fsynced on
//     the follower. An acknowledged (acks=all) record survives any crash,
//     power loss of every replica at once included, as long as one ISR
//     member's disk survives.
//   - FlushNone, FlushInterval, FlushEveryN: the offset counts once the
//     records are in the follower's page cache. An acknowledged record
//     survives process crashes of every replica (the kernel keeps the page
//     cache) and the power loss or loss of machines as long as one ISR
//     member keeps running or flushed it; a power loss of every ISR member
//     before their flushes can lose it. A restarted replica comes back
//     under a new incarnation and is kept out of the ISR until it has
//     caught up (KIP-903), so a lost tail is never counted twice.
//
// # Out of range
//
// A fetch answered OFFSET_OUT_OF_RANGE makes the follower ask the leader's
// log start (ListOffsets earliest); a log that ends below it is truncated
// fully and restarts empty at the leader's log start (Kafka's
// truncateFullyAndStartAt), then the partition reconciles and fetches on.
type Follower struct {
	o      FollowerOptions
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex // guards the fields below
	loops  map[int32]*fetchLoop
	parts  map[TopicPartition]*followed
	closed bool
}

// followed is one partition a Follower copies.
type followed struct {
	tp TopicPartition
	p  *partition.Partition

	// mu is held while the loop works on p (reconciles, appends, sets the
	// high watermark) and by Unfollow, so that once Unfollow returns the
	// Follower no longer touches p.
	mu      sync.Mutex
	removed bool
	// The fields below belong to the loop that has the partition.
	leader     int32
	epoch      int32 // the current leader epoch, as the Metadata said
	reconciled bool
	outOfRange bool      // the last fetch was OFFSET_OUT_OF_RANGE: ask the leader's log start
	stale      bool      // the Metadata must be read again before the next fetch
	retryAt    time.Time // after a refusal or a failure: no request for it before then
}

// NewFollower returns a Follower that follows nothing yet.
func NewFollower(o *FollowerOptions) (*Follower, error) {
	opts, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Follower{o: opts, ctx: ctx, cancel: cancel, loops: map[int32]*fetchLoop{}, parts: map[TopicPartition]*followed{}}, nil
}

// ErrFollowerClosed is returned by Follow after Close.
var ErrFollowerClosed = errors.New("replica: follower closed")

// Follow starts copying tp into p from its leader, as the Metadata names
// it. p must be opened with an external high watermark (a Hook without a
// Leader, as a follower's partition is). Following a partition already
// followed is an error.
func (f *Follower) Follow(tp TopicPartition, p *partition.Partition) error {
	fp := &followed{tp: tp, p: p, leader: -1, epoch: -1, stale: true}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return ErrFollowerClosed
	}
	if _, ok := f.parts[tp]; ok {
		return fmt.Errorf("replica: %s is followed already", tp)
	}
	f.parts[tp] = fp
	// The loop of "no leader known" reads the Metadata and routes it.
	f.routeLocked(fp, -1)
	return nil
}

// Unfollow stops copying tp. Once it returns the Follower no longer
// touches the partition (a fetch in flight is dropped).
func (f *Follower) Unfollow(tp TopicPartition) {
	f.mu.Lock()
	fp, ok := f.parts[tp]
	if ok {
		delete(f.parts, tp)
		for _, l := range f.loops {
			l.remove(fp)
		}
	}
	f.mu.Unlock()
	if ok {
		fp.mu.Lock()
		fp.removed = true
		fp.mu.Unlock()
	}
}

// Leader returns the broker tp is fetched from now: -1 while no leader is
// known, this broker's own id while the Metadata names it the leader (the
// broker then leads it and calls Unfollow); ok is false when tp is not
// followed.
func (f *Follower) Leader(tp TopicPartition) (leader int32, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fp, ok := f.parts[tp]
	if !ok {
		return -1, false
	}
	for id, l := range f.loops {
		l.mu.Lock()
		in := l.parts[tp] == fp
		l.mu.Unlock()
		if in {
			return id, true
		}
	}
	return -1, true
}

// Close stops every fetch loop and waits for them, and closes their
// clients. The partitions are not closed.
func (f *Follower) Close() error {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return nil
	}
	f.closed = true
	f.mu.Unlock()
	f.cancel()
	f.wg.Wait()
	return nil
}

// routeLocked hands fp to the loop of broker leader, starting it if there
// is none. f.mu is held.
func (f *Follower) routeLocked(fp *followed, leader int32) {
	l, ok := f.loops[leader]
	if !ok {
		l = &fetchLoop{f: f, leader: leader, wake: make(chan struct{}, 1), parts: map[TopicPartition]*followed{}}
		f.loops[leader] = l
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			l.run(f.ctx)
		}()
	}
	l.add(fp)
}

// reroute moves fp from loop from to the loop of its new leader.
func (f *Follower) reroute(from *fetchLoop, fp *followed, leader int32) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed || f.parts[fp.tp] != fp {
		return // unfollowed meanwhile
	}
	from.remove(fp)
	f.routeLocked(fp, leader)
}

// fetchLoop fetches the partitions one broker leads. The loop of leader -1
// (none known) and that of the broker itself fetch nothing: they read the
// Metadata, Backoff at a time, and route their partitions on.
type fetchLoop struct {
	f      *Follower
	leader int32
	wake   chan struct{} // a partition was added

	mu    sync.Mutex
	parts map[TopicPartition]*followed
}

func (l *fetchLoop) add(fp *followed) {
	l.mu.Lock()
	l.parts[fp.tp] = fp
	l.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

func (l *fetchLoop) remove(fp *followed) {
	l.mu.Lock()
	if l.parts[fp.tp] == fp {
		delete(l.parts, fp.tp)
	}
	l.mu.Unlock()
}

func (l *fetchLoop) snapshot() []*followed {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]*followed, 0, len(l.parts))
	for _, fp := range l.parts {
		out = append(out, fp)
	}
	return out
}

func (l *fetchLoop) run(ctx context.Context) {
	var cl *kgo.Client
	defer func() {
		if cl != nil {
			cl.Close()
		}
	}()
	for ctx.Err() == nil {
		parts := l.snapshot()
		if len(parts) == 0 {
			select {
			case <-l.wake:
			case <-ctx.Done():
			}
			continue
		}
		// Partitions whose leader or epoch may have changed read the
		// Metadata first; those led elsewhere move to that loop.
		var fetchable []*followed
		now := time.Now()
		for _, fp := range parts {
			if now.Before(fp.retryAt) {
				continue
			}
			if fp.stale || l.leader < 0 || l.leader == l.f.o.ID {
				if !l.refresh(ctx, fp) {
					continue
				}
			}
			fetchable = append(fetchable, fp)
		}
		if len(fetchable) == 0 || l.leader < 0 || l.leader == l.f.o.ID {
			l.pause(ctx)
			continue
		}
		if cl == nil {
			var err error
			if cl, err = l.client(); err != nil {
				l.f.o.Logger.Warn("replica: no client for the leader", "leader", l.leader, "err", err)
				l.pause(ctx)
				continue
			}
		}
		if err := l.round(ctx, cl, fetchable); err != nil {
			if ctx.Err() != nil {
				return
			}
			l.f.o.Logger.Warn("replica: fetching from the leader", "leader", l.leader, "err", err)
			l.pause(ctx)
		}
	}
}

// pause waits Backoff, or until ctx ends.
func (l *fetchLoop) pause(ctx context.Context) {
	t := time.NewTimer(l.f.o.Backoff)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

func (l *fetchLoop) client() (*kgo.Client, error) {
	addr, err := l.f.o.Addr(l.leader)
	if err != nil {
		return nil, err
	}
	opts := append([]kgo.Opt{
		kgo.SeedBrokers(addr),
		kgo.ClientID(fmt.Sprintf("folio-replica-%d", l.f.o.ID)),
		// A response holds MaxBytes, or one first batch above it.
		kgo.FetchMaxBytes(l.f.o.MaxBytes),
		kgo.BrokerMaxReadBytes(max(l.f.o.MaxBytes, l.f.o.PartitionMaxBytes) + 1<<20),
	}, l.f.o.ClientOptions...)
	return kgo.NewClient(opts...)
}

// refresh reads fp's state from the Metadata: a new leader routes it to
// that leader's loop (false: not this loop's any more), a new epoch makes
// it reconcile again.
func (l *fetchLoop) refresh(ctx context.Context, fp *followed) bool {
	st, err := l.f.o.Metadata.Partition(ctx, fp.tp)
	if err != nil {
		l.f.o.Logger.Warn("replica: reading the metadata", "partition", fp.tp.String(), "err", err)
		return false
	}
	if st.LeaderEpoch != fp.epoch {
		fp.epoch, fp.reconciled = st.LeaderEpoch, false
	}
	fp.leader = st.Leader
	fp.stale = false
	if st.Leader != l.leader {
		l.f.reroute(l, fp, st.Leader)
		return false
	}
	return true
}

// partLog is a partition as reconciliation sees it.
type partLog struct{ *partition.Partition }

func (p partLog) LastEpoch() int32 { return p.Log().LatestEpoch() }

var _ FollowerLog = partLog{}

// round is one exchange with the leader: OffsetForLeaderEpoch for the
// partitions not reconciled yet, then one Fetch for the others.
func (l *fetchLoop) round(ctx context.Context, cl *kgo.Client, parts []*followed) error {
	var unreconciled, ready, outOfRange []*followed
	for _, fp := range parts {
		if fp.outOfRange {
			outOfRange = append(outOfRange, fp)
		}
		if fp.reconciled {
			ready = append(ready, fp)
		} else {
			unreconciled = append(unreconciled, fp)
		}
	}
	broker := cl.SeedBrokers()[0]
	if len(outOfRange) > 0 {
		if err := l.resetOutOfRange(ctx, broker, outOfRange); err != nil {
			return err
		}
	}
	if len(unreconciled) > 0 {
		if err := l.reconcile(ctx, broker, unreconciled); err != nil {
			return err
		}
	}
	if len(ready) == 0 {
		return nil // reconciled now, or refreshing: the next round fetches
	}
	return l.fetch(ctx, broker, ready)
}

// reconcile asks the leader where each partition's last epoch ends in its
// lineage and truncates to where they part.
func (l *fetchLoop) reconcile(ctx context.Context, broker *kgo.Broker, parts []*followed) error {
	req := kmsg.NewPtrOffsetForLeaderEpochRequest()
	req.ReplicaID = l.f.o.ID
	byTopic := map[string]int{}
	var asked []*followed
	for _, fp := range parts {
		fp.mu.Lock()
		removed := fp.removed
		last := fp.p.Log().LatestEpoch()
		fp.mu.Unlock()
		if removed {
			continue
		}
		if last < 0 {
			// An empty lineage: nothing to cut, reconciled (records
			// below the leader's log start aside: see Out of range).
			fp.reconciled = true
			continue
		}
		i, ok := byTopic[fp.tp.Topic]
		if !ok {
			i = len(req.Topics)
			byTopic[fp.tp.Topic] = i
			rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
			rt.Topic = fp.tp.Topic
			req.Topics = append(req.Topics, rt)
		}
		rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
		rp.Partition = fp.tp.Partition
		rp.CurrentLeaderEpoch = fp.epoch
		// A tail of an epoch above the current one (this replica led in
		// an epoch whose leadership the metadata has since moved past,
		// and the current leader is older): the leader answers for its
		// own epoch, whose end is its log end.
		rp.LeaderEpoch = min(last, fp.epoch)
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
		asked = append(asked, fp)
	}
	if len(asked) == 0 {
		return nil
	}
	kresp, err := broker.Request(ctx, req)
	if err != nil {
		return fmt.Errorf("replica: OffsetForLeaderEpoch to %d: %w", l.leader, err)
	}
	resp := kresp.(*kmsg.OffsetForLeaderEpochResponse)
	answers := map[TopicPartition]kmsg.OffsetForLeaderEpochResponseTopicPartition{}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			answers[TopicPartition{rt.Topic, rp.Partition}] = rp
		}
	}
	for _, fp := range asked {
		rp, ok := answers[fp.tp]
		if !ok {
			fp.stale = true
			continue
		}
		if rp.ErrorCode != 0 {
			l.partitionError(fp, kerr.ErrorForCode(rp.ErrorCode))
			continue
		}
		fp.mu.Lock()
		if !fp.removed {
			done, err := l.truncate(fp, rp.LeaderEpoch, rp.EndOffset)
			if err != nil {
				l.f.o.Logger.Error("replica: reconciling", "partition", fp.tp.String(), "err", err)
				fp.retryAt = time.Now().Add(l.f.o.Backoff)
			} else {
				fp.reconciled = done
			}
		}
		fp.mu.Unlock()
	}
	return nil
}

// truncate is Reconcile on fp's partition, logged. fp.mu is held.
func (l *fetchLoop) truncate(fp *followed, leaderEpoch int32, leaderEnd int64) (bool, error) {
	before := fp.p.LogEndOffset()
	done, err := Reconcile(partLog{fp.p}, leaderEpoch, leaderEnd)
	if after := fp.p.LogEndOffset(); after < before {
		l.f.o.Logger.Info("replica: truncated to the leader's lineage", "partition", fp.tp.String(),
			"from", before, "to", after, "leader", l.leader, "leaderEpoch", leaderEpoch, "leaderEnd", leaderEnd)
	}
	return done, err
}

// partitionError handles a partition's error code: a changed leadership
// re-reads the metadata, an offset out of range reconciles again.
func (l *fetchLoop) partitionError(fp *followed, err error) {
	fp.retryAt = time.Now().Add(l.f.o.Backoff)
	switch {
	case errors.Is(err, kerr.OffsetOutOfRange):
		fp.reconciled, fp.outOfRange = false, true
		l.f.o.Logger.Warn("replica: fetch offset out of range", "partition", fp.tp.String(), "leader", l.leader)
	default:
		// FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH,
		// NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION, ...: the
		// metadata moved, or the leader has not learnt of it yet.
		fp.stale = true
		l.f.o.Logger.Debug("replica: partition refused by the leader", "partition", fp.tp.String(), "leader", l.leader, "err", err)
	}
}

// fetch sends one Fetch for parts and applies its answer.
func (l *fetchLoop) fetch(ctx context.Context, broker *kgo.Broker, parts []*followed) error {
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = l.f.o.ID
	req.ReplicaState.ID, req.ReplicaState.Epoch = l.f.o.ID, l.f.o.Incarnation
	req.MaxWaitMillis = int32(l.f.o.MaxWait / time.Millisecond)
	req.MinBytes, req.MaxBytes = l.f.o.MinBytes, l.f.o.MaxBytes
	req.SessionID, req.SessionEpoch = 0, -1
	byTopic := map[string]int{}
	ids := map[[16]byte]string{}
	var asked []*followed
	for _, fp := range parts {
		fp.mu.Lock()
		removed := fp.removed
		offset, last, start := fp.p.LogEndOffset(), fp.p.Log().LatestEpoch(), fp.p.LogStartOffset()
		id := [16]byte(fp.p.TopicID())
		fp.mu.Unlock()
		if removed {
			continue
		}
		ids[id] = fp.tp.Topic
		i, ok := byTopic[fp.tp.Topic]
		if !ok {
			i = len(req.Topics)
			byTopic[fp.tp.Topic] = i
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic, rt.TopicID = fp.tp.Topic, id
			req.Topics = append(req.Topics, rt)
		}
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition = fp.tp.Partition
		rp.CurrentLeaderEpoch, rp.LastFetchedEpoch = fp.epoch, last
		rp.FetchOffset, rp.LogStartOffset = offset, start
		rp.PartitionMaxBytes = l.f.o.PartitionMaxBytes
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
		asked = append(asked, fp)
	}
	if len(asked) == 0 {
		return nil
	}
	kresp, err := broker.Request(ctx, req)
	if err != nil {
		return fmt.Errorf("replica: Fetch from %d: %w", l.leader, err)
	}
	resp := kresp.(*kmsg.FetchResponse)
	if resp.ErrorCode != 0 {
		return fmt.Errorf("replica: Fetch from %d: %w", l.leader, kerr.ErrorForCode(resp.ErrorCode))
	}
	answers := map[TopicPartition]*kmsg.FetchResponseTopicPartition{}
	for ti := range resp.Topics {
		rt := &resp.Topics[ti]
		name := rt.Topic
		if resp.Version >= 13 {
			name = ids[rt.TopicID]
		}
		for pi := range rt.Partitions {
			answers[TopicPartition{name, rt.Partitions[pi].Partition}] = &rt.Partitions[pi]
		}
	}
	for _, fp := range asked {
		rp, ok := answers[fp.tp]
		if !ok {
			continue // not answered this time (Kafka leaves out what did not fit)
		}
		if rp.ErrorCode != 0 {
			l.partitionError(fp, kerr.ErrorForCode(rp.ErrorCode))
			continue
		}
		fp.mu.Lock()
		if !fp.removed {
			l.apply(fp, rp)
		}
		fp.mu.Unlock()
	}
	return nil
}

// apply applies one partition's fetch answer: a divergence truncates, the
// records are appended, the high watermark follows the leader's. fp.mu is
// held.
func (l *fetchLoop) apply(fp *followed, rp *kmsg.FetchResponseTopicPartition) {
	if rp.DivergingEpoch.Epoch >= 0 || rp.DivergingEpoch.EndOffset >= 0 {
		done, err := l.truncate(fp, rp.DivergingEpoch.Epoch, rp.DivergingEpoch.EndOffset)
		if err != nil {
			l.f.o.Logger.Error("replica: truncating at a diverging epoch", "partition", fp.tp.String(), "err", err)
			fp.reconciled, fp.retryAt = false, time.Now().Add(l.f.o.Backoff)
			return
		}
		fp.reconciled = done
		return
	}
	var batches []record.Batch
	for rest := rp.RecordBatches; len(rest) > 0; {
		b, r, err := record.Parse(rest)
		if err != nil {
			break // a partial last batch (the leader cut at its limit): fetched again
		}
		rest = r
		if b.BaseOffset() < fp.p.LogEndOffset() {
			continue // already held (a batch the fetch offset fell inside)
		}
		batches = append(batches, b)
	}
	if len(batches) > 0 {
		if _, _, err := fp.p.AppendFollower(batches...); err != nil {
			l.f.o.Logger.Error("replica: appending the leader's batches", "partition", fp.tp.String(), "err", err)
			fp.retryAt = time.Now().Add(l.f.o.Backoff)
			if errors.Is(err, log.ErrNotAtLogEnd) || errors.Is(err, log.ErrEpochRegressed) {
				fp.reconciled = false
			}
			return
		}
	}
	// The follower's high watermark: the leader's, capped at what it
	// holds, only forward (Kafka's follower does the same).
	hw := min(rp.HighWatermark, fp.p.LogEndOffset())
	if hw > fp.p.HighWatermark() {
		if err := fp.p.SetHighWatermark(hw); err != nil && !errors.Is(err, log.ErrBadHighWatermark) {
			l.f.o.Logger.Warn("replica: setting the high watermark", "partition", fp.tp.String(), "hw", hw, "err", err)
		}
	}
}

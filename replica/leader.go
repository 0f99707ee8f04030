package replica

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/foliolog/folio/log"
	"github.com/foliolog/folio/partition"
)

// Log is what a leader needs of its local log: its end, and the high
// watermark it owns (log.Options.ExternalHighWatermark). *partition.Partition
// satisfies it; the simulator's in-memory log does too.
type Log interface {
	LogEndOffset() int64
	SetHighWatermark(offset int64) error
}

// LeaderOptions configure a Leader. Zero fields mean the defaults stated.
type LeaderOptions struct {
	// MinInsyncReplicas is the topic's min.insync.replicas: acks=all
	// appends are refused, and the high watermark stands still, while the
	// ISR is smaller. Default 1.
	MinInsyncReplicas int
	// LagTime is replica.lag.time.max.ms: a follower that has not caught
	// up with the leader's log end for this long leaves the ISR. Default
	// 30 s.
	LagTime time.Duration
	// Now is the clock. Default time.Now; the simulator's virtual clock in
	// tests.
	Now func() time.Time
}

// DefaultLagTime is Kafka's replica.lag.time.max.ms default.
const DefaultLagTime = 30 * time.Second

// follower is what the leader knows of one follower in its epoch.
type follower struct {
	leo         int64 // its log end as its last fetch said; -1: no fetch in this epoch
	incarnation int64
	lastFetch   time.Time
	// lastCaughtUp is the last time it had everything the leader held
	// (Kafka's lastCaughtUpTimeMs): the fetch's offset reached the
	// leader's end then, or the end at its previous fetch.
	lastCaughtUp  time.Time
	prevLeaderEnd int64 // the leader's end at its previous fetch
}

// Leader is the leader's side of one partition in one leader epoch: the
// followers' fetch positions, the ISR, the high watermark, the acks=all
// waits. It is a partition.Replication: open the partition with it as
// Options.Replication. A leader lives for one epoch; once fenced (a newer
// epoch, a lost compare-and-swap naming another leader) it refuses
// everything with ErrNotLeader and the broker makes a new one, or a
// follower, from the metadata.
type Leader struct {
	tp   TopicPartition
	id   int32
	meta Metadata
	log  Log
	opts LeaderOptions

	mu sync.Mutex // guards the fields below
	// state is the partition state as last committed through meta.
	state State
	// pending is an ISR change sent and not yet answered: while it is in
	// flight the high watermark counts the union of both ISRs (the
	// maximal ISR, KIP-497) and no other change is proposed.
	pending    []Member
	fenced     bool
	epochStart int64 // the log end when this epoch began (LESO)
	hw         int64 // the high watermark established in this epoch; -1 none yet
	followers  map[int32]*follower
	changed    chan struct{} // closed and replaced when hw, the ISR or fenced change
}

// NewLeader makes replica id the leader of tp over
// its local log l, if the metadata says id leads tp, and has l stamp the
// batches appended from now on with the epoch (l's SetLeaderEpoch, or
// that of its Log() as *partition.Partition has). The epoch starts at
// l's current end: no high watermark is exposed until the ISR has reached
// it (KIP-101's "applied HW monotonicity").
func NewLeader(ctx context.Context, meta Metadata, tp TopicPartition, id int32, l Log, o *LeaderOptions) (*Leader, error) {
	var opts LeaderOptions
	if o != nil {
		opts = *o
	}
	if opts.MinInsyncReplicas <= 0 {
		opts.MinInsyncReplicas = 1
	}
	if opts.LagTime <= 0 {
		opts.LagTime = DefaultLagTime
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	st, err := meta.Partition(ctx, tp)
	if err != nil {
		return nil, err
	}
	if st.Leader != id {
		return nil, fmt.Errorf("%w: %s: leader is %d, not %d", ErrNotLeader, tp, st.Leader, id)
	}
	// The leader stamps its batches with its epoch.
	switch x := l.(type) {
	case interface{ SetLeaderEpoch(int32) }:
		x.SetLeaderEpoch(st.LeaderEpoch)
	case interface{ Log() *log.Log }:
		// A log whose lineage is past the metadata's epoch (metadata that
		// lost its history) must not lead: its batches and the metadata
		// would disagree about epochs, and divergence found by them
		// would be wrong.
		if err := x.Log().SetLeaderEpoch(st.LeaderEpoch); err != nil {
			return nil, fmt.Errorf("replica: %s: leading in epoch %d: %w", tp, st.LeaderEpoch, err)
		}
	}
	now := opts.Now()
	ld := &Leader{tp: tp, id: id, meta: meta, log: l, opts: opts, state: st,
		epochStart: l.LogEndOffset(), hw: -1, followers: map[int32]*follower{}, changed: make(chan struct{})}
	for _, r := range st.Replicas {
		if r != id {
			// A follower has the lag time from the epoch's start to catch up.
			ld.followers[r] = &follower{leo: -1, lastCaughtUp: now, prevLeaderEnd: -1}
		}
	}
	ld.updateLocked()
	return ld, nil
}

// Epoch returns the leader epoch this leader leads.
func (l *Leader) Epoch() int32 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.state.LeaderEpoch
}

// State returns the partition state as this leader last committed it.
func (l *Leader) State() State {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.state.Clone()
}

// HighWatermark returns the high watermark established in this epoch,
// and false while there is none yet (a new leader whose ISR has not
// reached the epoch's start: ListOffsets answers "unknown" then).
func (l *Leader) HighWatermark() (int64, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.hw, l.hw >= 0
}

// Fenced reports whether this leader has learnt that it no longer leads.
func (l *Leader) Fenced() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.fenced
}

// Fetch is one follower fetch as the leader sees it.
type Fetch struct {
	Replica int32
	// Incarnation is the follower's broker epoch; -1 when the fetch
	// carries none (Fetch before v15): the last one seen counts.
	Incarnation int64
	// LeaderEpoch is the follower's current leader epoch (KIP-320).
	LeaderEpoch int32
	// Offset is the follower's log end: it holds everything below, in the
	// leader's lineage (the follower reconciled before fetching).
	Offset int64
}

// Fetched records a follower's fetch: its position, its lag, perhaps its
// return to the ISR, or its removal when it comes under another
// incarnation than the one it was admitted with (each a compare-and-swap
// through the metadata before it counts), and the high watermark it
// moves. It returns the high watermark to send back (-1 while none is
// established). A fetch in an older epoch is ErrFencedLeaderEpoch, a
// newer one ErrUnknownLeaderEpoch, one under an older incarnation than
// the follower's last (sent before it restarted) ErrStaleIncarnation, a
// fenced leader ErrNotLeader.
func (l *Leader) Fetched(ctx context.Context, f Fetch) (int64, error) {
	l.mu.Lock()
	if err := l.checkEpochLocked(f.LeaderEpoch); err != nil {
		l.mu.Unlock()
		return -1, err
	}
	fo, ok := l.followers[f.Replica]
	if !ok {
		l.mu.Unlock()
		return -1, fmt.Errorf("%w: %s: %d is not a follower of leader %d", ErrNotReplica, l.tp, f.Replica, l.id)
	}
	now := l.opts.Now()
	end := l.log.LogEndOffset()
	if f.Offset > end || f.Offset < 0 {
		l.mu.Unlock()
		return -1, fmt.Errorf("%w: %s: follower %d fetches at %d, the leader's end is %d", ErrFetchOutOfRange, l.tp, f.Replica, f.Offset, end)
	}
	if f.Incarnation < 0 {
		// Not sent (Fetch before v15): taken as the one it is in the ISR
		// under, else the last one seen, so an older follower still
		// replicates, without KIP-903's fence.
		f.Incarnation = fo.incarnation
		if i := slices.IndexFunc(l.state.ISR, func(m Member) bool { return m.ID == f.Replica }); i >= 0 {
			f.Incarnation = l.state.ISR[i].Incarnation
		}
	}
	if f.Incarnation < fo.incarnation {
		// A fetch sent before the follower restarted, arriving late: the
		// position it claims may be gone with the crash.
		l.mu.Unlock()
		return -1, fmt.Errorf("%w: %s: follower %d fetched under incarnation %d, after %d",
			ErrStaleIncarnation, l.tp, f.Replica, f.Incarnation, fo.incarnation)
	}
	if f.Incarnation != fo.incarnation {
		// A restarted follower: what it held before counts for nothing.
		fo.incarnation = f.Incarnation
		fo.prevLeaderEnd = -1
	}
	fo.leo = f.Offset
	if f.Offset >= end {
		fo.lastCaughtUp = now
	} else if fo.prevLeaderEnd >= 0 && f.Offset >= fo.prevLeaderEnd {
		fo.lastCaughtUp = fo.lastFetch
	}
	fo.lastFetch, fo.prevLeaderEnd = now, end
	l.updateLocked()
	var ch *ISRChange
	if i := slices.IndexFunc(l.state.ISR, func(m Member) bool { return m.ID == f.Replica }); i >= 0 {
		if l.state.ISR[i].Incarnation != f.Incarnation && l.pending == nil {
			// The member restarted since it was admitted: what it held
			// then may be gone with its unflushed tail (KIP-903). Out,
			// until it catches up again under its new incarnation.
			ch = l.proposeLocked(slices.Delete(slices.Clone(l.state.ISR), i, i+1))
		}
	} else if l.pending == nil && f.Offset >= l.epochStart && f.Offset >= l.hw {
		// Rejoin (KIP-320 rule 4, Kafka's isFollowerInSync): a fetch in
		// this epoch at or past both the high watermark and the log end
		// this epoch began with. Before the epoch has a high watermark
		// (an ISR below min.insync.replicas holds it at -1, as in a
		// topic adopted with its holder alone in the ISR) the epoch's
		// start is the bound: everything committed lies below it.
		isr := append(slices.Clone(l.state.ISR), Member{ID: f.Replica, Incarnation: f.Incarnation})
		ch = l.proposeLocked(isr)
	}
	l.mu.Unlock()
	if ch != nil {
		l.alter(ctx, *ch)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.hw, nil
}

// FollowerFetched is Fetched with the fetch's fields as arguments: it makes
// a Leader the transport.PartitionLeader that the Kafka endpoint reports a
// follower's fetch to (the transport package does not import this one).
func (l *Leader) FollowerFetched(ctx context.Context, replica int32, incarnation int64, leaderEpoch int32, offset int64) (int64, error) {
	return l.Fetched(ctx, Fetch{Replica: replica, Incarnation: incarnation, LeaderEpoch: leaderEpoch, Offset: offset})
}

// Tick shrinks the ISR of followers that have not caught up within the
// lag time, a compare-and-swap through the metadata before it takes
// effect. The broker calls it periodically (Kafka: every lag time / 2);
// the simulator after every step of its clock. It returns the first error
// of the metadata, ErrNotLeader once fenced.
func (l *Leader) Tick(ctx context.Context) error {
	l.mu.Lock()
	if l.fenced {
		l.mu.Unlock()
		return fmt.Errorf("%w: %s: fenced in epoch %d", ErrNotLeader, l.tp, l.state.LeaderEpoch)
	}
	if l.pending != nil {
		l.mu.Unlock()
		return nil
	}
	now := l.opts.Now()
	end := l.log.LogEndOffset()
	isr := slices.DeleteFunc(slices.Clone(l.state.ISR), func(m Member) bool {
		fo := l.followers[m.ID]
		return m.ID != l.id && fo != nil && (fo.leo < end || fo.leo < 0) && now.Sub(fo.lastCaughtUp) > l.opts.LagTime
	})
	var ch *ISRChange
	if len(isr) < len(l.state.ISR) {
		ch = l.proposeLocked(isr)
	}
	l.mu.Unlock()
	if ch == nil {
		return nil
	}
	return l.alter(ctx, *ch)
}

// proposeLocked marks isr as the pending ISR and returns the change that
// asks for it.
func (l *Leader) proposeLocked(isr []Member) *ISRChange {
	l.pending = isr
	return &ISRChange{Leader: l.id, LeaderEpoch: l.state.LeaderEpoch, Version: l.state.Version, ISR: isr}
}

// alter sends ch and adopts its answer: the new state on success, the
// current one (and fencing, if it names another leader or epoch) on a
// refusal. No lock is held while the metadata decides.
func (l *Leader) alter(ctx context.Context, ch ISRChange) error {
	st, err := l.meta.AlterISR(ctx, l.tp, ch)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.pending = nil
	if st.Version > l.state.Version {
		l.adoptLocked(st)
	}
	l.updateLocked()
	l.wakeLocked()
	return err
}

// Refresh adopts the metadata's current state of the partition: a newer
// epoch or another leader fences this leader. The broker calls it when
// the metadata announces a change.
func (l *Leader) Refresh(ctx context.Context) error {
	st, err := l.meta.Partition(ctx, l.tp)
	if err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if st.Version > l.state.Version {
		l.adoptLocked(st)
		l.updateLocked()
		l.wakeLocked()
	}
	return nil
}

// Resign fences the leader for good, as a newer epoch would: it admits
// no more appends, and those waiting on the high watermark fail with
// ErrNotLeader (indeterminate). The broker calls it when the partition
// goes (its topic deleted).
func (l *Leader) Resign() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.fenced {
		l.fenced = true
		l.wakeLocked()
	}
}

func (l *Leader) adoptLocked(st State) {
	if st.Leader != l.id || st.LeaderEpoch != l.state.LeaderEpoch {
		l.fenced = true
	}
	l.state = st
}

func (l *Leader) checkEpochLocked(epoch int32) error {
	switch {
	case l.fenced:
		return fmt.Errorf("%w: %s: leader %d fenced in epoch %d", ErrNotLeader, l.tp, l.id, l.state.LeaderEpoch)
	case epoch < l.state.LeaderEpoch:
		return fmt.Errorf("%w: %s: epoch %d, the leader's is %d", ErrFencedLeaderEpoch, l.tp, epoch, l.state.LeaderEpoch)
	case epoch > l.state.LeaderEpoch:
		return fmt.Errorf("%w: %s: epoch %d, the leader's is %d", ErrUnknownLeaderEpoch, l.tp, epoch, l.state.LeaderEpoch)
	}
	return nil
}

// updateLocked recomputes the high watermark: the least log end over the
// maximal ISR (committed ∪ pending), the leader's own included, moving
// only forward, only while both the committed and the pending ISR have
// min.insync.replicas members, and exposed only once it reaches the
// epoch's start. A fenced leader moves nothing.
func (l *Leader) updateLocked() {
	if l.fenced {
		return
	}
	if len(l.state.ISR) < l.opts.MinInsyncReplicas || (l.pending != nil && len(l.pending) < l.opts.MinInsyncReplicas) {
		return
	}
	hw := l.log.LogEndOffset()
	for _, set := range [][]Member{l.state.ISR, l.pending} {
		for _, m := range set {
			if m.ID == l.id {
				continue
			}
			fo := l.followers[m.ID]
			if fo == nil || fo.leo < 0 {
				return // a member with no position in this epoch holds it still
			}
			hw = min(hw, fo.leo)
		}
	}
	if hw < l.epochStart || hw <= l.hw {
		return
	}
	if err := l.log.SetHighWatermark(hw); err != nil {
		// The log refuses what it cannot hold (past its durable end
		// under FlushSync); the next update tries again.
		return
	}
	l.hw = hw
	l.wakeLocked()
}

func (l *Leader) wakeLocked() {
	close(l.changed)
	l.changed = make(chan struct{})
}

// Ack is an append's acknowledgement level (Kafka's acks), the
// partition package's.
type Ack = partition.Ack

const (
	// AckAll (acks=-1) acknowledges once the high watermark passes the
	// append: every ISR member holds it.
	AckAll = partition.AckAll
	// AckNone (acks=0): the producer waits for nothing.
	AckNone = partition.AckNone
	// AckLeader (acks=1) acknowledges once the leader's log holds it: lost
	// if the leader fails before a follower copies it.
	AckLeader = partition.AckLeader
)

// WithAcks returns a ctx under which BeforeAppend and AfterAppend apply
// acks instead of AckAll, the default (partition.WithAcks).
func WithAcks(ctx context.Context, acks Ack) context.Context {
	return partition.WithAcks(ctx, acks)
}

// ExternalHighWatermark implements partition.Replication: the leader owns
// the high watermark.
func (l *Leader) ExternalHighWatermark() bool { return true }

// BeforeAppend implements partition.Replication: a fenced leader refuses
// with ErrNotLeader, and an acks=all append (partition.Acks of ctx) while
// the ISR is below min.insync.replicas with ErrNotEnoughReplicas. Both are
// definite: nothing is written. As in Kafka, acks 0 and 1 are not held to
// min.insync.replicas.
func (l *Leader) BeforeAppend(ctx context.Context, _ *partition.Partition) error {
	return l.admit(partition.Acks(ctx))
}

// Admit is BeforeAppend of an acks=all append without the partition: nil
// if it may be written now.
func (l *Leader) Admit() error { return l.admit(AckAll) }

func (l *Leader) admit(acks Ack) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.fenced {
		return fmt.Errorf("%w: %s: leader %d fenced in epoch %d", ErrNotLeader, l.tp, l.id, l.state.LeaderEpoch)
	}
	if n := len(l.state.ISR); acks == AckAll && n < l.opts.MinInsyncReplicas {
		return fmt.Errorf("%w: %s: %d in sync, min.insync.replicas %d", ErrNotEnoughReplicas, l.tp, n, l.opts.MinInsyncReplicas)
	}
	return nil
}

// AfterAppend implements partition.Replication: with AckAll (the default,
// see WithAcks) it returns once the high watermark passes last. It fails
// with ErrNotEnoughReplicasAfterAppend when the ISR shrinks below
// min.insync.replicas first, ErrNotLeader when fenced, ctx's error when it
// ends: all indeterminate (the partition wraps them in ErrUnknownOutcome).
func (l *Leader) AfterAppend(ctx context.Context, _ *partition.Partition, _, last int64) error {
	return l.Acknowledge(ctx, last)
}

// Acknowledge is AfterAppend without the partition.
func (l *Leader) Acknowledge(ctx context.Context, last int64) error {
	if partition.Acks(ctx) != AckAll {
		l.mu.Lock()
		l.updateLocked() // a leader alone in its ISR commits its own end
		l.mu.Unlock()
		return nil
	}
	for {
		l.mu.Lock()
		l.updateLocked()
		done, wait, err := l.ackedLocked(last)
		l.mu.Unlock()
		if done || err != nil {
			return err
		}
		select {
		case <-wait:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}

// Acked reports without waiting whether last is acknowledged (true, nil),
// failed (an error), or still waiting (false, nil).
func (l *Leader) Acked(last int64) (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.updateLocked()
	done, _, err := l.ackedLocked(last)
	return done, err
}

func (l *Leader) ackedLocked(last int64) (bool, <-chan struct{}, error) {
	switch {
	case l.hw > last:
		return true, nil, nil
	case l.fenced:
		return false, nil, fmt.Errorf("%w: %s: leader %d fenced before offset %d was committed", ErrNotLeader, l.tp, l.id, last)
	case len(l.state.ISR) < l.opts.MinInsyncReplicas:
		return false, nil, fmt.Errorf("%w: %s: offset %d, %d in sync, min.insync.replicas %d",
			ErrNotEnoughReplicasAfterAppend, l.tp, last, len(l.state.ISR), l.opts.MinInsyncReplicas)
	}
	return false, l.changed, nil
}

var _ partition.Replication = (*Leader)(nil)

// Hook is the partition.Replication a broker opens a replicated partition
// with: the partition outlives its replica's roles, so the hook forwards
// to the current Leader and refuses appends (ErrNotLeader, definite)
// while there is none, as on a follower. It owns the high watermark in
// every role: a follower's comes from its leader.
type Hook struct {
	tp     TopicPartition
	leader atomic.Pointer[Leader]
}

// NewHook returns the hook of tp, with no leader yet.
func NewHook(tp TopicPartition) *Hook { return &Hook{tp: tp} }

// SetLeader makes ld (nil: none, a follower) the role appends go to.
func (h *Hook) SetLeader(ld *Leader) { h.leader.Store(ld) }

// Leader returns the current leader, nil on a follower.
func (h *Hook) Leader() *Leader { return h.leader.Load() }

// ExternalHighWatermark implements partition.Replication.
func (h *Hook) ExternalHighWatermark() bool { return true }

// BeforeAppend implements partition.Replication.
func (h *Hook) BeforeAppend(ctx context.Context, p *partition.Partition) error {
	ld := h.leader.Load()
	if ld == nil {
		return fmt.Errorf("%w: %s: this replica follows", ErrNotLeader, h.tp)
	}
	return ld.BeforeAppend(ctx, p)
}

// AfterAppend implements partition.Replication. A leader replaced since
// BeforeAppend still answers for the append it admitted: fenced, it
// fails it (indeterminate).
func (h *Hook) AfterAppend(ctx context.Context, p *partition.Partition, first, last int64) error {
	ld := h.leader.Load()
	if ld == nil {
		return fmt.Errorf("%w: %s: leadership lost before offset %d was committed", ErrNotLeader, h.tp, last)
	}
	return ld.AfterAppend(ctx, p, first, last)
}

var _ partition.Replication = (*Hook)(nil)

package replica

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"
)

// TopicPartition names one partition.
type TopicPartition struct {
	Topic     string
	Partition int32
}

func (tp TopicPartition) String() string { return fmt.Sprintf("%s-%d", tp.Topic, tp.Partition) }

// State is a partition's replication state as the cluster's metadata
// holds it (Kafka's PartitionRegistration).
type State struct {
	// Replicas are the assigned replicas, preferred leader first.
	Replicas []int32
	// Leader is the replica that leads, -1 for none.
	Leader int32
	// LeaderEpoch rises strictly with every change of leader (and with an
	// unclean election); the leader stamps its batches with it.
	LeaderEpoch int32
	// ISR are the in-sync replicas, the leader among them, each with the
	// incarnation (broker epoch) it was admitted under.
	ISR []Member
	// Version (Kafka's partition epoch) rises with every change of the
	// state: the compare-and-swap token of AlterPartition.
	Version int32
	// Recovering is set by an unclean election (Kafka's
	// LeaderRecoveryState RECOVERING, KIP-704) until the new leader has
	// taken the lead (Mem.Recovered): the leader's broker logs and counts
	// the election then. A clean election clears it.
	Recovering bool
}

// Member is one in-sync replica and the incarnation it joined under.
type Member struct {
	ID          int32
	Incarnation int64
}

// InISR reports whether id is in the ISR.
func (s State) InISR(id int32) bool {
	return slices.ContainsFunc(s.ISR, func(m Member) bool { return m.ID == id })
}

// Clone returns a copy that shares no slice with s.
func (s State) Clone() State {
	s.Replicas = slices.Clone(s.Replicas)
	s.ISR = slices.Clone(s.ISR)
	return s
}

// ISRChange asks to replace a partition's ISR (Kafka's AlterPartition).
// It applies only if the partition is still at Version under LeaderEpoch
// led by Leader: a compare-and-swap.
type ISRChange struct {
	Leader      int32
	LeaderEpoch int32
	Version     int32
	ISR         []Member
}

// Metadata is the cluster's view of partition states that the replication
// layer needs: what it reads, and the one change a leader makes itself,
// its ISR. Elections are the controller's (see Mem.Elect). Every change is
// a compare-and-swap on the partition's Version, committed before the call
// returns: an in-memory Mem here, a Raft-backed controller next.
type Metadata interface {
	// Partition returns tp's current state.
	Partition(ctx context.Context, tp TopicPartition) (State, error)

	// AlterISR replaces tp's ISR if tp is still at ch.Version, led by
	// ch.Leader in ch.LeaderEpoch (else ErrStaleVersion, or ErrNotLeader
	// when the leader or its epoch changed), and every replica the change
	// adds is named by its current incarnation (else
	// ErrStaleIncarnation) and, where the controller tracks sessions, has
	// a live one (else ErrIneligibleReplica: a fenced broker rejoins only
	// once it heartbeats again, KIP-841). The leader must stay in the
	// ISR. It returns the new state, or on a refusal the current one.
	AlterISR(ctx context.Context, tp TopicPartition, ch ISRChange) (State, error)
}

// Mem is an in-memory Metadata, also playing the controller: partitions
// are created, brokers register their incarnations, and leaders are
// elected through it. It is safe for concurrent use.
type Mem struct {
	mu           sync.Mutex
	parts        map[TopicPartition]State
	incarnations map[int32]int64
	topics       map[string]TopicRecord // cluster.go
	version      int64                  // rises with every change
	changed      chan struct{}          // closed and replaced at every change
	// Unclean allows Elect to choose a replica outside the ISR. Default
	// false, as Kafka's unclean.leader.election.enable.
	Unclean bool
	// sessions is each live broker's last heartbeat (controller.go).
	sessions map[int32]time.Time
	// nextProducerID is the next producer id AllocateProducerID hands
	// out (cluster.go).
	nextProducerID int64
}

// NewMem returns an empty in-memory metadata.
func NewMem() *Mem {
	return &Mem{parts: map[TopicPartition]State{}, incarnations: map[int32]int64{},
		topics: map[string]TopicRecord{}, changed: make(chan struct{})}
}

// Create adds tp with replicas, all in the ISR under their registered
// incarnations, led by the first in epoch 0.
func (m *Mem) Create(tp TopicPartition, replicas ...int32) (State, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.parts[tp]; ok || len(replicas) == 0 {
		return State{}, fmt.Errorf("replica: %s: exists already or has no replicas", tp)
	}
	s := State{Replicas: slices.Clone(replicas), Leader: replicas[0]}
	for _, r := range replicas {
		s.ISR = append(s.ISR, Member{ID: r, Incarnation: m.incarnations[r]})
	}
	m.parts[tp] = s
	m.notifyLocked()
	return s.Clone(), nil
}

// Register records broker id's current incarnation: it rises every time
// the broker starts, so an ISR change naming an older one is refused.
func (m *Mem) Register(id int32, incarnation int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.incarnations[id] = incarnation
	m.notifyLocked()
}

// Incarnation returns broker id's registered incarnation.
func (m *Mem) Incarnation(id int32) int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.incarnations[id]
}

// Partition implements Metadata.
func (m *Mem) Partition(_ context.Context, tp TopicPartition) (State, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.parts[tp]
	if !ok {
		return State{}, fmt.Errorf("%w: %s", ErrUnknownPartition, tp)
	}
	return s.Clone(), nil
}

// AlterISR implements Metadata.
func (m *Mem) AlterISR(_ context.Context, tp TopicPartition, ch ISRChange) (State, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.parts[tp]
	if !ok {
		return State{}, fmt.Errorf("%w: %s", ErrUnknownPartition, tp)
	}
	switch {
	case s.Leader != ch.Leader || s.LeaderEpoch != ch.LeaderEpoch:
		return s.Clone(), fmt.Errorf("%w: %s: leader %d epoch %d asked, now leader %d epoch %d",
			ErrNotLeader, tp, ch.Leader, ch.LeaderEpoch, s.Leader, s.LeaderEpoch)
	case s.Version != ch.Version:
		return s.Clone(), fmt.Errorf("%w: %s: version %d asked, now %d", ErrStaleVersion, tp, ch.Version, s.Version)
	}
	if !slices.ContainsFunc(ch.ISR, func(x Member) bool { return x.ID == ch.Leader }) {
		return s.Clone(), fmt.Errorf("replica: %s: an ISR without its leader %d", tp, ch.Leader)
	}
	for _, x := range ch.ISR {
		if !slices.Contains(s.Replicas, x.ID) {
			return s.Clone(), fmt.Errorf("replica: %s: %d is not a replica", tp, x.ID)
		}
		if s.InISR(x.ID) {
			continue
		}
		if m.incarnations[x.ID] != x.Incarnation {
			return s.Clone(), fmt.Errorf("%w: %s: replica %d incarnation %d, now %d",
				ErrStaleIncarnation, tp, x.ID, x.Incarnation, m.incarnations[x.ID])
		}
		if _, live := m.sessions[x.ID]; m.sessions != nil && !live {
			// Fenced (KIP-841): its session ended or lapsed. It rejoins
			// once it heartbeats again.
			return s.Clone(), fmt.Errorf("%w: %s: replica %d has no live session", ErrIneligibleReplica, tp, x.ID)
		}
	}
	s.ISR = slices.Clone(ch.ISR)
	s.Version++
	m.parts[tp] = s
	m.notifyLocked()
	return s.Clone(), nil
}

// Elect makes leader lead tp in a new epoch. leader must be in the ISR,
// unless Unclean is set, in which case the ISR becomes the new leader
// alone (Kafka's unclean election: records only the others held are
// lost). It reports whether the election was unclean.
func (m *Mem) Elect(tp TopicPartition, leader int32) (State, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.parts[tp]
	if !ok {
		return State{}, false, fmt.Errorf("%w: %s", ErrUnknownPartition, tp)
	}
	if !slices.Contains(s.Replicas, leader) {
		return s.Clone(), false, fmt.Errorf("replica: %s: %d is not a replica", tp, leader)
	}
	unclean := !s.InISR(leader)
	if unclean {
		if !m.Unclean {
			return s.Clone(), false, fmt.Errorf("%w: %s: %d is not in the ISR", ErrNotEligible, tp, leader)
		}
		s.ISR = []Member{{ID: leader, Incarnation: m.incarnations[leader]}}
	}
	s.Recovering = unclean
	s.Leader = leader
	s.LeaderEpoch++
	s.Version++
	m.parts[tp] = s
	m.notifyLocked()
	return s.Clone(), unclean, nil
}

// Fence removes id from tp's ISR as the controller does when a broker's
// session ends (it is not the leader's to decide), leaving the leader in
// place unless id is the leader, whose partition then has none (-1) until
// Elect. It bumps the version, so a leader's pending AlterISR fails.
func (m *Mem) Fence(tp TopicPartition, id int32) (State, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.parts[tp]
	if !ok {
		return State{}, fmt.Errorf("%w: %s", ErrUnknownPartition, tp)
	}
	if len(s.ISR) > 1 || !s.InISR(id) {
		s.ISR = slices.DeleteFunc(slices.Clone(s.ISR), func(x Member) bool { return x.ID == id })
	}
	if s.Leader == id {
		s.Leader = -1
		s.LeaderEpoch++
	}
	s.Version++
	m.parts[tp] = s
	m.notifyLocked()
	return s.Clone(), nil
}

var _ Metadata = (*Mem)(nil)

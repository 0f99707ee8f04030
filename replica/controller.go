package replica

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

// Broker liveness, Kafka's way (KIP-631): every broker heartbeats to the
// controller, here the Mem, and one whose last heartbeat is older than
// the session timeout is gone, as if it had crashed. The controller then
// removes it from every ISR (except an ISR's last member, whose log is
// the only one known complete) and elects a new leader for each
// partition it led: the first live in-sync replica in assignment order,
// or, with none and Unclean set (or the topic's
// unclean.leader.election.enable), the first live replica outside the ISR
// (an unclean election: State.Recovering is set, the records only the
// others held are lost). With neither, the partition stays leaderless
// (-1) until an in-sync replica is back.
//
// Mem keeps no clock: the brokers pass theirs to Heartbeat and
// ExpireSessions, and every broker of the cluster runs ExpireSessions on
// its heartbeat tick, which changes the metadata once however many of
// them see a session lapse.

// Election is one change of a partition's leader the controller made.
type Election struct {
	TopicPartition
	// Leader is the new leader, -1 when no replica was eligible.
	Leader int32
	// LeaderEpoch is the new epoch.
	LeaderEpoch int32
	// Unclean is set when the leader was not in the ISR.
	Unclean bool
}

// Heartbeat records that broker id, in incarnation, is alive at now. It
// refuses (ErrStaleIncarnation) an incarnation other than the registered
// one: a broker restarted since then.
func (m *Mem) Heartbeat(id int32, incarnation int64, now time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if cur := m.incarnations[id]; cur != incarnation {
		return fmt.Errorf("%w: broker %d heartbeats as incarnation %d, registered %d",
			ErrStaleIncarnation, id, incarnation, cur)
	}
	if m.sessions == nil {
		m.sessions = map[int32]time.Time{}
	}
	m.sessions[id] = now
	return nil
}

// Alive reports whether broker id has a live session: it heartbeat and
// neither ended its session nor had it expired since.
func (m *Mem) Alive(id int32) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.sessions[id]
	return ok
}

// EndSession ends broker id's session now, as a controlled shutdown does
// at its end, or as the controller does when it learns a broker is gone
// before its session times out; it returns the elections that follow.
func (m *Mem) EndSession(id int32) []Election {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.sessions, id)
	return m.electLocked([]int32{id})
}

// ExpireSessions is the controller's pass: it ends the session of every
// broker whose last heartbeat is older than timeout at now, fences them
// out of the ISRs, and elects leaders for the partitions without a live
// one. It returns the elections it made, in partition order.
func (m *Mem) ExpireSessions(now time.Time, timeout time.Duration) []Election {
	m.mu.Lock()
	defer m.mu.Unlock()
	var gone []int32
	for id, last := range m.sessions {
		if now.Sub(last) > timeout {
			gone = append(gone, id)
			delete(m.sessions, id)
		}
	}
	return m.electLocked(gone)
}

// electLocked removes the brokers gone from every ISR and gives every
// partition whose leader is gone or missing a live leader where one is
// eligible.
func (m *Mem) electLocked(gone []int32) []Election {
	tps := make([]TopicPartition, 0, len(m.parts))
	for tp := range m.parts {
		tps = append(tps, tp)
	}
	slices.SortFunc(tps, func(a, b TopicPartition) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	var out []Election
	for _, tp := range tps {
		s := m.parts[tp]
		ns := s.Clone()
		for _, id := range gone {
			if len(ns.ISR) > 1 {
				ns.ISR = slices.DeleteFunc(ns.ISR, func(x Member) bool { return x.ID == id })
			}
			if ns.Leader == id {
				ns.Leader = -1
			}
		}
		unclean := false
		if ns.Leader == -1 {
			ns.Leader, unclean = m.candidateLocked(tp, ns)
			if unclean {
				ns.ISR = []Member{{ID: ns.Leader, Incarnation: m.incarnations[ns.Leader]}}
			}
		}
		leaderChanged := ns.Leader != s.Leader
		if !leaderChanged && slices.Equal(ns.ISR, s.ISR) {
			continue
		}
		if leaderChanged {
			ns.LeaderEpoch++
			if ns.Leader >= 0 {
				ns.Recovering = unclean
			}
			out = append(out, Election{TopicPartition: tp, Leader: ns.Leader, LeaderEpoch: ns.LeaderEpoch, Unclean: unclean})
		}
		ns.Version++
		m.parts[tp] = ns
	}
	if len(gone) > 0 || len(out) > 0 {
		m.notifyLocked()
	}
	return out
}

// candidateLocked picks the leader of a leaderless partition: the first
// live in-sync replica in assignment order, else, with Unclean or the
// topic's unclean.leader.election.enable, the first live replica
// (unclean), else none (-1).
func (m *Mem) candidateLocked(tp TopicPartition, s State) (leader int32, unclean bool) {
	for _, id := range s.Replicas {
		if _, live := m.sessions[id]; live && s.InISR(id) {
			return id, false
		}
	}
	if m.Unclean || m.topics[tp.Topic].Config.UncleanLeaderElection {
		for _, id := range s.Replicas {
			if _, live := m.sessions[id]; live {
				return id, true
			}
		}
	}
	return -1, false
}

// Recovered ends the recovery of an unclean election (KIP-704): leader,
// having taken the lead of tp in epoch, clears State.Recovering. It
// reports whether it did (false when the state moved on meanwhile).
func (m *Mem) Recovered(tp TopicPartition, leader, epoch int32) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.parts[tp]
	if !ok || !s.Recovering || s.Leader != leader || s.LeaderEpoch != epoch {
		return false
	}
	s.Recovering = false
	s.Version++
	m.parts[tp] = s
	m.notifyLocked()
	return true
}

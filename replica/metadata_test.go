package replica

import (
	"context"
	"errors"
	"testing"
)

var tp0 = TopicPartition{Topic: "t", Partition: 0}

// TestMemAlterISRIsCompareAndSwap: an ISR change applies only at the
// version, leader and epoch it was computed from; an added replica must
// name its current incarnation; the leader stays in.
func TestMemAlterISRIsCompareAndSwap(t *testing.T) {
	ctx := context.Background()
	m := NewMem()
	for id := int32(1); id <= 3; id++ {
		m.Register(id, 10*int64(id))
	}
	st, err := m.Create(tp0, 1, 2, 3)
	if err != nil {
		t.Fatal(err)
	}
	if st.Leader != 1 || st.LeaderEpoch != 0 || len(st.ISR) != 3 || st.Version != 0 {
		t.Fatalf("created %+v", st)
	}
	shrink := ISRChange{Leader: 1, LeaderEpoch: 0, Version: 0, ISR: []Member{{1, 10}, {2, 20}}}
	st, err = m.AlterISR(ctx, tp0, shrink)
	if err != nil || st.Version != 1 || st.InISR(3) {
		t.Fatalf("shrink: %+v, %v", st, err)
	}
	// The same change again is stale: its version is gone.
	if _, err := m.AlterISR(ctx, tp0, shrink); !errors.Is(err, ErrStaleVersion) {
		t.Fatalf("replayed change: %v, want ErrStaleVersion", err)
	}
	// 3 restarted: its old incarnation cannot bring it back (KIP-903).
	m.Register(3, 31)
	back := ISRChange{Leader: 1, LeaderEpoch: 0, Version: 1, ISR: []Member{{1, 10}, {2, 20}, {3, 30}}}
	if _, err := m.AlterISR(ctx, tp0, back); !errors.Is(err, ErrStaleIncarnation) {
		t.Fatalf("stale incarnation: %v, want ErrStaleIncarnation", err)
	}
	back.ISR[2].Incarnation = 31
	if st, err = m.AlterISR(ctx, tp0, back); err != nil || !st.InISR(3) || st.Version != 2 {
		t.Fatalf("expand: %+v, %v", st, err)
	}
	if _, err := m.AlterISR(ctx, tp0, ISRChange{Leader: 1, Version: 2, ISR: []Member{{2, 20}}}); err == nil {
		t.Fatal("an ISR without its leader was accepted")
	}
	// A new epoch fences the old leader's changes.
	if st, _, err = m.Elect(tp0, 2); err != nil || st.LeaderEpoch != 1 || st.Leader != 2 {
		t.Fatalf("elect: %+v, %v", st, err)
	}
	if _, err := m.AlterISR(ctx, tp0, ISRChange{Leader: 1, LeaderEpoch: 0, Version: st.Version, ISR: []Member{{1, 10}}}); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("old leader's change: %v, want ErrNotLeader", err)
	}
}

// TestMemElection: a clean election picks an ISR member; one outside is
// refused unless Unclean, and then the ISR is the new leader alone.
func TestMemElection(t *testing.T) {
	ctx := context.Background()
	m := NewMem()
	st, _ := m.Create(tp0, 1, 2, 3)
	st, err := m.AlterISR(ctx, tp0, ISRChange{Leader: 1, Version: st.Version, ISR: []Member{{ID: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := m.Elect(tp0, 2); !errors.Is(err, ErrNotEligible) {
		t.Fatalf("unclean election while disallowed: %v", err)
	}
	if _, _, err := m.Elect(tp0, 9); err == nil {
		t.Fatal("elected a non-replica")
	}
	m.Unclean = true
	st2, unclean, err := m.Elect(tp0, 2)
	if err != nil || !unclean || st2.LeaderEpoch != st.LeaderEpoch+1 || len(st2.ISR) != 1 || !st2.InISR(2) {
		t.Fatalf("unclean election: %+v %v %v", st2, unclean, err)
	}
	// Fencing the leader leaves no leader and bumps the epoch.
	st3, err := m.Fence(tp0, 2)
	if err != nil || st3.Leader != -1 || st3.LeaderEpoch != st2.LeaderEpoch+1 || !st3.InISR(2) {
		t.Fatalf("fence the last ISR member: %+v %v", st3, err)
	}
}

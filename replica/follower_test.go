package replica

import (
	"slices"
	"testing"
)

// logOf builds a memLog from (epoch, count) runs, values numbering the
// offsets with the epoch in the high bits so different tails differ.
func logOf(runs ...[2]int) *memLog {
	l := &memLog{}
	for _, r := range runs {
		for range r[1] {
			l.append(entry{epoch: int32(r[0]), value: uint64(r[0])<<32 | uint64(l.LogEndOffset())})
		}
	}
	return l
}

// reconcileWith runs a follower's reconciliation against leader until it
// is reconciled, as the OffsetForLeaderEpoch round trips would, and
// returns how many rounds it took.
func reconcileWith(t *testing.T, follower, leader *memLog) int {
	t.Helper()
	for round := 1; round <= 10; round++ {
		e, end := leader.EndOffsetForEpoch(follower.LastEpoch())
		done, err := Reconcile(follower, e, end)
		if err != nil {
			t.Fatal(err)
		}
		if done {
			return round
		}
	}
	t.Fatal("not reconciled after 10 rounds")
	return 0
}

// TestTruncationByLineage: the KIP scenarios of truncation, as the epoch
// caches of leader and follower meet.
func TestTruncationByLineage(t *testing.T) {
	for _, tc := range []struct {
		name             string
		leader, follower *memLog
		leaderEpoch      int32 // the leader's new epoch, begun at its end
		want             int64 // where the follower ends up
		rounds           int
	}{
		{
			// KIP-101 scenario 1: the follower has m2 (offset 1) but its
			// high watermark says 1. Truncating to it would lose m2 once
			// this follower is elected; the lineage keeps it.
			name:        "KIP-101 s1: keep what the leader has past the local HW",
			leader:      logOf([2]int{0, 2}),
			follower:    &memLog{entries: logOf([2]int{0, 2}).entries, epochs: logOf([2]int{0, 2}).epochs, hw: 1},
			leaderEpoch: 1, want: 2, rounds: 1,
		},
		{
			// KIP-101 scenario 2: both lost unflushed data, the follower
			// wrote offset 1 in epoch 0, the new leader offset 1 in epoch
			// 1: the follower's offset 1 is cut.
			name:        "KIP-101 s2: divergent tails after a double failure",
			leader:      logOf([2]int{0, 1}, [2]int{1, 2}),
			follower:    logOf([2]int{0, 2}),
			leaderEpoch: 2, want: 1, rounds: 1,
		},
		{
			// KIP-279: the follower led epoch 2 briefly (offsets 3-4) that
			// the leader never saw; the leader went 1 -> 3. The leader
			// answers epoch 1 ending at 3, which cuts the epoch-2 tail.
			name:        "KIP-279: fast double failover",
			leader:      logOf([2]int{0, 2}, [2]int{1, 1}, [2]int{3, 2}),
			follower:    logOf([2]int{0, 2}, [2]int{1, 1}, [2]int{2, 2}),
			leaderEpoch: 4, want: 3, rounds: 1,
		},
		{
			name:        "a follower behind keeps everything",
			leader:      logOf([2]int{0, 5}, [2]int{1, 5}),
			follower:    logOf([2]int{0, 3}),
			leaderEpoch: 2, want: 3, rounds: 1,
		},
		{
			// The follower's tail is of epochs the leader never had, two
			// of them, and so is the leader's: they meet in epoch 0.
			name:        "two foreign epochs",
			leader:      logOf([2]int{0, 2}, [2]int{3, 2}),
			follower:    logOf([2]int{0, 3}, [2]int{1, 1}, [2]int{2, 1}),
			leaderEpoch: 4, want: 2, rounds: 1,
		},
		{
			// The follower holds epochs 0 and 2, the leader 0, 1, 3: asked
			// for 2, the leader answers 1, which the follower never had.
			// It cuts to its own end of 1 (2's start) and asks again with
			// epoch 0.
			name:        "an epoch only the leader had takes a second round",
			leader:      logOf([2]int{0, 2}, [2]int{1, 2}, [2]int{3, 1}),
			follower:    logOf([2]int{0, 3}, [2]int{2, 2}),
			leaderEpoch: 4, want: 2, rounds: 2,
		},
		{
			name:        "a leader that knows no epoch this old",
			leader:      &memLog{epochs: []epochStart{{5, 0}}},
			follower:    logOf([2]int{0, 2}),
			leaderEpoch: 6, want: 0, rounds: 1,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.leader.beginEpoch(tc.leaderEpoch)
			rounds := reconcileWith(t, tc.follower, tc.leader)
			if got := tc.follower.LogEndOffset(); got != tc.want || rounds != tc.rounds {
				t.Fatalf("follower ends at %d after %d rounds, want %d after %d", got, rounds, tc.want, tc.rounds)
			}
			n := tc.follower.LogEndOffset()
			if !slices.Equal(tc.follower.entries, tc.leader.entries[:n]) {
				t.Fatalf("follower's prefix %v is not the leader's %v", tc.follower.entries, tc.leader.entries[:n])
			}
			if tc.follower.cutBelowHW != "" {
				t.Fatal(tc.follower.cutBelowHW)
			}
		})
	}
}

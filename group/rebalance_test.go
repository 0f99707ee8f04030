package group

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

// TestJoinLongerThanRebalanceTimeoutIsNoPollTimeout: a Join that waits
// longer than the member's RebalanceTimeout for the group (here for a
// member that never rejoins, until its session expires) is not a poll
// timeout: the poll timer starts when the rebalance ends, as Kafka's
// resets when its heartbeat thread resumes after a join. The member used
// to leave the group the moment its first assignment arrived.
func TestJoinLongerThanRebalanceTimeoutIsNoPollTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		topics := newMemTopics()
		topics.create("t", 2)
		c := newTestCoordinator(t, newMemStore(1), topics, nil)
		defer c.Close()
		// A member that is Stable and never heartbeats again: the group
		// waits for it to rejoin until its session (10s) expires.
		a, ach := newRaw(t, c, joinReq("g", "", "cooperative-sticky"))
		a.joined(mustRecvAfter(t, ach))
		mustRecvAfter(t, a.sync(nil))

		const rebalanceTimeout = 5 * time.Second
		start := time.Now()
		m, err := Join(contextWithTimeout(t, time.Minute), c, "g", newMemReader(topics), memberOpts("m", nil, func(o *MemberOptions) {
			o.RebalanceTimeout = rebalanceTimeout
		}))
		if err != nil {
			t.Fatalf("Join: %v", err)
		}
		defer m.Close()
		if d := time.Since(start); d <= rebalanceTimeout {
			t.Fatalf("the join took %v, not longer than RebalanceTimeout %v: the test tests nothing", d, rebalanceTimeout)
		}
		id, gen := m.MemberID(), m.Generation()
		// Two heartbeats, still well within RebalanceTimeout of the join.
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if err := c.ValidateGeneration("g", id, "", gen); err != nil {
			t.Fatalf("%v after a long join: %v", rebalanceTimeout, err)
		}
		if got := m.Assignment(); len(got) != 2 {
			t.Fatalf("the member owns %v, want both partitions", got)
		}
	})
}

// TestRebalanceCutShortRejoins: a Poll whose ctx ends in the middle of a
// rebalance (after JoinGroup put the member in a new generation, before
// SyncGroup gave it its share) leaves the member asking to rejoin, so the
// next Poll completes a rebalance. The member used to carry on in the new
// generation with the partitions it had given up (eager protocol: none),
// while the group's plan gave it partitions nobody read.
func TestRebalanceCutShortRejoins(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		topics := newMemTopics()
		topics.create("t", 2)
		produceN(topics, "t", 2, 4)
		c := newTestCoordinator(t, newMemStore(1), topics, nil)
		defer c.Close()
		// l, a raw member, leads the group.
		l, lch := newRaw(t, c, joinReq("g", "", "range"))
		l.joined(mustRecvAfter(t, lch))
		mustRecvAfter(t, l.sync(nil))
		both := encodeAssignment([]TopicPartition{{"t", 0}, {"t", 1}})
		plan := func(resp *JoinGroupResponse) []SyncGroupAssignment {
			t.Helper()
			if resp.LeaderID != l.id || len(resp.Members) != 2 {
				t.Fatalf("generation %d: leader %s, %d members; want %s leading 2", resp.GenerationID, resp.LeaderID, len(resp.Members), l.id)
			}
			var out []SyncGroupAssignment
			for _, jm := range resp.Members {
				if jm.MemberID != l.id {
					out = append(out, SyncGroupAssignment{MemberID: jm.MemberID, Assignment: both})
				}
			}
			return out
		}

		// m joins (eager: it gives up everything when it rejoins); l
		// rejoins and gives it both partitions.
		type joined struct {
			m   *Member[testRec]
			err error
		}
		jch := make(chan joined, 1)
		go func() {
			m, err := Join(context.Background(), c, "g", newMemReader(topics), memberOpts("m", nil, func(o *MemberOptions) {
				o.Assignors = []Assignor{Range()}
			}))
			jch <- joined{m, err}
		}()
		synctest.Wait()
		mustRecvAfter(t, l.sync(plan(l.joined(mustRecvAfter(t, l.join())))))
		j := mustRecvAfter(t, jch)
		if j.err != nil {
			t.Fatalf("Join: %v", j.err)
		}
		m := j.m
		defer m.Close()
		if got := m.Assignment(); len(got) != 2 {
			t.Fatalf("m owns %v after joining, want both partitions", got)
		}

		// l rejoins: m's heartbeat learns of the rebalance, and its next
		// Poll joins the new generation, then waits in SyncGroup for l
		// until the Poll's ctx ends.
		lj := l.join()
		synctest.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		_, err := m.Poll(ctx)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("the Poll cut short: %v", err)
		}
		resp := l.joined(mustRecv(t, lj))
		if m.Generation() != resp.GenerationID {
			t.Fatalf("m is in generation %d, want %d (the test needs the cut between JoinGroup and SyncGroup)", m.Generation(), resp.GenerationID)
		}
		// l completes the generation, m's share unread, and keeps
		// heartbeating while the group is stable, so only m can start
		// the rebalance it needs.
		mustRecvAfter(t, l.sync(plan(resp)))
		stop := make(chan struct{})
		defer close(stop)
		go func() {
			for l.heartbeat() == nil {
				select {
				case <-stop:
					return
				case <-time.After(time.Second):
				}
			}
		}()
		recs, err := m.Poll(contextWithTimeout(t, time.Minute))
		if err != nil {
			t.Fatalf("the Poll after the one cut short: %v (m owns %v)", err, m.Assignment())
		}
		if len(recs) == 0 || len(m.Assignment()) != 2 {
			t.Fatalf("m got %d records and owns %v, want both partitions", len(recs), m.Assignment())
		}
	})
}

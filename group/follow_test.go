package group

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// pollValues polls m until it has n records, and returns their values.
func pollValues(t *testing.T, ctx context.Context, m *Member[testRec], n int) []string {
	t.Helper()
	var out []string
	for len(out) < n {
		recs, err := m.Poll(ctx)
		if err != nil {
			t.Fatalf("Poll after %d of %d records: %v", len(out), n, err)
		}
		for _, r := range recs {
			out = append(out, r.value)
		}
	}
	return out
}

// twoCoordinators returns two coordinators over store, made with opts,
// the first owning group "g"'s partition p, and the one a member's
// FindCoordinator should answer now (the first).
func twoCoordinators(t *testing.T, store *memStore, topics *memTopics, opts func(*Options)) (a, b *Coordinator, p int32, cur *atomic.Pointer[Coordinator]) {
	t.Helper()
	a, b = newTestCoordinator(t, store, topics, opts), newTestCoordinator(t, store, topics, opts)
	p = PartitionFor("g", store.Partitions())
	if err := a.LoadPartition(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	cur = &atomic.Pointer[Coordinator]{}
	cur.Store(a)
	return a, b, p, cur
}

// A member with FindCoordinator follows its group's coordinator when the
// group's offsets partition moves to another (over the same Store), as a
// Kafka client does on NOT_COORDINATOR: the first coordinator unloads the
// partition (its leadership moved) or closes (its broker shut down), for
// a while none has it (FindCoordinator answers COORDINATOR_NOT_AVAILABLE),
// then the second loads it. The member is not stopped by any of it: the
// new coordinator does not know it, so it rejoins there and resumes from
// its commit, reading every record once, and its commits go to the new
// coordinator.
func TestMemberFollowsCoordinator(t *testing.T) {
	for _, move := range []string{"unload", "close"} {
		t.Run(move, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx := context.Background()
				store, topics := newMemStore(4), newMemTopics()
				topics.create("t", 2)
				produce := func(from, to int) {
					for i := from; i < to; i++ {
						topics.produce("t", int32(i%2), fmt.Sprint("r", i))
					}
				}
				produce(0, 10)
				a, b, p, cur := twoCoordinators(t, store, topics, func(o *Options) { o.Unloaded = true })
				defer b.Close()
				find := func(context.Context) (*Coordinator, error) {
					if c := cur.Load(); c != nil {
						return c, nil
					}
					return nil, fmt.Errorf("no leader of the offsets partition: %w", ErrCoordinatorNotAvailable)
				}
				ev := &events{}
				m, err := Join(ctx, nil, "g", newMemReader(topics), memberOpts("m", ev, func(o *MemberOptions) {
					o.FindCoordinator, o.DisableAutoCommit = find, true
				}))
				if err != nil {
					t.Fatalf("Join through FindCoordinator: %v", err)
				}
				got := pollValues(t, ctx, m, 10)
				if err := m.Commit(ctx); err != nil {
					t.Fatalf("Commit on the first coordinator: %v", err)
				}

				// The move: no coordinator for a while, then b.
				cur.Store(nil)
				if move == "unload" {
					if err := a.UnloadPartition(p); err != nil {
						t.Fatal(err)
					}
				} else if err := a.Close(); err != nil {
					t.Fatal(err)
				}
				defer a.Close()
				produce(10, 20)
				go func() {
					time.Sleep(2 * time.Second) // the election, in the bubble's time
					if err := b.LoadPartition(ctx, p); err != nil {
						t.Error(err)
					}
					cur.Store(b)
				}()
				got = append(got, pollValues(t, ctx, m, 10)...)
				if err := m.Commit(ctx); err != nil {
					t.Fatalf("Commit after the move: %v", err)
				}
				if len(m.Assignment()) != 2 {
					t.Fatalf("assignment after the move: %v", m.Assignment())
				}
				// Every record once: the commit before the move covered
				// everything read, so the rejoin resumes after it.
				var want []string
				for i := range 20 {
					want = append(want, fmt.Sprint("r", i))
				}
				slices.Sort(got)
				slices.Sort(want)
				if !slices.Equal(got, want) {
					t.Fatalf("records read: %v, want each of %v once", got, want)
				}
				resp, err := b.OffsetFetch(ctx, &OffsetFetchRequest{Group: "g", Topics: []OffsetFetchTopic{{Topic: "t", Partitions: []int32{0, 1}}}})
				if err != nil {
					t.Fatal(err)
				}
				for _, pr := range resp.Topics[0].Partitions {
					if pr.Offset != 10 {
						t.Fatalf("committed offset of t-%d on the new coordinator: %d, want 10", pr.Partition, pr.Offset)
					}
				}
				m.mu.Lock()
				fatal := m.fatal
				m.mu.Unlock()
				if fatal != nil {
					t.Fatalf("member stopped: %v", fatal)
				}
				if m.coordinator() != b {
					t.Fatal("the member does not talk to the new coordinator")
				}
				if err := m.Close(); err != nil {
					t.Fatalf("Close: %v", err)
				}
				if st := b.Stats(); st.Members != 0 {
					t.Fatalf("members left on the new coordinator after Close: %d", st.Members)
				}
			})
		})
	}
}

// Without FindCoordinator the coordinator given to Join is the group's for
// good: its closing stops the member, as before.
func TestMemberWithoutFindCoordinatorStopsWithIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		store, topics := newMemStore(1), newMemTopics()
		topics.create("t", 1)
		topics.produce("t", 0, "r0")
		c := newTestCoordinator(t, store, topics, nil)
		m, err := Join(ctx, c, "g", newMemReader(topics), memberOpts("m", nil, nil))
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		pollValues(t, ctx, m, 1)
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		pctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		if _, err := m.Poll(pctx); !errors.Is(err, ErrClosed) {
			t.Fatalf("Poll after the coordinator closed: %v, want ErrClosed", err)
		}
	})
}

// With Options.LoadMembers (a cluster's coordinators: a load is a
// leadership move, and the members live on), the new coordinator takes
// the group's members back from its metadata record, Stable in the same
// generation: the member that followed it heartbeats on there with its
// id and generation, keeps its partitions without a rebalance (no OnLost,
// no new generation), and commits there. A member that does not come back
// within its session timeout is removed as any expired member.
func TestLoadMembersKeepsGeneration(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		store, topics := newMemStore(4), newMemTopics()
		topics.create("t", 2)
		for i := range 10 {
			topics.produce("t", int32(i%2), fmt.Sprint("r", i))
		}
		a, b, p, cur := twoCoordinators(t, store, topics, func(o *Options) { o.Unloaded, o.LoadMembers = true, true })
		defer a.Close()
		defer b.Close()
		find := func(context.Context) (*Coordinator, error) { return cur.Load(), nil }
		ev := &events{}
		m, err := Join(ctx, nil, "g", newMemReader(topics), memberOpts("m", ev, func(o *MemberOptions) {
			o.FindCoordinator, o.DisableAutoCommit = find, true
		}))
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		pollValues(t, ctx, m, 10)
		gen := m.Generation()
		// A second group of the same offsets partition, whose member does
		// not follow the move (it keeps to a): b takes it back, and
		// removes it once its session lapses.
		other := ""
		for i := 0; other == ""; i++ {
			if id := fmt.Sprint("o", i); PartitionFor(id, store.Partitions()) == p {
				other = id
			}
		}
		stay, err := Join(ctx, a, other, newMemReader(topics), memberOpts("x", nil, nil))
		if err != nil {
			t.Fatal(err)
		}
		defer stay.Close()
		if err := a.UnloadPartition(p); err != nil {
			t.Fatal(err)
		}
		if err := b.LoadPartition(ctx, p); err != nil {
			t.Fatal(err)
		}
		cur.Store(b)
		if st := b.Stats(); st.Members != 2 {
			t.Fatalf("the new coordinator took %d members back, want 2", st.Members)
		}
		for i := 10; i < 20; i++ {
			topics.produce("t", int32(i%2), fmt.Sprint("r", i))
		}
		pollValues(t, ctx, m, 10)
		time.Sleep(20 * time.Second) // many heartbeat intervals, past the session timeout (10 s), short of the rebalance timeout (30 s) without a Poll
		synctest.Wait()
		if err := m.Commit(ctx); err != nil {
			t.Fatalf("Commit on the new coordinator: %v", err)
		}
		if g := m.Generation(); g != gen || len(m.Assignment()) != 2 {
			t.Fatalf("after the move: generation %d (was %d), assignment %v", g, gen, m.Assignment())
		}
		ev.mu.Lock()
		for _, e := range ev.log {
			if strings.HasPrefix(e, "lost") {
				t.Errorf("the move cost the member its partitions: %v", ev.log)
				break
			}
		}
		ev.mu.Unlock()
		if st := b.Stats(); st.Members != 1 {
			t.Fatalf("%d members on the new coordinator 20 s on, want 1: the one that did not follow expired", st.Members)
		}
	})
}

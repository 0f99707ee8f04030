package group

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// events is a log of what the members' callbacks saw, in real order.
type events struct {
	mu  sync.Mutex // guards log
	log []string
}

func (e *events) add(format string, args ...any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.log = append(e.log, fmt.Sprintf(format, args...))
}

// checkOwnership replays assigned/revoked/lost events and fails if a
// partition was assigned to a member while another still held it.
func (e *events) checkOwnership(t *testing.T) {
	t.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	owner := map[string]string{}
	for _, ev := range e.log {
		var kind, who, tp string
		if _, err := fmt.Sscanf(ev, "%s %s %s", &kind, &who, &tp); err != nil {
			continue
		}
		switch kind {
		case "assigned":
			if o, ok := owner[tp]; ok && o != who {
				t.Fatalf("%s assigned to %s while %s held it\nevents: %v", tp, who, o, e.log)
			}
			owner[tp] = who
		case "revoked", "lost":
			if owner[tp] != who {
				t.Fatalf("%s %s by %s, held by %q\nevents: %v", tp, kind, who, owner[tp], e.log)
			}
			delete(owner, tp)
		}
	}
}

// app is an application consuming through a Member on its own goroutine.
type app struct {
	name   string
	m      *Member[testRec]
	r      *memReader
	cancel context.CancelFunc
	done   chan struct{}

	mu   sync.Mutex // guards got, errs and pause
	got  []testRec
	errs []error
	// handle, if set, runs for every record before it counts as got.
	handle func(testRec)
}

func memberOpts(name string, ev *events, mod func(*MemberOptions)) *MemberOptions {
	o := &MemberOptions{
		Topics: []string{"t"}, SessionTimeout: 10 * time.Second, HeartbeatInterval: time.Second,
		RebalanceTimeout: 30 * time.Second, Reset: ResetEarliest, ClientID: name,
	}
	if ev != nil {
		o.OnAssigned = func(_ context.Context, tps []TopicPartition) {
			for _, tp := range tps {
				ev.add("assigned %s %s", name, tp)
			}
		}
		o.OnRevoked = func(_ context.Context, tps []TopicPartition) {
			for _, tp := range tps {
				ev.add("revoked %s %s", name, tp)
			}
		}
		o.OnLost = func(_ context.Context, tps []TopicPartition) {
			for _, tp := range tps {
				ev.add("lost %s %s", name, tp)
			}
		}
	}
	if mod != nil {
		mod(o)
	}
	return o
}

// startApp joins a member and polls on a goroutine until stopped.
// oneMemberGroup is the start of several synctest tests: a topic "t" of
// two partitions, a coordinator (the caller closes it), and member "a" of
// group "g" once it has joined and owns both partitions.
func oneMemberGroup(t *testing.T) (*memTopics, *Coordinator, *app) {
	t.Helper()
	topics := newMemTopics()
	topics.create("t", 2)
	c := newTestCoordinator(t, newMemStore(1), topics, nil)
	a := startApp(t, c, topics, "g", "a", memberOpts("a", nil, nil))
	synctest.Wait()
	return topics, c, a
}

func startApp(t *testing.T, c *Coordinator, topics *memTopics, group, name string, opts *MemberOptions) *app {
	t.Helper()
	r := newMemReader(topics)
	m, err := Join(context.Background(), c, group, r, opts)
	if err != nil {
		t.Fatalf("%s: Join: %v", name, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	a := &app{name: name, m: m, r: r, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(a.done)
		for {
			recs, err := m.Poll(ctx)
			if err != nil {
				if ctx.Err() != nil || errors.Is(err, ErrClosed) {
					return
				}
				a.mu.Lock()
				a.errs = append(a.errs, err)
				a.mu.Unlock()
				time.Sleep(100 * time.Millisecond)
				continue
			}
			for _, rec := range recs {
				a.mu.Lock()
				h := a.handle
				a.mu.Unlock()
				if h != nil {
					h(rec)
				}
				a.mu.Lock()
				a.got = append(a.got, rec)
				a.mu.Unlock()
			}
		}
	}()
	return a
}

// stop ends the application's poll loop, leaving the member as it is.
func (a *app) stop() {
	a.cancel()
	<-a.done
}

// close stops the loop and closes the member.
func (a *app) close(t *testing.T) {
	t.Helper()
	a.stop()
	if err := a.m.Close(); err != nil && !errors.Is(err, ErrClosed) {
		t.Errorf("%s: Close: %v", a.name, err)
	}
}

func (a *app) records() []testRec {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.got)
}

func produceN(topics *memTopics, topic string, parts, n int) {
	for i := range n {
		topics.produce(topic, int32(i%parts), fmt.Sprintf("v%d", i))
	}
}

// byRecord counts deliveries per (partition, offset).
func byRecord(recs ...[]testRec) map[testRec]int {
	out := map[testRec]int{}
	for _, rs := range recs {
		for _, r := range rs {
			out[r]++
		}
	}
	return out
}

func TestQueueAndPubSub(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		topics := newMemTopics()
		topics.create("t", 6)
		c := newTestCoordinator(t, newMemStore(4), topics, nil)
		defer c.Close()
		ev := &events{}
		var queue []*app
		for i := range 3 {
			queue = append(queue, startApp(t, c, topics, "workers", fmt.Sprint("w", i), memberOpts(fmt.Sprint("w", i), ev, nil)))
			synctest.Wait()
		}
		audit := startApp(t, c, topics, "audit", "audit", memberOpts("audit", nil, nil))
		synctest.Wait()
		for _, a := range queue {
			if n := len(a.m.Assignment()); n != 2 {
				t.Fatalf("%s owns %d partitions, want 2 of 6", a.name, n)
			}
		}
		produceN(topics, "t", 6, 600)
		synctest.Wait()
		var all [][]testRec
		for _, a := range queue {
			recs := a.records()
			for _, r := range recs {
				if !slices.Contains(a.m.Assignment(), r.tp) {
					t.Fatalf("%s got %v outside its assignment %v", a.name, r, a.m.Assignment())
				}
			}
			all = append(all, recs)
		}
		counts := byRecord(all...)
		if len(counts) != 600 {
			t.Fatalf("the group saw %d distinct records of 600", len(counts))
		}
		for r, n := range counts {
			if n != 1 {
				t.Fatalf("%v delivered %d times without failures", r, n)
			}
		}
		if n := len(byRecord(audit.records())); n != 600 {
			t.Fatalf("the second group saw %d of 600", n)
		}
		ev.checkOwnership(t)
		for _, a := range append(queue, audit) {
			a.close(t)
		}
	})
}

func TestCooperativeRebalanceReleasesBeforeReassigning(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		topics := newMemTopics()
		topics.create("t", 8)
		c := newTestCoordinator(t, newMemStore(1), topics, nil)
		defer c.Close()
		ev := &events{}
		a := startApp(t, c, topics, "g", "a", memberOpts("a", ev, nil))
		produceN(topics, "t", 8, 80)
		synctest.Wait()
		gen := a.m.Generation()
		b := startApp(t, c, topics, "g", "b", memberOpts("b", ev, nil))
		synctest.Wait()
		// Two rebalances: the first takes four partitions from a, the
		// second gives them to b.
		if g := a.m.Generation(); g != gen+2 {
			t.Fatalf("generation %d after b joined, want %d", g, gen+2)
		}
		if la, lb := len(a.m.Assignment()), len(b.m.Assignment()); la != 4 || lb != 4 {
			t.Fatalf("assignment sizes %d/%d", la, lb)
		}
		ev.checkOwnership(t)
		// b continues where a left off: everything was delivered once.
		produceN(topics, "t", 8, 80)
		synctest.Wait()
		counts := byRecord(a.records(), b.records())
		if len(counts) != 160 {
			t.Fatalf("%d distinct records of 160", len(counts))
		}
		for r, n := range counts {
			if n != 1 {
				t.Fatalf("%v delivered %d times", r, n)
			}
		}
		// a leaves cleanly: b gets everything at once, no session wait.
		start := time.Now()
		a.close(t)
		synctest.Wait()
		if len(b.m.Assignment()) != 8 || time.Since(start) > 0 {
			t.Fatalf("after a left: b owns %v, after %v", b.m.Assignment(), time.Since(start))
		}
		ev.checkOwnership(t)
		b.close(t)
	})
}

// A heartbeat sent just before the member began a rebalance and answered
// REBALANCE_IN_PROGRESS while its JoinGroup waits is about the generation
// that join leaves: it must not make the member rejoin once more (which
// cost the whole group an extra rebalance, 1 run in ~500 of the test
// above). Outside a rebalance the same answer does ask for a rejoin.
func TestRebalanceAnswerDuringJoinDoesNotRejoinAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, c, a := oneMemberGroup(t)
		defer c.Close()
		m := a.m
		m.mu.Lock()
		id, gen := m.memberID, m.generation
		m.inRebalance = true // as while its JoinGroup is under way
		m.mu.Unlock()
		_ = m.onRequestError(fmt.Errorf("heartbeat: %w", ErrRebalanceInProgress), id, gen)
		m.mu.Lock()
		rejoin := m.rejoin
		m.inRebalance = false
		m.mu.Unlock()
		if rejoin {
			t.Fatal("an answer about the generation being left asked for another rejoin")
		}
		_ = m.onRequestError(fmt.Errorf("heartbeat: %w", ErrRebalanceInProgress), id, gen)
		synctest.Wait()
		if g := m.Generation(); g != gen+1 {
			t.Fatalf("generation %d after a rebalance was asked for outside one, want %d", g, gen+1)
		}
		a.close(t)
	})
}

func TestEagerProtocolRevokesEverything(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		topics := newMemTopics()
		topics.create("t", 4)
		c := newTestCoordinator(t, newMemStore(1), topics, nil)
		defer c.Close()
		ev := &events{}
		eager := func(o *MemberOptions) { o.Assignors = []Assignor{Range(), CooperativeSticky()} }
		a := startApp(t, c, topics, "g", "a", memberOpts("a", ev, eager))
		synctest.Wait()
		b := startApp(t, c, topics, "g", "b", memberOpts("b", ev, eager))
		synctest.Wait()
		ev.mu.Lock()
		revoked := 0
		for _, e := range ev.log {
			if len(e) > 9 && e[:9] == "revoked a" {
				revoked++
			}
		}
		ev.mu.Unlock()
		if revoked != 4 {
			t.Fatalf("a revoked %d partitions before the eager rebalance, want all 4: %v", revoked, ev.log)
		}
		if la, lb := a.m.Assignment(), b.m.Assignment(); !slices.Equal(la, tps("t", 0, "t", 1)) || !slices.Equal(lb, tps("t", 2, "t", 3)) {
			t.Fatalf("range assignment %v / %v", la, lb)
		}
		ev.checkOwnership(t)
		a.close(t)
		b.close(t)
	})
}

func TestCrashedMemberIsExpelledAndFenced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		topics := newMemTopics()
		topics.create("t", 4)
		c := newTestCoordinator(t, newMemStore(1), topics, nil)
		defer c.Close()
		ev := &events{}
		manual := func(o *MemberOptions) { o.DisableAutoCommit = true }
		a := startApp(t, c, topics, "g", "a", memberOpts("a", ev, manual))
		synctest.Wait()
		b := startApp(t, c, topics, "g", "b", memberOpts("b", ev, manual))
		synctest.Wait()
		produceN(topics, "t", 4, 40)
		synctest.Wait()
		if err := a.m.Commit(context.Background()); err != nil {
			t.Fatal(err)
		}
		committed := map[TopicPartition]int64{}
		for _, tp := range a.m.Assignment() {
			committed[tp] = fetchOffset(t, c, "g", tp)
		}
		produceN(topics, "t", 4, 40) // a reads these but never commits them
		synctest.Wait()
		// a's process freezes: no heartbeats, no polls.
		a.stop()
		a.m.mu.Lock()
		a.m.freeze = make(chan struct{})
		a.m.mu.Unlock()
		time.Sleep(15 * time.Second)
		synctest.Wait()
		if len(b.m.Assignment()) != 4 {
			t.Fatalf("b owns %v after a's session expired", b.m.Assignment())
		}
		// b redelivers what a read but did not commit: at-least-once.
		seenByB := byRecord(b.records())
		for _, r := range a.records() {
			if off, ok := committed[r.tp]; ok && r.offset >= off && seenByB[r] == 0 {
				t.Fatalf("%v read by a after its last commit was not redelivered to b", r)
			}
		}
		// The zombie's commit is refused, so b's progress stands.
		err := a.m.CommitOffsets(context.Background(), map[TopicPartition]int64{{"t", 0}: 1})
		if !errors.Is(err, ErrCommitFailed) || !errors.Is(err, ErrUnknownMemberID) {
			t.Fatalf("zombie commit: %v", err)
		}
		if err := b.m.Commit(context.Background()); err != nil {
			t.Fatal(err)
		}
		if off := fetchOffset(t, c, "g", TopicPartition{"t", 0}); off != 20 {
			t.Fatalf("t-0 committed at %d, want 20", off)
		}
		// The zombie wakes up: its partitions are lost, it rejoins.
		a.m.mu.Lock()
		close(a.m.freeze)
		a.m.freeze = nil
		a.m.mu.Unlock()
		_, err = a.m.Poll(contextWithTimeout(t, time.Second))
		if err != nil && !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("zombie's poll: %v", err)
		}
		synctest.Wait()
		if la, lb := len(a.m.Assignment()), len(b.m.Assignment()); la+lb != 4 {
			t.Fatalf("after the zombie rejoined: %d + %d partitions", la, lb)
		}
		ev.mu.Lock()
		lost := slices.ContainsFunc(ev.log, func(s string) bool { return len(s) > 6 && s[:6] == "lost a" })
		ev.mu.Unlock()
		if !lost {
			t.Fatalf("the zombie's partitions were not reported lost: %v", ev.log)
		}
		// (b was assigned a's partitions before the zombie learned it lost
		// them: the zombie was no member then; ownership among live
		// members is what TestRandomSchedule checks.)
		if st := c.Stats(); st.Expired != 1 {
			t.Fatalf("stats %+v", st)
		}
		a.m.Close()
		b.close(t)
	})
}

func contextWithTimeout(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func TestPollTimeoutLeavesTheGroup(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		topics := newMemTopics()
		topics.create("t", 2)
		c := newTestCoordinator(t, newMemStore(1), topics, nil)
		defer c.Close()
		ev := &events{}
		a := startApp(t, c, topics, "g", "a", memberOpts("a", ev, nil))
		synctest.Wait()
		b := startApp(t, c, topics, "g", "b", memberOpts("b", ev, nil))
		synctest.Wait()
		// a's application hangs in its handler: it stops polling.
		hang := make(chan struct{})
		a.mu.Lock()
		a.handle = func(testRec) { <-hang }
		a.mu.Unlock()
		produceN(topics, "t", 2, 2)
		time.Sleep(31 * time.Second)
		synctest.Wait()
		if len(b.m.Assignment()) != 2 {
			t.Fatalf("b owns %v after a's poll timeout", b.m.Assignment())
		}
		close(hang)
		synctest.Wait()
		a.close(t)
		b.close(t)
	})
}

func TestStaticMemberRestartKeepsPartitions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		topics := newMemTopics()
		topics.create("t", 4)
		c := newTestCoordinator(t, newMemStore(1), topics, nil)
		defer c.Close()
		static := func(id string) func(*MemberOptions) {
			return func(o *MemberOptions) { o.InstanceID = id }
		}
		a := startApp(t, c, topics, "g", "a", memberOpts("a", nil, static("a")))
		synctest.Wait()
		b := startApp(t, c, topics, "g", "b", memberOpts("b", nil, static("b")))
		synctest.Wait()
		gen, owned := a.m.Generation(), b.m.Assignment()
		produceN(topics, "t", 4, 40)
		synctest.Wait()
		b.close(t) // a static member does not leave
		time.Sleep(2 * time.Second)
		b2 := startApp(t, c, topics, "g", "b2", memberOpts("b2", nil, static("b")))
		synctest.Wait()
		if g := a.m.Generation(); g != gen || !slices.Equal(b2.m.Assignment(), owned) {
			t.Fatalf("after the restart: generation %d (was %d), b owns %v (was %v)", g, gen, b2.m.Assignment(), owned)
		}
		// b2 resumes from b's commit at Close: nothing is read twice.
		produceN(topics, "t", 4, 40)
		synctest.Wait()
		counts := byRecord(a.records(), b.records(), b2.records())
		if len(counts) != 80 {
			t.Fatalf("%d distinct of 80", len(counts))
		}
		for r, n := range counts {
			if n != 1 {
				t.Fatalf("%v delivered %d times", r, n)
			}
		}
		// Another process with b's instance id fences b2.
		b3 := startApp(t, c, topics, "g", "b3", memberOpts("b3", nil, static("b")))
		synctest.Wait()
		b2.mu.Lock()
		fenced := slices.ContainsFunc(b2.errs, func(err error) bool { return errors.Is(err, ErrFencedInstanceID) })
		b2.mu.Unlock()
		if !fenced {
			t.Fatalf("b2 was not fenced: %v", b2.errs)
		}
		for _, x := range []*app{a, b2, b3} {
			x.close(t)
		}
	})
}

func TestResetPolicies(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		topics := newMemTopics()
		topics.create("t", 1)
		produceN(topics, "t", 1, 10)
		c := newTestCoordinator(t, newMemStore(1), topics, nil)
		defer c.Close()
		poll := func(m *Member[testRec]) ([]testRec, error) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			return m.Poll(ctx)
		}
		for _, tc := range []struct {
			reset ResetPolicy
			first int64
		}{{ResetEarliest, 0}, {ResetLatest, 10}} {
			m, err := Join(context.Background(), c, "g-"+tc.reset.String(), newMemReader(topics), memberOpts("m", nil, func(o *MemberOptions) { o.Reset = tc.reset }))
			if err != nil {
				t.Fatal(err)
			}
			if tc.reset == ResetLatest {
				topics.produce("t", 0, "late")
			}
			recs, err := poll(m)
			if err != nil || recs[0].offset != tc.first {
				t.Fatalf("%v: first record %v, %v", tc.reset, recs, err)
			}
			m.Close()
		}
		m, err := Join(context.Background(), c, "g-none", newMemReader(topics), memberOpts("m", nil, func(o *MemberOptions) { o.Reset = ResetNone }))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := poll(m); !errors.Is(err, ErrNoOffset) {
			t.Fatalf("reset none: %v", err)
		}
		if err := m.Seek(TopicPartition{"t", 0}, 7); err != nil {
			t.Fatal(err)
		}
		if recs, err := poll(m); err != nil || recs[0].offset != 7 {
			t.Fatalf("after Seek: %v %v", recs, err)
		}
		if err := m.Seek(TopicPartition{"t", 3}, 0); !errors.Is(err, ErrUnknownTopicOrPartition) {
			t.Fatalf("Seek of an unowned partition: %v", err)
		}
		m.Close()
		// A committed offset wins over the policy.
		if _, err := c.OffsetCommit(context.Background(), &OffsetCommitRequest{Group: "g-committed", GenerationID: -1,
			Topics: []OffsetCommitTopic{{Topic: "t", Partitions: []OffsetCommitPartition{{Partition: 0, Offset: 4}}}}}); err != nil {
			t.Fatal(err)
		}
		m, err = Join(context.Background(), c, "g-committed", newMemReader(topics), memberOpts("m", nil, func(o *MemberOptions) { o.Reset = ResetLatest }))
		if err != nil {
			t.Fatal(err)
		}
		if recs, err := poll(m); err != nil || recs[0].offset != 4 {
			t.Fatalf("from the committed offset: %v %v", recs, err)
		}
		m.Close()
	})
}

func TestAutoCommitIsAtLeastOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		topics := newMemTopics()
		topics.create("t", 1)
		produceN(topics, "t", 1, 20)
		c := newTestCoordinator(t, newMemStore(1), topics, nil)
		defer c.Close()
		m, err := Join(context.Background(), c, "g", newMemReader(topics), memberOpts("m", nil, func(o *MemberOptions) {
			o.AutoCommitInterval = time.Second
		}))
		if err != nil {
			t.Fatal(err)
		}
		m.reader.(*memReader).max = 5
		ctx := context.Background()
		first, err := m.Poll(ctx) // 0-4
		if err != nil || len(first) != 5 {
			t.Fatalf("poll: %v %v", first, err)
		}
		time.Sleep(2 * time.Second)
		// This Poll says 0-4 are processed and commits them: not 5-9,
		// which it returns unprocessed.
		if _, err := m.Poll(ctx); err != nil {
			t.Fatal(err)
		}
		if off := fetchOffset(t, c, "g", TopicPartition{"t", 0}); off != 5 {
			t.Fatalf("auto-commit at %d, want 5 (the first poll's records)", off)
		}
		// The Records loop counts a record once its body returned.
		n := 0
		for r, err := range m.Records(ctx) {
			if err != nil {
				t.Fatal(err)
			}
			if r.offset != int64(10+n) {
				t.Fatalf("record %d at offset %d", n, r.offset)
			}
			if n++; n == 3 {
				break // 10, 11, 12 processed
			}
		}
		time.Sleep(2 * time.Second)
		recs, err := m.Poll(ctx)
		if err != nil || recs[0].offset != 13 {
			t.Fatalf("after the loop stopped: %v %v", recs, err)
		}
		if off := fetchOffset(t, c, "g", TopicPartition{"t", 0}); off != 13 {
			t.Fatalf("auto-commit at %d, want 13", off)
		}
		// Close commits what was handed out.
		if err := m.Close(); err != nil {
			t.Fatal(err)
		}
		if off := fetchOffset(t, c, "g", TopicPartition{"t", 0}); off != recs[len(recs)-1].offset+1 {
			t.Fatalf("commit at Close: %d", off)
		}
		if _, err := m.Poll(ctx); !errors.Is(err, ErrClosed) {
			t.Fatalf("Poll after Close: %v", err)
		}
		if err := m.Close(); !errors.Is(err, ErrClosed) {
			t.Fatalf("second Close: %v", err)
		}
	})
}

func TestRevokeCallbackCommitsBeforeHandOver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		topics := newMemTopics()
		topics.create("t", 2)
		produceN(topics, "t", 2, 20)
		c := newTestCoordinator(t, newMemStore(1), topics, nil)
		defer c.Close()
		var a *app
		var commitErr error
		opts := memberOpts("a", nil, func(o *MemberOptions) {
			o.DisableAutoCommit = true
			o.OnRevoked = func(ctx context.Context, tps []TopicPartition) {
				commitErr = a.m.Commit(ctx)
			}
		})
		a = startApp(t, c, topics, "g", "a", opts)
		synctest.Wait()
		b := startApp(t, c, topics, "g", "b", memberOpts("b", nil, func(o *MemberOptions) { o.DisableAutoCommit = true }))
		synctest.Wait()
		if commitErr != nil {
			t.Fatalf("commit in OnRevoked: %v", commitErr)
		}
		// b starts its partition where a committed in OnRevoked.
		counts := byRecord(a.records(), b.records())
		if len(counts) != 20 {
			t.Fatalf("%d distinct of 20", len(counts))
		}
		for r, n := range counts {
			if n != 1 {
				t.Fatalf("%v delivered %d times", r, n)
			}
		}
		a.close(t)
		b.close(t)
	})
}

func TestLeaderRebalancesWhenPartitionsAreAdded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		topics, c, a := oneMemberGroup(t)
		defer c.Close()
		b := startApp(t, c, topics, "g", "b", memberOpts("b", nil, nil))
		synctest.Wait()
		topics.create("t", 6)
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if la, lb := len(a.m.Assignment()), len(b.m.Assignment()); la != 3 || lb != 3 {
			t.Fatalf("after adding partitions: %d/%d", la, lb)
		}
		a.close(t)
		b.close(t)
	})
}

func TestMemberOptionsValidation(t *testing.T) {
	topics := newMemTopics()
	c := newTestCoordinator(t, newMemStore(1), topics, nil)
	defer c.Close()
	for _, tc := range []struct {
		field string
		o     *MemberOptions
	}{
		{"Topics", nil},
		{"Topics", &MemberOptions{Topics: []string{""}}},
		{"Assignors", &MemberOptions{Topics: []string{"t"}, Assignors: []Assignor{Range(), Range()}}},
		{"Assignors", &MemberOptions{Topics: []string{"t"}, Assignors: []Assignor{nil}}},
		{"HeartbeatInterval", &MemberOptions{Topics: []string{"t"}, SessionTimeout: time.Second, HeartbeatInterval: 2 * time.Second}},
		{"SessionTimeout", &MemberOptions{Topics: []string{"t"}, SessionTimeout: -time.Second, HeartbeatInterval: time.Second}},
		{"Reset", &MemberOptions{Topics: []string{"t"}, Reset: 9}},
		{"AutoCommitInterval", &MemberOptions{Topics: []string{"t"}, AutoCommitInterval: -1}},
	} {
		_, err := Join(context.Background(), c, "g", newMemReader(topics), tc.o)
		if !errors.Is(err, ErrInvalidOptions) || !containsWord(err.Error(), tc.field) {
			t.Errorf("%s: %v", tc.field, err)
		}
	}
	if _, err := Join(context.Background(), c, "", newMemReader(topics), &MemberOptions{Topics: []string{"t"}}); !errors.Is(err, ErrInvalidGroupID) {
		t.Errorf("empty group: %v", err)
	}
	for _, tc := range []struct {
		field string
		o     *Options
	}{
		{"Store", &Options{Topics: topics}},
		{"Topics", &Options{Store: newMemStore(1)}},
		{"Store", &Options{Store: newMemStore(0), Topics: topics}},
		{"MaxSessionTimeout", &Options{Store: newMemStore(1), Topics: topics, MinSessionTimeout: time.Hour, MaxSessionTimeout: time.Second}},
		{"InitialRebalanceDelay", &Options{Store: newMemStore(1), Topics: topics, InitialRebalanceDelay: -1}},
		{"MaxGroupSize", &Options{Store: newMemStore(1), Topics: topics, MaxGroupSize: -1}},
	} {
		if _, err := NewCoordinator(tc.o); !errors.Is(err, ErrInvalidOptions) || !containsWord(err.Error(), tc.field) {
			t.Errorf("%s: %v", tc.field, err)
		}
	}
	if _, err := NewCoordinator(nil); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("nil options: %v", err)
	}
}

func containsWord(s, w string) bool {
	for i := 0; i+len(w) <= len(s); i++ {
		if s[i:i+len(w)] == w {
			return true
		}
	}
	return false
}

// TestJoinThatEndsWithItsContextLeaves: a Join whose ctx ends while the
// group waits for another member returns ctx's error and leaves nothing
// behind: no member in the group, no goroutine.
func TestJoinThatEndsWithItsContextLeaves(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		topics := newMemTopics()
		topics.create("t", 2)
		c := newTestCoordinator(t, newMemStore(1), topics, nil)
		defer c.Close()
		// A raw member that is Stable and never rejoins.
		req := joinReq("g", "", "cooperative-sticky")
		a, ach := newRaw(t, c, req)
		a.joined(mustRecvAfter(t, ach))
		mustRecvAfter(t, a.sync(nil))
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_, err := Join(ctx, c, "g", newMemReader(topics), memberOpts("m", nil, nil))
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Join: %v", err)
		}
		d, _ := c.DescribeGroups(context.Background(), []string{"g"})
		if len(d[0].Members) != 1 || d[0].Members[0].MemberID != a.id {
			t.Fatalf("members after the failed join: %+v", d[0].Members)
		}
	})
}

// A Commit whose offsets were chosen before a rebalance moved partitions
// away is refused (the generation it was chosen in is gone), rather than
// committed in the new generation for partitions the member no longer
// owns, which would move their offsets back under their new owner.
func TestCommitChosenBeforeARebalanceIsRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		topics, c, a := oneMemberGroup(t)
		defer c.Close()
		produceN(topics, "t", 2, 6)
		synctest.Wait()
		if len(a.records()) != 6 || len(a.m.Assignment()) != 2 {
			t.Fatalf("a got %d records, owns %v", len(a.records()), a.m.Assignment())
		}
		var b *app
		commitChosenHook = func() {
			// Between choosing a's offsets and sending them: b joins, and
			// the group rebalances a partition over to it.
			b = startApp(t, c, topics, "g", "b", memberOpts("b", nil, nil))
			synctest.Wait()
		}
		defer func() { commitChosenHook = nil }()
		err := a.m.Commit(context.Background())
		commitChosenHook = nil
		if len(b.m.Assignment()) == 0 {
			t.Fatalf("b owns nothing after joining: the test moved no partition")
		}
		if !errors.Is(err, ErrCommitFailed) {
			t.Fatalf("Commit of offsets chosen in a generation since gone: %v, want ErrCommitFailed", err)
		}
		a.close(t)
		b.close(t)
	})
}

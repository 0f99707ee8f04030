package group

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

// rawMember drives the protocol by hand, as a Kafka client would.
type rawMember struct {
	t   *testing.T
	c   *Coordinator
	req JoinGroupRequest
	id  string
	gen int32
}

func (m *rawMember) heartbeat() error {
	return m.c.Heartbeat(context.Background(), &HeartbeatRequest{Group: m.req.Group, GenerationID: m.gen, MemberID: m.id, InstanceID: m.req.InstanceID})
}

func (m *rawMember) commit(off int64) error {
	resp, err := m.c.OffsetCommit(context.Background(), &OffsetCommitRequest{
		Group: m.req.Group, GenerationID: m.gen, MemberID: m.id, InstanceID: m.req.InstanceID,
		Topics: []OffsetCommitTopic{{Topic: "t", Partitions: []OffsetCommitPartition{{Partition: 0, Offset: off, LeaderEpoch: -1}}}},
	})
	if err != nil {
		return err
	}
	return resp.Err()
}

// join sends JoinGroup (with the member id it has) on a goroutine.
func (m *rawMember) join() <-chan joinOutcome {
	r := m.req
	r.MemberID = m.id
	return joinAsync(context.Background(), m.c, &r)
}

// joined records a join outcome.
func (m *rawMember) joined(o joinOutcome) *JoinGroupResponse {
	m.t.Helper()
	if o.err != nil {
		m.t.Fatalf("join of %s: %v", m.id, o.err)
	}
	m.id, m.gen = o.resp.MemberID, o.resp.GenerationID
	return o.resp
}

func (m *rawMember) sync(plan []SyncGroupAssignment) <-chan syncOutcome {
	return syncAsync(context.Background(), m.c, &SyncGroupRequest{
		Group: m.req.Group, GenerationID: m.gen, MemberID: m.id, InstanceID: m.req.InstanceID, Assignments: plan,
	})
}

// newRaw joins a new member (through MEMBER_ID_REQUIRED for a dynamic one)
// and returns it with its pending join.
func newRaw(t *testing.T, c *Coordinator, req *JoinGroupRequest) (*rawMember, <-chan joinOutcome) {
	t.Helper()
	m := &rawMember{t: t, c: c, req: *req, gen: -1}
	if req.InstanceID != "" {
		return m, m.join()
	}
	id, ch := newMemberT(t, context.Background(), c, req)
	m.id = id
	return m, ch
}

func wantErr(t *testing.T, what string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("%s: got %v, want %v", what, err, want)
	}
}

func TestJoinSyncHeartbeatOneMember(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newTestCoordinator(t, newMemStore(3), newMemTopics(), nil)
		defer c.Close()
		a, ch := newRaw(t, c, joinReq("g", ""))
		synctest.Wait()
		resp := a.joined(mustRecv(t, ch))
		if resp.GenerationID != 1 || resp.LeaderID != a.id || len(resp.Members) != 1 || resp.ProtocolName != "range" {
			t.Fatalf("join response %+v", resp)
		}
		if err := a.heartbeat(); err != nil {
			t.Fatalf("heartbeat between join and sync: %v", err)
		}
		wantErr(t, "commit between join and sync", a.commit(1), ErrRebalanceInProgress)
		s := a.sync([]SyncGroupAssignment{{MemberID: a.id, Assignment: []byte("mine")}})
		synctest.Wait()
		so := mustRecv(t, s)
		if so.err != nil || string(so.resp.Assignment) != "mine" || so.resp.ProtocolName != "range" {
			t.Fatalf("sync: %+v %v", so.resp, so.err)
		}
		if err := a.heartbeat(); err != nil {
			t.Fatalf("heartbeat: %v", err)
		}
		d, err := c.DescribeGroups(context.Background(), []string{"g", "none"})
		if err != nil || d[0].State != StateStable || len(d[0].Members) != 1 || string(d[0].Members[0].Assignment) != "mine" || d[1].State != StateDead {
			t.Fatalf("describe: %+v %v", d, err)
		}
		// A sync retried after its response was lost returns the same.
		so = mustRecvAfter(t, a.sync(nil))
		if so.err != nil || string(so.resp.Assignment) != "mine" {
			t.Fatalf("sync retry: %+v %v", so.resp, so.err)
		}
	})
}

func mustRecvAfter[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	synctest.Wait()
	return mustRecv(t, ch)
}

func TestRebalanceOnJoinAndLeave(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		topics := newMemTopics()
		topics.create("t", 1)
		c := newTestCoordinator(t, newMemStore(1), topics, nil)
		defer c.Close()
		a, ch := newRaw(t, c, joinReq("g", ""))
		a.joined(mustRecvAfter(t, ch))
		mustRecvAfter(t, a.sync([]SyncGroupAssignment{{a.id, []byte("a1")}}))

		b, bch := newRaw(t, c, joinReq("g", ""))
		synctest.Wait()
		select {
		case o := <-bch:
			t.Fatalf("b's join completed before a rejoined: %+v", o)
		default:
		}
		wantErr(t, "a's heartbeat", a.heartbeat(), ErrRebalanceInProgress)
		// a may still commit while the group prepares the rebalance.
		if err := a.commit(5); err != nil {
			t.Fatalf("commit during PreparingRebalance: %v", err)
		}
		ach := a.join()
		ra := a.joined(mustRecvAfter(t, ach))
		rb := b.joined(mustRecv(t, bch))
		if ra.GenerationID != 2 || rb.GenerationID != 2 || ra.LeaderID != a.id || rb.LeaderID != a.id {
			t.Fatalf("generation 2: %+v / %+v", ra, rb)
		}
		if len(ra.Members) != 2 || len(rb.Members) != 0 {
			t.Fatalf("the leader gets every member, followers none: %d, %d", len(ra.Members), len(rb.Members))
		}
		bs := b.sync(nil)
		synctest.Wait()
		select {
		case o := <-bs:
			t.Fatalf("follower's sync returned before the leader's: %+v", o)
		default:
		}
		as := a.sync([]SyncGroupAssignment{{a.id, []byte("a2")}, {b.id, []byte("b2")}})
		synctest.Wait()
		if o := mustRecv(t, as); string(o.resp.Assignment) != "a2" {
			t.Fatalf("a's assignment %q", o.resp.Assignment)
		}
		if o := mustRecv(t, bs); string(o.resp.Assignment) != "b2" {
			t.Fatalf("b's assignment %q", o.resp.Assignment)
		}
		// A commit of the old generation is refused: a zombie cannot
		// overwrite its successor.
		old := *a
		old.gen = 1
		wantErr(t, "commit of generation 1", old.commit(9), ErrIllegalGeneration)
		wantErr(t, "heartbeat of generation 1", old.heartbeat(), ErrIllegalGeneration)

		// b leaves: a rebalances alone.
		resp, err := c.LeaveGroup(context.Background(), &LeaveGroupRequest{Group: "g", Members: []LeaveGroupMember{{MemberID: b.id}}})
		if err != nil || resp.Members[0].Err != nil {
			t.Fatalf("leave: %+v %v", resp, err)
		}
		wantErr(t, "b's heartbeat after leaving", b.heartbeat(), ErrUnknownMemberID)
		wantErr(t, "b's commit after leaving", b.commit(7), ErrUnknownMemberID)
		wantErr(t, "a's heartbeat", a.heartbeat(), ErrRebalanceInProgress)
		ra = a.joined(mustRecvAfter(t, a.join()))
		if ra.GenerationID != 3 || len(ra.Members) != 1 {
			t.Fatalf("generation 3: %+v", ra)
		}
		mustRecvAfter(t, a.sync(nil))
		// The last member leaves: the group is Empty, at a new generation.
		if _, err := c.LeaveGroup(context.Background(), &LeaveGroupRequest{Group: "g", Members: []LeaveGroupMember{{MemberID: a.id}}}); err != nil {
			t.Fatal(err)
		}
		d, _ := c.DescribeGroups(context.Background(), []string{"g"})
		if d[0].State != StateEmpty || d[0].GenerationID != 4 || len(d[0].Members) != 0 {
			t.Fatalf("after the last leave: %+v", d[0])
		}
		off := fetchOffset(t, c, "g", TopicPartition{"t", 0})
		if off != 5 {
			t.Fatalf("committed offset %d, want 5 (the zombie and left members' commits refused)", off)
		}
	})
}

func fetchOffset(t *testing.T, c *Coordinator, group string, tp TopicPartition) int64 {
	t.Helper()
	resp, err := c.OffsetFetch(context.Background(), &OffsetFetchRequest{Group: group, Topics: []OffsetFetchTopic{{tp.Topic, []int32{tp.Partition}}}})
	if err != nil {
		t.Fatal(err)
	}
	return resp.Topics[0].Partitions[0].Offset
}

func TestSessionTimeoutExpelsSilentMember(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newTestCoordinator(t, newMemStore(1), newMemTopics(), nil)
		defer c.Close()
		a, ach := newRaw(t, c, joinReq("g", ""))
		a.joined(mustRecvAfter(t, ach))
		mustRecvAfter(t, a.sync(nil))
		b, bch := newRaw(t, c, joinReq("g", ""))
		synctest.Wait()
		a.joined(mustRecvAfter(t, a.join()))
		b.joined(mustRecv(t, bch))
		as, bs := a.sync(nil), b.sync(nil)
		synctest.Wait()
		mustRecv(t, as)
		mustRecv(t, bs)
		// a heartbeats, b does not.
		for range 12 {
			time.Sleep(time.Second)
			if err := a.heartbeat(); err != nil {
				if errors.Is(err, ErrRebalanceInProgress) {
					break
				}
				t.Fatal(err)
			}
		}
		synctest.Wait()
		wantErr(t, "b's heartbeat after its session", b.heartbeat(), ErrUnknownMemberID)
		ra := a.joined(mustRecvAfter(t, a.join()))
		if len(ra.Members) != 1 || ra.Members[0].MemberID != a.id {
			t.Fatalf("after b expired: %+v", ra)
		}
		if st := c.Stats(); st.Expired != 1 || st.Members != 1 {
			t.Fatalf("stats %+v", st)
		}
	})
}

func TestRebalanceTimeoutRemovesMembersThatDoNotRejoin(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newTestCoordinator(t, newMemStore(1), newMemTopics(), nil)
		defer c.Close()
		a, ach := newRaw(t, c, joinReq("g", ""))
		a.joined(mustRecvAfter(t, ach))
		mustRecvAfter(t, a.sync(nil))
		start := time.Now()
		b, bch := newRaw(t, c, joinReq("g", ""))
		// a keeps heartbeating but never rejoins.
		done := make(chan struct{})
		go func() {
			for {
				select {
				case <-done:
					return
				case <-time.After(time.Second):
					_ = a.heartbeat()
				}
			}
		}()
		rb := b.joined(<-bch)
		close(done)
		if waited := time.Since(start); waited < 20*time.Second {
			t.Fatalf("the join completed after %v, before the rebalance timeout", waited)
		}
		if rb.LeaderID != b.id || len(rb.Members) != 1 || rb.GenerationID != 2 {
			t.Fatalf("b's join: %+v", rb)
		}
		wantErr(t, "a's heartbeat", a.heartbeat(), ErrUnknownMemberID)
	})
}

func TestSyncTimeoutRemovesMembersThatDoNotSync(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newTestCoordinator(t, newMemStore(1), newMemTopics(), nil)
		defer c.Close()
		a, ach := newRaw(t, c, joinReq("g", ""))
		a.joined(mustRecvAfter(t, ach))
		mustRecvAfter(t, a.sync(nil))
		b, bch := newRaw(t, c, joinReq("g", ""))
		synctest.Wait()
		ach = a.join()
		a.joined(mustRecvAfter(t, ach))
		b.joined(mustRecv(t, bch))
		// The leader syncs, b never does; both heartbeat.
		mustRecvAfter(t, a.sync(nil))
		for range 25 {
			time.Sleep(time.Second)
			_ = b.heartbeat()
			if err := a.heartbeat(); errors.Is(err, ErrRebalanceInProgress) {
				break
			}
		}
		wantErr(t, "b's heartbeat", b.heartbeat(), ErrUnknownMemberID)
		ra := a.joined(mustRecvAfter(t, a.join()))
		if len(ra.Members) != 1 {
			t.Fatalf("after the sync timeout: %+v", ra)
		}
	})
}

func TestPendingMemberIDExpires(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newTestCoordinator(t, newMemStore(1), newMemTopics(), nil)
		defer c.Close()
		a, ach := newRaw(t, c, joinReq("g", ""))
		a.joined(mustRecvAfter(t, ach))
		mustRecvAfter(t, a.sync(nil))
		// A new member gets its id and never comes back.
		resp, err := c.JoinGroup(context.Background(), joinReq("g", ""))
		wantErr(t, "first join", err, ErrMemberIDRequired)
		ghost := resp.MemberID
		// a's leader rejoin starts a rebalance that waits for the ghost.
		start := time.Now()
		ra := a.joined(<-a.join())
		if waited := time.Since(start); waited < 10*time.Second || len(ra.Members) != 1 {
			t.Fatalf("join completed after %v with %d members", waited, len(ra.Members))
		}
		// The ghost's id is forgotten.
		_, err = c.JoinGroup(context.Background(), joinReq("g", ghost))
		wantErr(t, "join with the expired id", err, ErrUnknownMemberID)
	})
}

func TestJoinErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newTestCoordinator(t, newMemStore(1), newMemTopics(), func(o *Options) {
			o.MinSessionTimeout, o.MaxSessionTimeout, o.MaxGroupSize = time.Second, time.Minute, 2
		})
		defer c.Close()
		ctx := context.Background()
		r := joinReq("", "")
		_, err := c.JoinGroup(ctx, r)
		wantErr(t, "empty group id", err, ErrInvalidGroupID)
		r = joinReq("g", "")
		r.SessionTimeout = time.Hour
		_, err = c.JoinGroup(ctx, r)
		wantErr(t, "session timeout above the max", err, ErrInvalidSessionTimeout)
		r.SessionTimeout = time.Millisecond
		_, err = c.JoinGroup(ctx, r)
		wantErr(t, "session timeout below the min", err, ErrInvalidSessionTimeout)
		_, err = c.JoinGroup(ctx, joinReq("g", "nobody"))
		wantErr(t, "unknown member id", err, ErrUnknownMemberID)
		r = joinReq("g", "")
		r.ProtocolType = ""
		_, err = c.JoinGroup(ctx, r)
		wantErr(t, "empty protocol type", err, ErrInconsistentGroupProtocol)

		a, ach := newRaw(t, c, joinReq("g", "", "range", "roundrobin"))
		a.joined(mustRecvAfter(t, ach))
		mustRecvAfter(t, a.sync(nil))
		r = joinReq("g", "", "cooperative-sticky")
		_, err = c.JoinGroup(ctx, r)
		wantErr(t, "no common protocol", err, ErrInconsistentGroupProtocol)
		r = joinReq("g", "", "roundrobin")
		r.ProtocolType = "connect"
		_, err = c.JoinGroup(ctx, r)
		wantErr(t, "another protocol type", err, ErrInconsistentGroupProtocol)

		b, bch := newRaw(t, c, joinReq("g", "", "roundrobin"))
		synctest.Wait()
		_, err = c.JoinGroup(ctx, joinReq("g", ""))
		wantErr(t, "a third member", err, ErrGroupMaxSizeReached)
		ra := a.joined(<-a.join())
		b.joined(mustRecvAfter(t, bch))
		// roundrobin is the only protocol both support.
		if ra.ProtocolName != "roundrobin" {
			t.Fatalf("protocol %q, want roundrobin", ra.ProtocolName)
		}
		_, err = c.SyncGroup(ctx, &SyncGroupRequest{Group: "g", GenerationID: ra.GenerationID, MemberID: a.id, ProtocolName: "range"})
		wantErr(t, "sync with another protocol", err, ErrInconsistentGroupProtocol)
		_, err = c.SyncGroup(ctx, &SyncGroupRequest{Group: "g", GenerationID: 1, MemberID: a.id})
		wantErr(t, "sync of an old generation", err, ErrIllegalGeneration)
		_, err = c.SyncGroup(ctx, &SyncGroupRequest{Group: "nope", GenerationID: 1, MemberID: a.id})
		wantErr(t, "sync in an unknown group", err, ErrUnknownMemberID)
		wantErr(t, "heartbeat in an unknown group", c.Heartbeat(ctx, &HeartbeatRequest{Group: "nope", MemberID: "x"}), ErrUnknownMemberID)
		lr, err := c.LeaveGroup(ctx, &LeaveGroupRequest{Group: "g", Members: []LeaveGroupMember{{MemberID: "x"}}})
		if err != nil || !errors.Is(lr.Members[0].Err, ErrUnknownMemberID) {
			t.Fatalf("leave of an unknown member: %+v %v", lr, err)
		}
	})
}

func TestStaticMemberRestartsWithoutRebalance(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newTestCoordinator(t, newMemStore(1), newMemTopics(), nil)
		defer c.Close()
		ra := joinReq("g", "")
		ra.InstanceID = "a"
		a, ach := newRaw(t, c, ra)
		a.joined(mustRecvAfter(t, ach))
		rb := joinReq("g", "")
		rb.InstanceID = "b"
		b, bch := newRaw(t, c, rb)
		synctest.Wait()
		a.joined(mustRecvAfter(t, a.join()))
		b.joined(mustRecv(t, bch))
		as, bs := a.sync([]SyncGroupAssignment{{a.id, []byte("A")}, {b.id, []byte("B")}}), b.sync(nil)
		synctest.Wait()
		mustRecv(t, as)
		mustRecv(t, bs)
		gen := b.gen

		// b's process restarts: it joins with its instance id and no
		// member id, and gets its partitions back in the same generation.
		b2 := &rawMember{t: t, c: c, req: *rb, gen: -1}
		r2 := b2.joined(mustRecvAfter(t, b2.join()))
		if r2.GenerationID != gen || r2.MemberID == b.id || r2.LeaderID != a.id {
			t.Fatalf("static rejoin: %+v (old member %s, generation %d)", r2, b.id, gen)
		}
		so := mustRecvAfter(t, b2.sync(nil))
		if so.err != nil || string(so.resp.Assignment) != "B" {
			t.Fatalf("static member's sync: %+v %v", so.resp, so.err)
		}
		if err := a.heartbeat(); err != nil {
			t.Fatalf("the other member saw a rebalance: %v", err)
		}
		// The old process is fenced everywhere.
		wantErr(t, "old heartbeat", b.heartbeat(), ErrFencedInstanceID)
		wantErr(t, "old commit", b.commit(3), ErrFencedInstanceID)
		_, err := c.JoinGroup(context.Background(), &JoinGroupRequest{Group: "g", MemberID: b.id, InstanceID: "b",
			SessionTimeout: 10 * time.Second, ProtocolType: ProtocolTypeConsumer, Protocols: rb.Protocols})
		wantErr(t, "old join", err, ErrFencedInstanceID)
		wantErr(t, "old fetch", c.ValidateGeneration("g", b.id, "b", gen), ErrFencedInstanceID)
		lr, _ := c.LeaveGroup(context.Background(), &LeaveGroupRequest{Group: "g", Members: []LeaveGroupMember{{MemberID: b.id, InstanceID: "b"}}})
		wantErr(t, "old leave", lr.Members[0].Err, ErrFencedInstanceID)
		if err := b2.heartbeat(); err != nil {
			t.Fatalf("new incarnation's heartbeat: %v", err)
		}

		// The static leader restarts: it learns the members but must not
		// assign (KIP-814).
		a2 := &rawMember{t: t, c: c, req: *ra, gen: -1}
		r3 := a2.joined(mustRecvAfter(t, a2.join()))
		if !r3.SkipAssignment || r3.LeaderID != a2.id || len(r3.Members) != 2 || r3.GenerationID != gen {
			t.Fatalf("static leader rejoin: %+v", r3)
		}
	})
}

func TestInitialRebalanceDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newTestCoordinator(t, newMemStore(1), newMemTopics(), func(o *Options) { o.InitialRebalanceDelay = 3 * time.Second })
		defer c.Close()
		start := time.Now()
		a, ach := newRaw(t, c, joinReq("g", ""))
		time.Sleep(2 * time.Second)
		b, bch := newRaw(t, c, joinReq("g", ""))
		ra := a.joined(<-ach)
		rb := b.joined(<-bch)
		// The delay ran out at 3 s, but b joined during it: one more.
		if d := time.Since(start); d != 6*time.Second {
			t.Fatalf("the first generation completed after %v, want 6s", d)
		}
		if ra.GenerationID != 1 || rb.GenerationID != 1 || len(ra.Members)+len(rb.Members) != 2 {
			t.Fatalf("one generation with both: %+v %+v", ra, rb)
		}
	})
}

func TestJoinContextEndsLeavesMemberInJoin(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newTestCoordinator(t, newMemStore(1), newMemTopics(), nil)
		defer c.Close()
		a, ach := newRaw(t, c, joinReq("g", ""))
		a.joined(mustRecvAfter(t, ach))
		mustRecvAfter(t, a.sync(nil))
		m, mch := newRaw(t, c, joinReq("g", ""))
		synctest.Wait()
		a.joined(mustRecvAfter(t, a.join()))
		m.joined(mustRecv(t, mch))
		as, ms := a.sync(nil), m.sync(nil)
		synctest.Wait()
		mustRecv(t, as)
		mustRecv(t, ms)

		// b joins; a rejoins under a ctx that ends while m is awaited.
		b, bch := newRaw(t, c, joinReq("g", ""))
		ctx, cancel := context.WithCancel(context.Background())
		r := a.req
		r.MemberID = a.id
		lost := joinAsync(ctx, c, &r)
		synctest.Wait()
		cancel()
		if o := <-lost; !errors.Is(o.err, context.Canceled) {
			t.Fatalf("join with an ended ctx: %+v %v", o.resp, o.err)
		}
		// a still counts as joined: m's rejoin completes the generation.
		rm := m.joined(mustRecvAfter(t, m.join()))
		rb := b.joined(mustRecv(t, bch))
		if rm.GenerationID != 3 || rb.GenerationID != 3 {
			t.Fatalf("generations %d %d", rm.GenerationID, rb.GenerationID)
		}
		// a's retry gets the current generation, with the members.
		ra := a.joined(mustRecvAfter(t, a.join()))
		if ra.GenerationID != 3 || ra.LeaderID != a.id || len(ra.Members) != 3 {
			t.Fatalf("retried join: %+v", ra)
		}
	})
}

func TestOffsetCommitRules(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		topics := newMemTopics()
		topics.create("t", 2)
		c := newTestCoordinator(t, newMemStore(2), topics, func(o *Options) { o.MaxMetadataBytes = 4 })
		defer c.Close()
		ctx := context.Background()
		commit := func(group string, gen int32, member string, parts ...OffsetCommitPartition) (*OffsetCommitResponse, error) {
			return c.OffsetCommit(ctx, &OffsetCommitRequest{Group: group, GenerationID: gen, MemberID: member,
				Topics: []OffsetCommitTopic{{Topic: "t", Partitions: parts}}})
		}
		// No group, generation >= 0: refused; -1: a simple commit.
		_, err := commit("simple", 3, "m", OffsetCommitPartition{Partition: 0, Offset: 1})
		wantErr(t, "commit to an unknown group at a generation", err, ErrIllegalGeneration)
		resp, err := commit("simple", -1, "", OffsetCommitPartition{Partition: 0, Offset: 7, Metadata: "ok"},
			OffsetCommitPartition{Partition: 5, Offset: 1}, OffsetCommitPartition{Partition: 1, Offset: 1, Metadata: "toolong"},
			OffsetCommitPartition{Partition: 1, Offset: -4})
		if err != nil {
			t.Fatal(err)
		}
		ps := resp.Topics[0].Partitions
		if ps[0].Err != nil || !errors.Is(ps[1].Err, ErrUnknownTopicOrPartition) || !errors.Is(ps[2].Err, ErrOffsetMetadataTooLarge) || !errors.Is(ps[3].Err, ErrInvalidRequest) {
			t.Fatalf("per-partition results %+v", ps)
		}
		resp, err = c.OffsetCommit(ctx, &OffsetCommitRequest{Group: "simple", GenerationID: -1,
			Topics: []OffsetCommitTopic{{Topic: "nope", Partitions: []OffsetCommitPartition{{Partition: 0, Offset: 1}}}}})
		if err != nil || !errors.Is(resp.Err(), ErrUnknownTopicOrPartition) {
			t.Fatalf("commit to an unknown topic: %v %v", resp, err)
		}
		f, err := c.OffsetFetch(ctx, &OffsetFetchRequest{Group: "simple"})
		if err != nil || len(f.Topics) != 1 || len(f.Topics[0].Partitions) != 1 || f.Topics[0].Partitions[0].Offset != 7 || f.Topics[0].Partitions[0].Metadata != "ok" {
			t.Fatalf("fetch all: %+v %v", f, err)
		}
		if off := fetchOffset(t, c, "none", TopicPartition{"t", 0}); off != -1 {
			t.Fatalf("unknown group's offset %d", off)
		}
		// A group with members refuses commits without a member.
		a, ach := newRaw(t, c, joinReq("g", ""))
		a.joined(mustRecvAfter(t, ach))
		mustRecvAfter(t, a.sync(nil))
		_, err = commit("g", -1, "", OffsetCommitPartition{Partition: 0, Offset: 1})
		wantErr(t, "simple commit to a group with members", err, ErrUnknownMemberID)
		_, err = commit("g", a.gen, "other", OffsetCommitPartition{Partition: 0, Offset: 1})
		wantErr(t, "commit of an unknown member", err, ErrUnknownMemberID)
		if err := a.commit(3); err != nil {
			t.Fatal(err)
		}
		// A failing store leaves the offset unknown, never half-applied.
		c.store.(*memStore).fail = errors.New("disk on fire")
		err = a.commit(4)
		wantErr(t, "commit with a failing store", err, ErrUnknownServerError)
		c.store.(*memStore).fail = nil
		if off := fetchOffset(t, c, "g", TopicPartition{"t", 0}); off != 3 {
			t.Fatalf("offset after the failed commit %d, want 3", off)
		}
		if st := c.Stats(); st.Commits != 2 || st.CommitErrors != 1 {
			t.Fatalf("stats %+v", st)
		}
	})
}

func TestDeleteGroupsAndOffsetDelete(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		topics := newMemTopics()
		topics.create("t", 2)
		topics.create("u", 1)
		for i := range 20 {
			topics.produce("t", 0, "x")
			topics.produce("t", 1, "x")
			topics.produce("u", 0, string(rune('a'+i)))
		}
		store := newMemStore(4)
		c := newTestCoordinator(t, store, topics, nil)
		defer c.Close()
		ctx := context.Background()
		for _, g := range []string{"a", "b"} {
			_, err := c.OffsetCommit(ctx, &OffsetCommitRequest{Group: g, GenerationID: -1, Topics: []OffsetCommitTopic{
				{Topic: "t", Partitions: []OffsetCommitPartition{{Partition: 0, Offset: 10}, {Partition: 1, Offset: 11}}},
				{Topic: "u", Partitions: []OffsetCommitPartition{{Partition: 0, Offset: 12}}}}})
			if err != nil {
				t.Fatal(err)
			}
		}
		m, mch := newRaw(t, c, &JoinGroupRequest{Group: "b", SessionTimeout: 10 * time.Second, ProtocolType: ProtocolTypeConsumer,
			Protocols: consumerProtocols([]string{"t"}, nil, -1, "range"), RequireKnownMemberID: true})
		m.joined(mustRecvAfter(t, mch))
		mustRecvAfter(t, m.sync(nil))
		res, err := c.DeleteGroups(ctx, []string{"a", "b", "c"})
		if err != nil || res[0].Err != nil || !errors.Is(res[1].Err, ErrNonEmptyGroup) || !errors.Is(res[2].Err, ErrGroupIDNotFound) {
			t.Fatalf("delete: %+v %v", res, err)
		}
		if off := fetchOffset(t, c, "a", TopicPartition{"t", 0}); off != -1 {
			t.Fatalf("a deleted group's offset %d", off)
		}
		// b is subscribed to t, not to u.
		dr, err := c.OffsetDelete(ctx, &OffsetDeleteRequest{Group: "b", Topics: []OffsetFetchTopic{{"t", []int32{0}}, {"u", []int32{0}}}})
		if err != nil || !errors.Is(dr.Topics[0].Partitions[0].Err, ErrGroupSubscribedToTopic) || dr.Topics[1].Partitions[0].Err != nil {
			t.Fatalf("offset delete: %+v %v", dr, err)
		}
		if off := fetchOffset(t, c, "b", TopicPartition{"u", 0}); off != -1 {
			t.Fatalf("deleted offset still %d", off)
		}
		_, err = c.OffsetDelete(ctx, &OffsetDeleteRequest{Group: "zz"})
		wantErr(t, "offset delete of an unknown group", err, ErrGroupIDNotFound)
		l, err := c.ListGroups(ctx)
		if err != nil || len(l) != 1 || l[0].Group != "b" || l[0].State != StateStable {
			t.Fatalf("list: %+v %v", l, err)
		}
		// The tombstones are durable: a coordinator loading the store
		// sees the same.
		c2 := newTestCoordinator(t, store, topics, nil)
		defer c2.Close()
		if off := fetchOffset(t, c2, "a", TopicPartition{"t", 1}); off != -1 {
			t.Fatalf("deleted group's offset after reload %d", off)
		}
		if off := fetchOffset(t, c2, "b", TopicPartition{"u", 0}); off != -1 {
			t.Fatalf("deleted offset after reload %d", off)
		}
		if off := fetchOffset(t, c2, "b", TopicPartition{"t", 1}); off != 11 {
			t.Fatalf("kept offset after reload %d", off)
		}
	})
}

func TestCloseFailsWaitingRequests(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newTestCoordinator(t, newMemStore(1), newMemTopics(), nil)
		a, ach := newRaw(t, c, joinReq("g", ""))
		a.joined(mustRecvAfter(t, ach))
		mustRecvAfter(t, a.sync(nil))
		_, bch := newRaw(t, c, joinReq("g", ""))
		synctest.Wait()
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		o := <-bch
		if !errors.Is(o.err, ErrClosed) || !errors.Is(o.err, ErrCoordinatorNotAvailable) {
			t.Fatalf("waiting join after Close: %v", o.err)
		}
		wantErr(t, "heartbeat after Close", a.heartbeat(), ErrClosed)
		wantErr(t, "second Close", c.Close(), ErrClosed)
		_, err := c.ListGroups(context.Background())
		wantErr(t, "list after Close", err, ErrClosed)
	})
}

func TestProtocolVote(t *testing.T) {
	g := newGroup(&Coordinator{store: newMemStore(1)}, "g")
	add := func(id string, names ...string) {
		m := &member{id: id}
		for _, n := range names {
			m.protocols = append(m.protocols, JoinGroupProtocol{Name: n})
		}
		g.members[id] = m
	}
	add("a", "cooperative-sticky", "range")
	add("b", "range", "cooperative-sticky")
	add("c", "cooperative-sticky", "range", "roundrobin")
	if p := g.selectProtocolLocked(); p != "cooperative-sticky" {
		t.Fatalf("vote: %q", p)
	}
	add("d", "range")
	if p := g.selectProtocolLocked(); p != "range" {
		t.Fatalf("vote with a range-only member: %q", p)
	}
}

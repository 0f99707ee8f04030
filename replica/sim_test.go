package replica

import (
	"container/heap"
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

var (
	flagSeed  = flag.Uint64("seed", 0, "replay this one simulator seed, with its trace")
	flagSeeds = flag.Int("seeds", 500, "how many simulator seeds TestSimulator runs (-short: at most 50)")
)

// TestSimulator runs the deterministic simulator over -seeds seeds (or the
// one -seed), each a few virtual seconds of three replicas under
// produces, lost, delayed and duplicated messages, isolated replicas, cut
// links and crashes, checking the invariants after every event. A failing
// seed prints itself; -seed=N replays it exactly and prints its trace.
func TestSimulator(t *testing.T) {
	if *flagSeed != 0 {
		s := newSim(*flagSeed, true)
		if err := s.run(3 * time.Second); err != nil {
			t.Fatalf("seed %d: %v\ntrace:\n%s", *flagSeed, err, strings.Join(s.trace, "\n"))
		}
		t.Logf("seed %d: %s", *flagSeed, s.summary())
		return
	}
	n := *flagSeeds
	if testing.Short() {
		n = min(n, 50)
	}
	var acked, events int
	for seed := uint64(1); seed <= uint64(n); seed++ {
		s := newSim(seed, false)
		if err := s.run(3 * time.Second); err != nil {
			t.Fatalf("seed %d: %v (replay: go test -run 'TestSimulator$' ./replica -seed=%d)", seed, err, seed)
		}
		acked += len(s.acked)
		events += s.events
	}
	if acked == 0 {
		t.Fatal("no seed acknowledged a record: the simulator tests nothing")
	}
	t.Logf("%d seeds, %d events, %d acks=all records acknowledged", n, events, acked)
}

// TestSimulatorFindsLastReplicaStanding: with lossy crashes unbounded
// (a replica crashes while another is down or out of the ISR, losing its
// unflushed tail), an acks=all record can be lost: KIP-966's last replica
// standing. The simulator must find it within a few seeds, or it is not
// looking.
func TestSimulatorFindsLastReplicaStanding(t *testing.T) {
	for seed := uint64(1); seed <= 400; seed++ {
		s := newSim(seed, false)
		if !s.lossy {
			continue
		}
		s.unsafeCrashes = true
		if err := s.run(3 * time.Second); err != nil {
			// Committed records lost: an acknowledged one missing, or a
			// replica told to cut below its high watermark by a leader
			// that lost them.
			if msg := err.Error(); !strings.Contains(msg, "acknowledged record") && !strings.Contains(msg, "below the local high watermark") {
				t.Fatalf("seed %d: %v, want committed records lost", seed, err)
			}
			t.Logf("seed %d: %v", seed, err)
			return
		}
	}
	t.Fatal("no seed lost a committed record to unbounded lossy crashes")
}

// TestSimulatorReplays: a seed run twice gives the same history.
func TestSimulatorReplays(t *testing.T) {
	a, b := newSim(7, true), newSim(7, true)
	if err := a.run(time.Second); err != nil {
		t.Fatal(err)
	}
	if err := b.run(time.Second); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(a.trace, b.trace) || len(a.trace) == 0 {
		t.Fatalf("seed 7 replayed differently: %d and %d events", len(a.trace), len(b.trace))
	}
}

// simulator settings, on the virtual clock.
const (
	simReplicas       = 3
	simMinISR         = 2
	simLag            = 200 * time.Millisecond
	simSession        = 150 * time.Millisecond
	simRequestTimeout = 100 * time.Millisecond
	simAckTimeout     = 500 * time.Millisecond
)

type event struct {
	at   time.Duration
	seq  int64
	what string
	fn   func()
}

type events []*event

func (q events) Len() int { return len(q) }
func (q events) Less(i, j int) bool {
	if q[i].at != q[j].at {
		return q[i].at < q[j].at
	}
	return q[i].seq < q[j].seq
}
func (q events) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *events) Push(x any)   { *q = append(*q, x.(*event)) }
func (q *events) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}

// node is one replica of the simulated partition.
type node struct {
	id         int32
	inc        int64 // incarnation: rises at every restart
	up         bool
	isolated   bool // cut off from everyone: replicas, controller, clients
	isolatedAt time.Duration
	downAt     time.Duration
	log        simLog
	leader     *Leader // while it acts as leader
	// What it knows of the partition: the epoch and its leader.
	epoch      int32
	leaderID   int32
	reconciled bool  // its log is in the leader's lineage for epoch
	inflight   bool  // a request to the leader is on its way
	req        int64 // the id of the last request, to ignore stale answers
}

type ackedRec struct {
	offset int64
	value  uint64
}

type pendingAck struct {
	ld       *Leader
	offset   int64
	value    uint64
	deadline time.Duration
}

type sim struct {
	seed  uint64
	rng   *rand.Rand
	now   time.Duration
	end   time.Duration // the run's length
	base  time.Time
	q     events
	seq   int64
	meta  *Mem
	nodes []*node
	cut   map[[2]int32]bool // links cut both ways
	lossy bool              // appends are durable only at the periodic flush
	// unsafeCrashes lifts the bound on lossy crashes (one at a time, with
	// the ISR full), to show the simulator finds what that bound avoids.
	unsafeCrashes bool
	drop          float64
	dup           float64
	maxWait       time.Duration

	// sessions makes the Mem the controller: replicas heartbeat and
	// Mem.ExpireSessions elects (sim_session_test.go).
	sessions bool

	events     int
	err        error
	record     bool
	trace      []string
	nextValue  uint64
	acked      []ackedRec
	pending    []pendingAck
	leaders    map[int32]int32 // epoch -> its one leader
	metaEpoch  int32
	observedHW int64
	crashes    int
}

func newSim(seed uint64, record bool) *sim {
	s, err := newSimOn(seed, record, func(int32, bool, func() time.Time) (simLog, error) { return nil, nil })
	if err != nil {
		panic(err) // memLog opens no files
	}
	return s
}

// newSimOn is newSim with each replica's log made by mk (sync: every
// append durable at once), or a memLog where mk returns nil.
func newSimOn(seed uint64, record bool, mk func(id int32, sync bool, now func() time.Time) (simLog, error)) (*sim, error) {
	s := &sim{seed: seed, rng: rand.New(rand.NewPCG(seed, 0x5eed)), base: time.Unix(1_700_000_000, 0),
		meta: NewMem(), cut: map[[2]int32]bool{}, leaders: map[int32]int32{}, record: record}
	s.lossy = s.rng.IntN(2) == 0
	s.drop = []float64{0, 0.01, 0.05, 0.2}[s.rng.IntN(4)]
	s.dup = []float64{0, 0.02, 0.1}[s.rng.IntN(3)]
	s.maxWait = time.Duration(1+s.rng.IntN(20)) * time.Millisecond
	ids := make([]int32, simReplicas)
	for i := range ids {
		ids[i] = int32(i + 1)
		s.meta.Register(ids[i], 1)
		l, err := mk(ids[i], !s.lossy, s.clock)
		if err != nil {
			return nil, err
		}
		if l == nil {
			l = &memLog{sync: !s.lossy}
		}
		s.nodes = append(s.nodes, &node{id: ids[i], inc: 1, up: true, log: l, epoch: -1, leaderID: -1})
	}
	if _, err := s.meta.Create(tp0, ids...); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *sim) summary() string {
	return fmt.Sprintf("lossy %v drop %.2f dup %.2f delay<=%v: %d events, %d acked, %d crashes, epoch %d, hw %d",
		s.lossy, s.drop, s.dup, s.maxWait, s.events, len(s.acked), s.crashes, s.metaEpoch, s.observedHW)
}

func (s *sim) clock() time.Time { return s.base.Add(s.now) }

func (s *sim) at(d time.Duration, what string, fn func()) {
	s.seq++
	heap.Push(&s.q, &event{at: s.now + d, seq: s.seq, what: what, fn: fn})
}

// every schedules fn every period (jittered by the seed) until the end.
func (s *sim) every(period time.Duration, what string, fn func()) {
	var tick func()
	tick = func() {
		fn()
		s.at(period/2+time.Duration(s.rng.Int64N(int64(period))), what, tick)
	}
	s.at(time.Duration(s.rng.Int64N(int64(period))), what, tick)
}

func (s *sim) node(id int32) *node { return s.nodes[id-1] }

func (s *sim) run(d time.Duration) error {
	s.every(20*time.Millisecond, "controller", s.controller)
	for _, n := range s.nodes {
		s.every(10*time.Millisecond, fmt.Sprintf("refresh %d", n.id), func() { s.refresh(n) })
		s.every(5*time.Millisecond, fmt.Sprintf("fetch %d", n.id), func() { s.fetch(n) })
		s.every(20*time.Millisecond, fmt.Sprintf("tick %d", n.id), func() {
			if n.up && n.leader != nil {
				_ = n.leader.Tick(context.Background())
			}
		})
		flush := 50 * time.Millisecond
		if s.unsafeCrashes {
			flush = time.Second // long unflushed tails, to lose
		}
		s.every(flush, fmt.Sprintf("flush %d", n.id), func() {
			if n.up {
				if err := n.log.flush(); err != nil {
					s.fail("replica %d flushing: %v", n.id, err)
				}
			}
		})
	}
	s.every(8*time.Millisecond, "produce", s.produce)
	faultsEnd := d * 8 / 10
	s.every(150*time.Millisecond, "fault", func() {
		if s.now < faultsEnd {
			s.fault()
		}
	})
	s.end = d
	s.runUntil(d)
	return s.err
}

// runUntil runs the events due by t, in order, checking the invariants
// after each.
func (s *sim) runUntil(t time.Duration) {
	for s.q.Len() > 0 && s.err == nil && s.q[0].at <= t {
		e := heap.Pop(&s.q).(*event)
		s.now = e.at
		s.events++
		e.fn()
		s.settle()
		if s.record {
			s.trace = append(s.trace, fmt.Sprintf("%v %s | epoch %d leader %d isr %v hw %d ends %v",
				s.now, e.what, s.metaEpoch, s.currentLeader(), s.isr(), s.observedHW, s.ends()))
		}
		if s.err == nil {
			s.err = s.check()
		}
	}
	s.now = max(s.now, t)
}

// simMeta is the metadata as leaders reach it: an ISR change takes a
// while to commit (a Raft round), and the world goes on meanwhile: the
// events due before it commits run first, so the leader's maximal-ISR
// window and changes that race the controller happen.
type simMeta struct {
	*Mem
	s *sim
}

func (m simMeta) AlterISR(ctx context.Context, tp TopicPartition, ch ISRChange) (State, error) {
	s := m.s
	s.runUntil(min(s.end, s.now+time.Duration(s.rng.Int64N(int64(30*time.Millisecond)))))
	return m.Mem.AlterISR(ctx, tp, ch)
}

func (s *sim) currentLeader() int32 {
	st, _ := s.meta.Partition(context.Background(), tp0)
	return st.Leader
}

func (s *sim) isr() []int32 {
	st, _ := s.meta.Partition(context.Background(), tp0)
	var ids []int32
	for _, m := range st.ISR {
		ids = append(ids, m.ID)
	}
	return ids
}

func (s *sim) ends() []int64 {
	var e []int64
	for _, n := range s.nodes {
		e = append(e, n.log.LogEndOffset())
	}
	return e
}

// reachable says whether a message from a to b gets through now.
func (s *sim) reachable(a, b int32) bool {
	na, nb := s.node(a), s.node(b)
	return na.up && nb.up && !na.isolated && !nb.isolated && !s.cut[[2]int32{min(a, b), max(a, b)}]
}

// send delivers fn at b after a delay, unless the link drops it; it may
// arrive twice. A message to an incarnation that has since restarted is
// lost, as its connection was.
func (s *sim) send(a, b int32, what string, fn func()) {
	if !s.reachable(a, b) || s.rng.Float64() < s.drop {
		return
	}
	inc := s.node(b).inc
	deliver := func() {
		if s.reachable(a, b) && s.node(b).inc == inc {
			fn()
		}
	}
	s.at(time.Duration(1+s.rng.Int64N(int64(s.maxWait))), what, deliver)
	if s.rng.Float64() < s.dup {
		s.at(time.Duration(1+s.rng.Int64N(int64(2*s.maxWait))), what+" (dup)", deliver)
	}
}

// controller fences replicas whose session ended (down or isolated past
// the session timeout) and elects a leader, cleanly, when there is none.
func (s *sim) controller() {
	if s.sessions {
		s.sessionController()
		return
	}
	ctx := context.Background()
	st, _ := s.meta.Partition(ctx, tp0)
	for _, n := range s.nodes {
		gone := (!n.up && s.now-n.downAt >= simSession) || (n.isolated && s.now-n.isolatedAt >= simSession)
		if gone && (st.InISR(n.id) && len(st.ISR) > 1 || st.Leader == n.id) {
			st, _ = s.meta.Fence(tp0, n.id)
		}
	}
	if st.Leader >= 0 {
		return
	}
	for _, r := range st.Replicas {
		if n := s.node(r); n.up && !n.isolated && st.InISR(r) {
			if _, _, err := s.meta.Elect(tp0, r); err != nil {
				s.fail("clean election of %d: %v", r, err)
			}
			return
		}
	}
}

// refresh brings n's view of the partition up to the metadata, turning
// it into the leader or a follower of the new epoch.
func (s *sim) refresh(n *node) {
	if !n.up || n.isolated {
		return
	}
	ctx := context.Background()
	if n.leader != nil {
		_ = n.leader.Refresh(ctx)
	}
	st, _ := s.meta.Partition(ctx, tp0)
	if st.LeaderEpoch <= n.epoch && (n.leader == nil || !n.leader.Fenced()) {
		return
	}
	n.leader = nil
	n.epoch, n.leaderID = st.LeaderEpoch, st.Leader
	n.reconciled, n.inflight = false, false
	n.req++
	if st.Leader == n.id {
		ld, err := NewLeader(ctx, simMeta{s.meta, s}, tp0, n.id, n.log, &LeaderOptions{MinInsyncReplicas: simMinISR, LagTime: simLag, Now: s.clock})
		if err != nil {
			s.fail("replica %d leading epoch %d: %v", n.id, st.LeaderEpoch, err)
			return
		}
		n.leader = ld
	}
}

// fetch sends n's next request to its leader: OffsetForLeaderEpoch until
// it is reconciled in the epoch, Fetch at its log end after.
func (s *sim) fetch(n *node) {
	if !n.up || n.leader != nil || n.leaderID < 0 || n.inflight {
		return
	}
	n.inflight = true
	n.req++
	req, epoch, inc := n.req, n.epoch, n.inc
	s.at(simRequestTimeout, fmt.Sprintf("timeout %d", n.id), func() {
		if n.req == req {
			n.inflight = false
		}
	})
	answer := func(fn func()) func() {
		return func() {
			if n.req == req && n.epoch == epoch {
				n.inflight = false
				fn()
			}
		}
	}
	to := n.leaderID
	if !n.reconciled {
		last := n.log.LastEpoch()
		s.send(n.id, to, fmt.Sprintf("epoch-req %d->%d (%d)", n.id, to, last), func() {
			ld := s.node(to).leader
			if ld == nil || ld.CheckEpoch(epoch) != nil {
				return // the follower times out and refreshes
			}
			e, end := s.node(to).log.EndOffsetForEpoch(last)
			s.send(to, n.id, fmt.Sprintf("epoch-resp %d->%d (%d,%d)", to, n.id, e, end), answer(func() {
				done, err := Reconcile(n.log, e, end)
				if err != nil {
					s.fail("replica %d reconciling: %v", n.id, err)
				}
				n.reconciled = done
			}))
		})
		return
	}
	offset := n.log.LogEndOffset()
	s.send(n.id, to, fmt.Sprintf("fetch %d->%d @%d", n.id, to, offset), func() {
		leader := s.node(to)
		if leader.leader == nil {
			return
		}
		ld := leader.leader
		hw, err := ld.Fetched(context.Background(), Fetch{Replica: n.id, Incarnation: inc, LeaderEpoch: epoch, Offset: offset})
		if err != nil || leader.leader != ld || offset > leader.log.LogEndOffset() {
			// Refused, or the leader crashed while its ISR change was
			// committing (the events due meanwhile ran): no answer.
			return
		}
		end := min(leader.log.LogEndOffset(), offset+int64(1+s.rng.IntN(8)))
		es, err := leader.log.read(offset, end)
		if err != nil {
			s.fail("replica %d serving a fetch at %d: %v", to, offset, err)
			return
		}
		s.send(to, n.id, fmt.Sprintf("fetch-resp %d->%d @%d+%d hw %d", to, n.id, offset, len(es), hw), answer(func() {
			if n.log.LogEndOffset() != offset {
				return
			}
			if err := n.log.appendFollower(es); err != nil {
				s.fail("replica %d appending the fetch at %d: %v", n.id, offset, err)
				return
			}
			if hw >= 0 {
				_ = n.log.SetHighWatermark(min(hw, n.log.LogEndOffset()))
			}
		}))
	})
}

// produce has a client append one record with acks=all to a replica that
// believes it leads: mostly the metadata's leader, sometimes another
// (a client with stale metadata, perhaps a zombie leader).
func (s *sim) produce() {
	var n *node
	if s.rng.IntN(5) > 0 {
		if id := s.currentLeader(); id >= 0 {
			n = s.node(id)
		}
	} else {
		n = s.nodes[s.rng.IntN(len(s.nodes))]
	}
	if n == nil || !n.up || n.isolated || n.leader == nil || n.leader.Admit() != nil {
		return
	}
	s.nextValue++
	offset := n.log.LogEndOffset()
	e, err := n.log.appendLeader(s.nextValue)
	if err != nil {
		s.fail("replica %d appending as leader: %v", n.id, err)
		return
	}
	if e.epoch != n.leader.Epoch() {
		s.fail("replica %d stamped epoch %d leading epoch %d", n.id, e.epoch, n.leader.Epoch())
	}
	s.pending = append(s.pending, pendingAck{ld: n.leader, offset: offset, value: s.nextValue, deadline: s.now + simAckTimeout})
}

// settle acknowledges the pending produces whose high watermark passed,
// and fails those that failed or timed out (indeterminate: not counted).
func (s *sim) settle() {
	s.pending = slices.DeleteFunc(s.pending, func(p pendingAck) bool {
		done, err := p.ld.Acked(p.offset)
		if done {
			s.acked = append(s.acked, ackedRec{p.offset, p.value})
		}
		return done || err != nil || s.now >= p.deadline
	})
}

// fault injects one fault, or heals.
func (s *sim) fault() {
	n := s.nodes[s.rng.IntN(len(s.nodes))]
	switch k := s.rng.IntN(10); {
	case k < 3: // isolate a replica for a while
		if !n.isolated {
			n.isolated, n.isolatedAt = true, s.now
			s.at(time.Duration(50+s.rng.IntN(400))*time.Millisecond, fmt.Sprintf("heal %d", n.id), func() { n.isolated = false })
		}
	case k < 5: // cut one link for a while
		o := s.nodes[s.rng.IntN(len(s.nodes))]
		if o != n {
			l := [2]int32{min(n.id, o.id), max(n.id, o.id)}
			s.cut[l] = true
			s.at(time.Duration(50+s.rng.IntN(300))*time.Millisecond, fmt.Sprintf("reconnect %v", l), func() { delete(s.cut, l) })
		}
	case k < 7 || s.unsafeCrashes:
		s.crash(n)
	}
}

// crash stops n, dropping what it had not flushed, and restarts it a
// while later under a new incarnation. Under the lossy setting a crash is
// allowed only while every replica is up and in the ISR: the setting
// survives min.insync.replicas - 1 lossy crashes, no more.
func (s *sim) crash(n *node) {
	if !n.up {
		return
	}
	if !s.unsafeCrashes {
		for _, o := range s.nodes {
			if !o.up && (s.lossy || o != n) {
				return
			}
		}
		if s.lossy && len(s.isr()) < simReplicas {
			return
		}
	}
	s.crashes++
	n.up, n.downAt = false, s.now
	if err := n.log.crash(); err != nil {
		s.fail("replica %d crashing: %v", n.id, err)
	}
	n.leader = nil
	s.at(time.Duration(50+s.rng.IntN(300))*time.Millisecond, fmt.Sprintf("restart %d", n.id), func() {
		n.up = true
		n.inc++
		n.epoch, n.leaderID, n.reconciled, n.inflight = -1, -1, false, false
		n.req++
		// Registering a new incarnation takes it out of the ISR until it
		// has caught up (KIP-903).
		s.meta.Register(n.id, n.inc)
		if _, err := s.meta.Fence(tp0, n.id); err != nil {
			s.fail("fence %d: %v", n.id, err)
		}
	})
}

func (s *sim) fail(format string, args ...any) {
	if s.err == nil {
		s.err = fmt.Errorf("at %v, event %d: %s", s.now, s.events, fmt.Sprintf(format, args...))
	}
}

// check verifies the invariants after an event.
func (s *sim) check() error {
	ctx := context.Background()
	st, _ := s.meta.Partition(ctx, tp0)
	// Epochs rise; one leader per epoch.
	if st.LeaderEpoch < s.metaEpoch {
		return fmt.Errorf("at %v: leader epoch went back from %d to %d", s.now, s.metaEpoch, st.LeaderEpoch)
	}
	s.metaEpoch = st.LeaderEpoch
	for _, n := range s.nodes {
		if n.leader == nil || n.leader.Fenced() {
			continue
		}
		e := n.leader.Epoch()
		if l, ok := s.leaders[e]; ok && l != n.id {
			return fmt.Errorf("at %v: epoch %d has two leaders, %d and %d", s.now, e, l, n.id)
		}
		s.leaders[e] = n.id
	}
	// The high watermark clients see from the leader never goes back.
	if st.Leader >= 0 {
		if ld := s.node(st.Leader).leader; ld != nil && ld.Epoch() == st.LeaderEpoch {
			if hw, ok := ld.HighWatermark(); ok {
				if hw < s.observedHW {
					return fmt.Errorf("at %v: high watermark went back from %d to %d (leader %d, epoch %d)", s.now, s.observedHW, hw, st.Leader, st.LeaderEpoch)
				}
				s.observedHW = hw
			}
		}
	}
	// Every acknowledged record is on every live ISR member.
	for _, m := range st.ISR {
		n := s.node(m.ID)
		if !n.up {
			continue
		}
		for _, a := range s.acked {
			if a.offset >= n.log.LogEndOffset() || n.log.entryAt(a.offset).value != a.value {
				return fmt.Errorf("at %v: acknowledged record %d at offset %d missing from ISR member %d (end %d)", s.now, a.value, a.offset, n.id, n.log.LogEndOffset())
			}
		}
	}
	// No two replicas differ below their high watermarks, and none cut
	// below its own.
	for i, a := range s.nodes {
		if msg := a.log.broken(); msg != "" {
			return fmt.Errorf("at %v: replica %d %s", s.now, a.id, msg)
		}
		for _, b := range s.nodes[i+1:] {
			hw := min(a.log.localHW(), b.log.localHW())
			for o := range hw {
				if a.log.entryAt(o) != b.log.entryAt(o) {
					return fmt.Errorf("at %v: replicas %d and %d differ at offset %d below their high watermarks (%d, %d)", s.now, a.id, b.id, o, a.log.localHW(), b.log.localHW())
				}
			}
		}
	}
	return nil
}

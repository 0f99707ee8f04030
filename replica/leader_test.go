package replica

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/foliolog/folio/log"
	"github.com/foliolog/folio/partition"
	"github.com/foliolog/folio/readpath"
	"github.com/foliolog/folio/record"
	"github.com/foliolog/folio/topic"
	"github.com/foliolog/folio/vfs"
)

// clock is a virtual clock the tests move.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *clock { return &clock{now: time.Unix(1_000_000, 0)} }
func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}
func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// endLog is a Log of which only the end and the high watermark matter.
type endLog struct {
	mu      sync.Mutex
	end, hw int64
}

func (l *endLog) LogEndOffset() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.end
}
func (l *endLog) SetHighWatermark(o int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if o > l.end || o < l.hw {
		return fmt.Errorf("high watermark %d outside [%d, %d]", o, l.hw, l.end)
	}
	l.hw = o
	return nil
}
func (l *endLog) append(n int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.end += n
}

// cluster3 is partition tp0 on replicas 1, 2, 3 led by 1, with l as the
// leader's log.
func cluster3(t *testing.T, l Log, minISR int, c *clock) (*Mem, *Leader) {
	t.Helper()
	m := NewMem()
	for id := int32(1); id <= 3; id++ {
		m.Register(id, int64(id))
	}
	if _, err := m.Create(tp0, 1, 2, 3); err != nil {
		t.Fatal(err)
	}
	ld, err := NewLeader(context.Background(), m, tp0, 1, l, &LeaderOptions{MinInsyncReplicas: minISR, LagTime: 200 * time.Millisecond, Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	return m, ld
}

func fetch(t *testing.T, ld *Leader, id int32, offset int64) int64 {
	t.Helper()
	hw, err := ld.Fetched(context.Background(), Fetch{Replica: id, Incarnation: int64(id), LeaderEpoch: ld.Epoch(), Offset: offset})
	if err != nil {
		t.Fatalf("fetch by %d at %d: %v", id, offset, err)
	}
	return hw
}

func hwOf(ld *Leader) int64 { hw, _ := ld.HighWatermark(); return hw }

// TestHighWatermarkIsLeastISREnd: the high watermark is the least log end
// over the ISR, only forward, and a new leader exposes none below its
// epoch's start (the log end it was elected with).
func TestHighWatermarkIsLeastISREnd(t *testing.T) {
	c := newClock()
	l := &endLog{end: 10}
	_, ld := cluster3(t, l, 2, c)
	if hw, ok := ld.HighWatermark(); ok || hw != -1 {
		t.Fatalf("a new leader exposes %d before its ISR reached its epoch's start", hw)
	}
	// Follower 2 is at 10, 3 has not fetched: nothing is established.
	if hw := fetch(t, ld, 2, 10); hw != -1 {
		t.Fatalf("high watermark %d with follower 3 unknown", hw)
	}
	// 3 is behind the epoch's start (it had a stale tail of an old epoch
	// and reconciled to 7): still nothing, though min over the ISR is 7.
	if hw := fetch(t, ld, 3, 7); hw != -1 {
		t.Fatalf("high watermark %d below the epoch's start 10", hw)
	}
	if hw := fetch(t, ld, 3, 10); hw != 10 || l.hw != 10 {
		t.Fatalf("high watermark %d (log %d), want 10", hw, l.hw)
	}
	l.append(5)
	if hw := fetch(t, ld, 2, 15); hw != 10 {
		t.Fatalf("high watermark %d with 3 at 10", hw)
	}
	if hw := fetch(t, ld, 3, 13); hw != 13 || l.hw != 13 {
		t.Fatalf("high watermark %d (log %d), want 13", hw, l.hw)
	}
	// A follower that went back (it restarted and lost its tail) does not
	// move the high watermark back; under its new incarnation it leaves
	// the ISR (KIP-903), and the high watermark moves on without it.
	hw, err := ld.Fetched(context.Background(), Fetch{Replica: 3, Incarnation: 33, LeaderEpoch: ld.Epoch(), Offset: 11})
	if err != nil || hw < 13 || ld.State().InISR(3) {
		t.Fatalf("after a follower restarted and went back: hw %d, %v, ISR %+v; want >= 13 without 3", hw, err, ld.State().ISR)
	}
	if hw != 15 {
		t.Fatalf("high watermark %d without the restarted follower, want 15", hw)
	}
	// A fetch its old incarnation sent before the crash arrives late: the
	// position it claims may be gone, and is refused.
	if _, err := ld.Fetched(context.Background(), Fetch{Replica: 3, Incarnation: 3, LeaderEpoch: ld.Epoch(), Offset: 15}); !errors.Is(err, ErrStaleIncarnation) {
		t.Fatalf("a late fetch of the old incarnation: %v, want ErrStaleIncarnation", err)
	}
}

// TestFetchEpochErrors: a fetch in an older epoch is fenced, in a newer one
// unknown; once the metadata elects another leader, this one refuses
// fetches and appends.
func TestFetchEpochErrors(t *testing.T) {
	c := newClock()
	m, ld := cluster3(t, &endLog{}, 1, c)
	ctx := context.Background()
	if _, _, err := m.Elect(tp0, 1); err != nil { // epoch 1, still 1
		t.Fatal(err)
	}
	if err := ld.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if !ld.Fenced() {
		t.Fatal("a leader of epoch 0 not fenced by epoch 1")
	}
	ld, err := NewLeader(ctx, m, tp0, 1, &endLog{}, &LeaderOptions{Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		epoch int32
		want  error
	}{{0, ErrFencedLeaderEpoch}, {2, ErrUnknownLeaderEpoch}, {1, nil}} {
		_, err := ld.Fetched(ctx, Fetch{Replica: 2, Incarnation: 2, LeaderEpoch: tc.epoch})
		if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
			t.Errorf("fetch in epoch %d: %v, want %v", tc.epoch, err, tc.want)
		}
	}
	if _, _, err := m.Elect(tp0, 2); err != nil {
		t.Fatal(err)
	}
	if err := ld.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := ld.Fetched(ctx, Fetch{Replica: 2, LeaderEpoch: 1}); !errors.Is(err, ErrNotLeader) {
		t.Errorf("fetch from a fenced leader: %v", err)
	}
	if err := ld.Admit(); !errors.Is(err, ErrNotLeader) {
		t.Errorf("append on a fenced leader: %v", err)
	}
}

// TestISRShrinkAndExpand: a follower behind the leader's end for longer
// than the lag time leaves the ISR through the metadata, after which the
// high watermark moves without it; it rejoins once it reaches the high
// watermark, unless it names an incarnation the metadata no longer has.
func TestISRShrinkAndExpand(t *testing.T) {
	c := newClock()
	ctx := context.Background()
	l := &endLog{}
	m, ld := cluster3(t, l, 2, c)
	fetch(t, ld, 2, 0)
	fetch(t, ld, 3, 0)
	l.append(4)
	c.Advance(150 * time.Millisecond)
	fetch(t, ld, 2, 4)
	if err := ld.Tick(ctx); err != nil || len(ld.State().ISR) != 3 {
		t.Fatalf("shrunk within the lag time: %+v, %v", ld.State(), err)
	}
	c.Advance(100 * time.Millisecond) // 3 caught up last at 0 ms, now 250 ms
	fetch(t, ld, 2, 4)
	if err := ld.Tick(ctx); err != nil {
		t.Fatal(err)
	}
	st, _ := m.Partition(ctx, tp0)
	if st.InISR(3) || ld.State().InISR(3) || st.Version != 1 {
		t.Fatalf("3 still in the ISR after the lag time: metadata %+v, leader %+v", st, ld.State())
	}
	if hw := hwOf(ld); hw != 4 {
		t.Fatalf("high watermark %d without the laggard, want 4", hw)
	}
	// 3 restarts (incarnation 33 registered) but fetches under its old
	// one: the metadata refuses to readmit it.
	m.Register(3, 33)
	fetch(t, ld, 3, 4)
	if ld.State().InISR(3) {
		t.Fatal("a stale incarnation rejoined the ISR")
	}
	hw, err := ld.Fetched(ctx, Fetch{Replica: 3, Incarnation: 33, LeaderEpoch: ld.Epoch(), Offset: 4})
	if err != nil || hw != 4 || !ld.State().InISR(3) {
		t.Fatalf("caught-up follower of the current incarnation: hw %d, %v, ISR %+v", hw, err, ld.State().ISR)
	}
	if st, _ := m.Partition(ctx, tp0); !st.InISR(3) || st.ISR[2].Incarnation != 33 {
		t.Fatalf("metadata after the rejoin: %+v", st)
	}
}

// TestRejoinAtEpochStart: a follower rejoins once its log end reaches
// both the leader's high watermark and the log end the epoch began with,
// Kafka's isFollowerInSync (KIP-320): before the epoch has a high
// watermark (a member of the ISR has not fetched in it), the epoch's
// start is the bound, below which everything committed lies. A follower
// short of it stays out, however long it fetches; without the rule a
// leader alone in an ISR below min.insync.replicas, which holds the high
// watermark back, could never admit anyone (a topic adopted from a
// single broker starts that way).
func TestRejoinAtEpochStart(t *testing.T) {
	c := newClock()
	ctx := context.Background()
	m := NewMem()
	for id := int32(1); id <= 3; id++ {
		m.Register(id, int64(id))
	}
	st, _ := m.Create(tp0, 1, 2, 3)
	if _, err := m.AlterISR(ctx, tp0, ISRChange{Leader: 1, Version: st.Version, ISR: []Member{{1, 1}, {2, 2}}}); err != nil {
		t.Fatal(err)
	}
	ld, err := NewLeader(ctx, m, tp0, 1, &endLog{end: 8}, &LeaderOptions{MinInsyncReplicas: 1, Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	fetch(t, ld, 3, 7) // 2 has not fetched: no HW in this epoch; 3 is short of its start
	if ld.State().InISR(3) {
		t.Fatal("rejoined below the epoch's start offset")
	}
	fetch(t, ld, 3, 8)
	if !ld.State().InISR(3) {
		t.Fatal("not rejoined at the epoch's start offset")
	}
}

// TestMinISR: below min.insync.replicas an append is refused before it is
// written (definite), the high watermark stands still, and an acks=all
// wait in progress ends with NOT_ENOUGH_REPLICAS_AFTER_APPEND
// (indeterminate); a ctx deadline ends it with the deadline.
func TestMinISR(t *testing.T) {
	c := newClock()
	ctx := context.Background()
	l := &endLog{}
	m, ld := cluster3(t, l, 2, c)
	fetch(t, ld, 2, 0)
	fetch(t, ld, 3, 0)
	if err := ld.Admit(); err != nil {
		t.Fatal(err)
	}
	l.append(1)
	dctx, cancel := context.WithTimeout(ctx, time.Millisecond)
	err := ld.Acknowledge(dctx, 0)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("acks=all past its deadline: %v", err)
	}
	fetch(t, ld, 2, 1) // 3 is still at 0: the high watermark too
	acked := make(chan error, 1)
	go func() { acked <- ld.Acknowledge(ctx, 0) }()
	// The controller fences 2 and 3 (their sessions ended); the leader
	// learns of it while the acknowledgement waits.
	m.Fence(tp0, 2)
	m.Fence(tp0, 3)
	if err := ld.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-acked; !errors.Is(err, ErrNotEnoughReplicasAfterAppend) {
		t.Fatalf("acks=all after the ISR shrank below min: %v", err)
	}
	if err := ld.Admit(); !errors.Is(err, ErrNotEnoughReplicas) {
		t.Fatalf("append with the ISR below min: %v", err)
	}
	if err := ld.BeforeAppend(ctx, nil); !errors.Is(err, ErrNotEnoughReplicas) {
		t.Fatalf("acks=all append (the default) with the ISR below min: %v", err)
	}
	// As in Kafka, min.insync.replicas holds acks=all appends only.
	for _, a := range []Ack{AckLeader, AckNone} {
		if err := ld.BeforeAppend(WithAcks(ctx, a), nil); err != nil {
			t.Fatalf("acks=%d append with the ISR below min: %v", a, err)
		}
	}
	// The leader alone holds offset 0, but one is not min.insync.replicas.
	if hw := hwOf(ld); hw != 0 {
		t.Fatalf("high watermark %d moved with the ISR below min", hw)
	}
	// 2 fetches again, is at the high watermark, and rejoins: the ISR is
	// back at min and the high watermark moves.
	if hw := fetch(t, ld, 2, 1); hw != 1 || !ld.State().InISR(2) {
		t.Fatalf("after 2 rejoined: high watermark %d, ISR %+v", hw, ld.State().ISR)
	}
	if err := ld.Admit(); err != nil {
		t.Fatalf("append with the ISR back at min: %v", err)
	}
	// acks=1 does not wait.
	if err := ld.Acknowledge(WithAcks(ctx, AckLeader), 0); err != nil {
		t.Fatalf("acks=1: %v", err)
	}
}

// slowMeta holds every AlterISR until the test releases it.
type slowMeta struct {
	Metadata
	entered chan struct{}
	release chan struct{}
}

func (s *slowMeta) AlterISR(ctx context.Context, tp TopicPartition, ch ISRChange) (State, error) {
	s.entered <- struct{}{}
	<-s.release
	return s.Metadata.AlterISR(ctx, tp, ch)
}

// TestMaximalISR: while a shrink is on its way to the metadata, the high
// watermark still counts the member being removed (KIP-497): a controller
// that has not seen the change could elect it.
func TestMaximalISR(t *testing.T) {
	c := newClock()
	ctx := context.Background()
	m := NewMem()
	for id := int32(1); id <= 3; id++ {
		m.Register(id, int64(id))
	}
	m.Create(tp0, 1, 2, 3)
	sm := &slowMeta{Metadata: m, entered: make(chan struct{}), release: make(chan struct{})}
	l := &endLog{}
	ld, err := NewLeader(ctx, sm, tp0, 1, l, &LeaderOptions{MinInsyncReplicas: 1, LagTime: 200 * time.Millisecond, Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	fetch(t, ld, 2, 0)
	fetch(t, ld, 3, 0)
	l.append(5)
	c.Advance(300 * time.Millisecond)
	fetch(t, ld, 2, 5)
	ticked := make(chan error, 1)
	go func() { ticked <- ld.Tick(ctx) }()
	<-sm.entered
	if hw := fetch(t, ld, 2, 5); hw != 0 {
		t.Fatalf("high watermark %d passed the member being removed (at 0)", hw)
	}
	close(sm.release)
	if err := <-ticked; err != nil {
		t.Fatal(err)
	}
	if hw := hwOf(ld); hw != 5 {
		t.Fatalf("high watermark %d once the shrink committed, want 5", hw)
	}
}

// TestHookHoldsProduce: a real partition opened with the hook: a follower
// refuses appends, a leader holds an acks=all append until its follower's
// fetch passes it, and the partition's high watermark is the leader's.
func TestHookHoldsProduce(t *testing.T) {
	c := newClock()
	ctx := context.Background()
	hook := &heldHook{Hook: NewHook(tp0), held: make(chan int64, 1)}
	p, err := partition.Open(vfs.Default, filepath.Join(t.TempDir(), "t-0"), topic.Info{Name: "t", ID: topic.ID{1}}, 0, log.State{},
		&partition.Options{Replication: hook, RetentionCheckInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	batch := func() []byte {
		b, err := record.NewBuilder(nil)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			if err := b.Append(record.Record{Value: fmt.Appendf(nil, "v%d", i)}); err != nil {
				t.Fatal(err)
			}
		}
		out, err := b.Build(nil)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	if _, err := p.AppendBatch(ctx, batch()); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("append on a follower: %v", err)
	}
	m := NewMem()
	m.Register(1, 1)
	m.Register(2, 2)
	m.Create(tp0, 1, 2)
	m.Elect(tp0, 1) // epoch 1, so that the stamp shows
	ld, err := NewLeader(ctx, m, tp0, 1, p, &LeaderOptions{MinInsyncReplicas: 2, Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	hook.SetLeader(ld)
	fetch(t, ld, 2, 0)
	done := make(chan error, 1)
	go func() {
		_, err := p.AppendBatch(ctx, batch())
		done <- err
	}()
	<-hook.held // the log holds the batch; its acknowledgement waits
	if hw := fetch(t, ld, 2, 0); hw != 0 {
		t.Fatalf("high watermark %d before the follower had the batch", hw)
	}
	select {
	case err := <-done:
		t.Fatalf("acknowledged before the follower had it: %v", err)
	default:
	}
	if hw := fetch(t, ld, 2, 3); hw != 3 {
		t.Fatalf("high watermark %d after the follower fetched at 3", hw)
	}
	if err := <-done; err != nil {
		t.Fatalf("acks=all after replication: %v", err)
	}
	if p.HighWatermark() != 3 {
		t.Fatalf("partition high watermark %d", p.HighWatermark())
	}
	v, err := p.Read(0, 1<<20, log.BoundHighWatermark)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Release()
	epoch := int32(-1)
	if err := readpath.Guard(func() error {
		buf, err := v.Bytes()
		if err != nil {
			return err
		}
		bt, _, err := record.Parse(buf)
		if err != nil {
			return err
		}
		epoch = bt.PartitionLeaderEpoch()
		return nil
	}); err != nil || epoch != 1 {
		t.Fatalf("the batch is stamped with epoch %d (%v), want the leader's 1", epoch, err)
	}
}

// heldHook tells the test when an acknowledgement starts to wait.
type heldHook struct {
	*Hook
	held chan int64
}

func (h *heldHook) AfterAppend(ctx context.Context, p *partition.Partition, first, last int64) error {
	h.held <- last
	return h.Hook.AfterAppend(ctx, p, first, last)
}

// TestISRShrunkToLeaderThenIsolated is Jepsen's 2013 Kafka scenario: the
// followers fall behind, the ISR shrinks to the leader, then the leader is
// cut off and another replica would be elected. With min.insync.replicas
// 2 nothing is acknowledged once the ISR is the leader alone (refused
// before the append, definitely); with 1 the leader acknowledges alone,
// and then no clean election can choose a replica that lacks those
// records: the partition waits for the leader, since unclean election is
// off.
func TestISRShrunkToLeaderThenIsolated(t *testing.T) {
	for _, minISR := range []int{2, 1} {
		t.Run(fmt.Sprint("min.insync.replicas=", minISR), func(t *testing.T) {
			c := newClock()
			ctx := context.Background()
			l := &endLog{}
			m, ld := cluster3(t, l, minISR, c)
			fetch(t, ld, 2, 0)
			fetch(t, ld, 3, 0)
			l.append(1)
			c.Advance(300 * time.Millisecond)
			if err := ld.Tick(ctx); err != nil {
				t.Fatal(err)
			}
			if isr := ld.State().ISR; len(isr) != 1 || isr[0].ID != 1 {
				t.Fatalf("ISR %+v, want the leader alone", isr)
			}
			err := ld.Admit()
			if minISR == 2 {
				if !errors.Is(err, ErrNotEnoughReplicas) {
					t.Fatalf("append with the ISR at the leader alone: %v, want ErrNotEnoughReplicas", err)
				}
			} else {
				if err != nil {
					t.Fatal(err)
				}
				l.append(1)
				if acked, err := ld.Acked(1); !acked || err != nil {
					t.Fatalf("leader alone, min.insync.replicas 1: acked %v, %v", acked, err)
				}
			}
			// The leader is isolated: its session ends.
			if _, err := m.Fence(tp0, 1); err != nil {
				t.Fatal(err)
			}
			for _, r := range []int32{2, 3} {
				if _, _, err := m.Elect(tp0, r); !errors.Is(err, ErrNotEligible) {
					t.Fatalf("electing %d, which lacks the acknowledged records: %v", r, err)
				}
			}
			if err := ld.Refresh(ctx); err != nil {
				t.Fatal(err)
			}
			if !ld.Fenced() {
				t.Fatal("the isolated leader is not fenced by the metadata's new epoch")
			}
		})
	}
}

// TestZombieFollower is KIP-320's KAFKA-6880: a follower that missed the
// epoch change keeps fetching under the old epoch. The new leader refuses
// its fetches (fenced epoch), so it neither counts toward the high
// watermark nor rejoins the ISR until it has reconciled in the new epoch.
func TestZombieFollower(t *testing.T) {
	c := newClock()
	ctx := context.Background()
	m := NewMem()
	for id := int32(1); id <= 3; id++ {
		m.Register(id, int64(id))
	}
	m.Create(tp0, 1, 2, 3)
	// 3 drops out of the ISR, then 2 takes over in epoch 1.
	st, _ := m.Fence(tp0, 3)
	if st, _, _ = m.Elect(tp0, 2); st.LeaderEpoch != 1 || st.InISR(3) {
		t.Fatalf("state %+v", st)
	}
	l := &endLog{end: 5}
	ld, err := NewLeader(ctx, m, tp0, 2, l, &LeaderOptions{MinInsyncReplicas: 1, Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	fetch(t, ld, 1, 5)
	if hw := hwOf(ld); hw != 5 {
		t.Fatalf("high watermark %d, want 5", hw)
	}
	// The zombie: epoch 0, at the leader's end.
	if _, err := ld.Fetched(ctx, Fetch{Replica: 3, Incarnation: 3, LeaderEpoch: 0, Offset: 5}); !errors.Is(err, ErrFencedLeaderEpoch) {
		t.Fatalf("zombie fetch: %v, want ErrFencedLeaderEpoch", err)
	}
	if ld.State().InISR(3) {
		t.Fatal("the zombie rejoined the ISR")
	}
	// Reconciled and fetching in epoch 1, it rejoins.
	if _, err := ld.Fetched(ctx, Fetch{Replica: 3, Incarnation: 3, LeaderEpoch: 1, Offset: 5}); err != nil || !ld.State().InISR(3) {
		t.Fatalf("after reconciling: %v, ISR %+v", err, ld.State().ISR)
	}
}

// TestFetchWithoutIncarnation: a fetch that carries no incarnation (-1,
// Fetch before v15) counts under the one the follower is in the ISR under:
// its position moves the high watermark and it stays in the ISR; one that
// does carry an older incarnation is still refused. A fetch from a broker that is not a
// replica, or beyond the leader's end, is refused with its Kafka code.
func TestFetchWithoutIncarnation(t *testing.T) {
	c := newClock()
	l := &endLog{end: 10}
	_, ld := cluster3(t, l, 2, c)
	ctx := context.Background()
	fetch(t, ld, 2, 10)
	if hw, err := ld.FollowerFetched(ctx, 3, -1, ld.Epoch(), 10); err != nil || hw != 10 || !ld.State().InISR(3) {
		t.Fatalf("fetch without an incarnation: hw %d, %v, ISR %+v; want 10 with 3", hw, err, ld.State().ISR)
	}
	if _, err := ld.FollowerFetched(ctx, 3, 3, ld.Epoch(), 10); err != nil || !ld.State().InISR(3) {
		t.Fatalf("a fetch under the incarnation it was admitted with: %v, ISR %+v", err, ld.State().ISR)
	}
	if _, err := ld.FollowerFetched(ctx, 3, 2, ld.Epoch(), 10); !errors.Is(err, ErrStaleIncarnation) {
		t.Fatalf("an older incarnation: %v, want ErrStaleIncarnation", err)
	}
	if _, err := ld.FollowerFetched(ctx, 4, 4, ld.Epoch(), 10); !errors.Is(err, ErrNotReplica) {
		t.Fatalf("a fetch by a non-replica: %v, want ErrNotReplica", err)
	}
	if _, err := ld.FollowerFetched(ctx, 2, 2, ld.Epoch(), 11); !errors.Is(err, ErrFetchOutOfRange) {
		t.Fatalf("a fetch beyond the end: %v, want ErrFetchOutOfRange", err)
	}
}

// TestLeaderResign: a resigned leader admits nothing more, and an acks=all
// append waiting on the high watermark fails as not-leader at once.
func TestLeaderResign(t *testing.T) {
	c := newClock()
	l := &endLog{end: 0}
	_, ld := cluster3(t, l, 2, c)
	l.append(5)
	ctx := partition.WithAcks(context.Background(), AckAll)
	done := make(chan error, 1)
	go func() { done <- ld.Acknowledge(ctx, 4) }()
	ld.Resign()
	if err := <-done; !errors.Is(err, ErrNotLeader) {
		t.Fatalf("a held append after Resign: %v, want ErrNotLeader", err)
	}
	if err := ld.Admit(); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("Admit after Resign: %v", err)
	}
	if !ld.Fenced() {
		t.Fatal("a resigned leader is not fenced")
	}
}

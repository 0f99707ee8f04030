package group

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/foliolog/folio/errs"
	"github.com/foliolog/folio/log"
	"github.com/foliolog/folio/record"
	"github.com/foliolog/folio/vfs"
	"github.com/twmb/franz-go/pkg/kerr"
)

// groupsOnTwoPartitions returns two group ids whose offsets partitions of n
// differ.
func groupsOnTwoPartitions(t *testing.T, n int32) (string, string) {
	t.Helper()
	for i := 1; i < 100; i++ {
		h := fmt.Sprintf("other-%d", i)
		if PartitionFor("g", n) != PartitionFor(h, n) {
			return "g", h
		}
	}
	t.Fatal("no second group on another partition")
	return "", ""
}

// wantNotCoordinator checks that err is a *NotCoordinatorError for group
// on partition p matching ErrNotCoordinator (or, loading,
// ErrCoordinatorLoadInProgress).
func wantNotCoordinator(t *testing.T, what string, err error, group string, p int32, loading bool) {
	t.Helper()
	nce, ok := errors.AsType[*NotCoordinatorError](err)
	if !ok || nce.Group != group || nce.Partition != p || nce.Loading != loading {
		t.Fatalf("%s: got %v, want a NotCoordinatorError for group %q on partition %d (loading %v)", what, err, group, p, loading)
	}
	want := ErrNotCoordinator
	if loading {
		want = ErrCoordinatorLoadInProgress
	}
	if !errors.Is(err, want) {
		t.Fatalf("%s: %v does not match %v", what, err, want)
	}
}

// A group's partition moves from one coordinator to another over the same
// Store: the first answers NOT_COORDINATOR once it unloaded the partition
// and keeps serving its other groups; the second serves nothing of it
// before it loaded it, and then the committed offsets and the generation.
func TestUnloadThenLoadOnAnotherCoordinator(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store, topics := newMemStore(4), bigTopics{1}
		g, h := groupsOnTwoPartitions(t, 4)
		pg, ph := PartitionFor(g, 4), PartitionFor(h, 4)
		a := newTestCoordinator(t, store, topics, nil)
		defer a.Close()
		if !a.Owns(pg) || !a.Owns(ph) {
			t.Fatal("a coordinator made the single-broker way does not own every partition")
		}
		m, ch := newRaw(t, a, joinReq(g, ""))
		m.joined(mustRecvAfter(t, ch))
		if so := mustRecvAfter(t, m.sync(nil)); so.err != nil {
			t.Fatalf("sync: %v", so.err)
		}
		if err := m.commit(7); err != nil {
			t.Fatalf("commit: %v", err)
		}
		if err := simpleCommit(a, h, 0, 3); err != nil {
			t.Fatalf("commit of %s: %v", h, err)
		}

		if err := a.UnloadPartition(pg); err != nil {
			t.Fatal(err)
		}
		if a.Owns(pg) || !a.Owns(ph) {
			t.Fatalf("after unloading %d: owns it %v, owns %d %v", pg, a.Owns(pg), ph, a.Owns(ph))
		}
		wantNotCoordinator(t, "commit after unload", m.commit(8), g, pg, false)
		wantNotCoordinator(t, "heartbeat after unload", m.heartbeat(), g, pg, false)
		_, err := a.OffsetFetch(context.Background(), &OffsetFetchRequest{Group: g})
		wantNotCoordinator(t, "offset fetch after unload", err, g, pg, false)
		_, err = a.JoinGroup(context.Background(), joinReq(g, ""))
		wantNotCoordinator(t, "join after unload", err, g, pg, false)
		d, err := a.DescribeGroups(context.Background(), []string{g, h})
		if err != nil {
			t.Fatal(err)
		}
		wantNotCoordinator(t, "describe after unload", d[0].Err, g, pg, false)
		if d[1].Err != nil || d[1].State != StateEmpty {
			t.Fatalf("describe of %s on its own partition: %+v", h, d[1])
		}
		if l, err := a.ListGroups(context.Background()); err != nil || len(l) != 1 || l[0].Group != h {
			t.Fatalf("groups listed after unload: %+v %v", l, err)
		}
		if off := fetchOffset(t, a, h, TopicPartition{"t", 0}); off != 3 {
			t.Fatalf("%s's offset on its own partition: %d, want 3", h, off)
		}

		b := newTestCoordinator(t, store, topics, func(o *Options) { o.Unloaded = true })
		defer b.Close()
		_, err = b.OffsetFetch(context.Background(), &OffsetFetchRequest{Group: g})
		wantNotCoordinator(t, "offset fetch before load", err, g, pg, false)
		if err := b.LoadPartition(context.Background(), pg); err != nil {
			t.Fatal(err)
		}
		if off := fetchOffset(t, b, g, TopicPartition{"t", 0}); off != 7 {
			t.Fatalf("offset after the move: %d, want 7", off)
		}
		d, err = b.DescribeGroups(context.Background(), []string{g})
		if err != nil || d[0].Err != nil || d[0].State != StateEmpty || d[0].GenerationID != 1 {
			t.Fatalf("group after the move: %+v %v; want Empty at generation 1", d, err)
		}
		// The member of the old coordinator is not taken over: it joins
		// again.
		wantErr(t, "heartbeat of the old member", m.heartbeat(), ErrNotCoordinator)
		m.c = b
		wantErr(t, "heartbeat of the old member on the new coordinator", m.heartbeat(), ErrUnknownMemberID)
		_, err = b.OffsetFetch(context.Background(), &OffsetFetchRequest{Group: h})
		wantNotCoordinator(t, "group of a partition not loaded", err, h, ph, false)
		// Loading it on a second coordinator is up to the caller; loading
		// again is a no-op.
		if err := b.LoadPartition(context.Background(), pg); err != nil {
			t.Fatal(err)
		}
		if err := b.LoadPartition(context.Background(), 4); !errors.Is(err, ErrUnknownTopicOrPartition) {
			t.Fatalf("load of partition 4 of 4: %v", err)
		}
	})
}

// Unloading answers the JoinGroup waiting on the partition's groups with
// NOT_COORDINATOR, so their members go and find the new coordinator.
func TestUnloadAnswersPendingJoin(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store, topics := newMemStore(2), bigTopics{1}
		c := newTestCoordinator(t, store, topics, nil)
		defer c.Close()
		a, ach := newRaw(t, c, joinReq("g", ""))
		a.joined(mustRecvAfter(t, ach))
		if so := mustRecvAfter(t, a.sync(nil)); so.err != nil {
			t.Fatal(so.err)
		}
		// b's join waits for a to rejoin.
		_, bch := newMemberT(t, context.Background(), c, joinReq("g", ""))
		synctest.Wait()
		select {
		case o := <-bch:
			t.Fatalf("join answered before the rebalance completed: %+v %v", o.resp, o.err)
		default:
		}
		p := PartitionFor("g", 2)
		if err := c.UnloadPartition(p); err != nil {
			t.Fatal(err)
		}
		o := mustRecvAfter(t, bch)
		wantNotCoordinator(t, "the waiting join", o.err, "g", p, false)
	})
}

// gatedStore is a memStore whose Scan or Append waits at a gate while it
// is set: the test sees the call arrive and lets it go on.
type gatedStore struct {
	*memStore
	mu         sync.Mutex
	scanGate   chan struct{}
	appendGate chan struct{}
	entered    chan struct{} // receives once a gated call is waiting
}

func (s *gatedStore) Scan(p int32, fn func(record.Batch) error) error {
	s.mu.Lock()
	gate := s.scanGate
	s.mu.Unlock()
	if gate != nil {
		s.entered <- struct{}{}
		<-gate
	}
	return s.memStore.Scan(p, fn)
}

func (s *gatedStore) Append(p int32, b record.Batch) (int64, error) {
	s.mu.Lock()
	gate := s.appendGate
	s.mu.Unlock()
	if gate != nil {
		s.entered <- struct{}{}
		<-gate
	}
	return s.memStore.Append(p, b)
}

// While LoadPartition reads, the partition's groups get
// COORDINATOR_LOAD_IN_PROGRESS; an UnloadPartition meanwhile wins, and
// the load installs nothing.
func TestLoadInProgressAndUnloadDuringLoad(t *testing.T) {
	mem, topics := newMemStore(1), bigTopics{1}
	a := newTestCoordinator(t, mem, topics, nil)
	if err := simpleCommit(a, "g", 0, 5); err != nil {
		t.Fatal(err)
	}
	a.Close()

	for _, unload := range []bool{false, true} {
		s := &gatedStore{memStore: mem, scanGate: make(chan struct{}), entered: make(chan struct{})}
		b := newTestCoordinator(t, s, topics, func(o *Options) { o.Unloaded = true })
		done := make(chan error, 1)
		go func() { done <- b.LoadPartition(context.Background(), 0) }()
		<-s.entered
		_, err := b.OffsetFetch(context.Background(), &OffsetFetchRequest{Group: "g"})
		wantNotCoordinator(t, "fetch while loading", err, "g", 0, true)
		if err := simpleCommit(b, "g", 0, 6); !errors.Is(err, ErrCoordinatorLoadInProgress) {
			t.Fatalf("commit while loading: %v", err)
		}
		if unload {
			if err := b.UnloadPartition(0); err != nil {
				t.Fatal(err)
			}
		}
		close(s.scanGate)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		_, err = b.OffsetFetch(context.Background(), &OffsetFetchRequest{Group: "g"})
		if unload {
			wantNotCoordinator(t, "fetch after a load the unload overtook", err, "g", 0, false)
		} else if off := fetchOffset(t, b, "g", TopicPartition{"t", 0}); err != nil || off != 5 {
			t.Fatalf("after the load: offset %d, %v; want 5", off, err)
		}
		b.Close()
	}
}

// UnloadPartition returns only once the commits in flight on the
// partition's groups are written and answered: a load that starts after it
// finds every commit acknowledged before.
func TestUnloadWaitsForCommitInFlight(t *testing.T) {
	mem, topics := newMemStore(1), bigTopics{1}
	s := &gatedStore{memStore: mem, entered: make(chan struct{})}
	a := newTestCoordinator(t, s, topics, nil)
	defer a.Close()
	if err := simpleCommit(a, "g", 0, 1); err != nil {
		t.Fatal(err)
	}
	gate := make(chan struct{})
	s.mu.Lock()
	s.appendGate = gate
	s.mu.Unlock()
	committed := make(chan error, 1)
	go func() { committed <- simpleCommit(a, "g", 0, 2) }()
	<-s.entered // the commit is writing, its check passed
	g, err := a.lookup("g")
	if err != nil || g == nil {
		t.Fatalf("lookup: %v %v", g, err)
	}
	unloaded := make(chan error, 1)
	go func() { unloaded <- a.UnloadPartition(0) }()
	// Wait until the unload waits for the commit (a writer pending on the
	// group's fence makes TryRLock fail), or returned without waiting.
	for waiting := false; !waiting; {
		select {
		case err := <-unloaded:
			t.Fatalf("UnloadPartition returned (%v) while a commit was in flight", err)
		default:
		}
		if g.fenceMu.TryRLock() {
			g.fenceMu.RUnlock()
			runtime.Gosched()
			continue
		}
		waiting = true
	}
	s.mu.Lock()
	s.appendGate = nil
	s.mu.Unlock()
	close(gate)
	if err := <-committed; err != nil {
		t.Fatalf("the commit in flight: %v", err)
	}
	if err := <-unloaded; err != nil {
		t.Fatal(err)
	}
	b := newTestCoordinator(t, mem, topics, func(o *Options) { o.Unloaded = true })
	defer b.Close()
	if err := b.LoadPartition(context.Background(), 0); err != nil {
		t.Fatal(err)
	}
	if off := fetchOffset(t, b, "g", TopicPartition{"t", 0}); off != 2 {
		t.Fatalf("offset after the move: %d, want 2 (the commit acknowledged during the unload)", off)
	}
}

// Commits race an unload: every commit acknowledged is in the Store that
// the next coordinator loads, and every one refused says NOT_COORDINATOR.
func TestConcurrentCommitsDuringUnloadLoseNothing(t *testing.T) {
	seed := testSeed(t)
	rng := rand.New(rand.NewPCG(seed, seed))
	for round := range 20 {
		const workers = 4
		mem, topics := newMemStore(3), bigTopics{workers}
		a := newTestCoordinator(t, mem, topics, nil)
		p := PartitionFor("g", 3)
		acked := make([]int64, workers)
		var wg sync.WaitGroup
		errc := make(chan error, workers)
		start := make(chan struct{})
		for w := range workers {
			wg.Go(func() {
				<-start
				for off := int64(1); ; off++ {
					err := simpleCommit(a, "g", int32(w), off)
					if err == nil {
						acked[w] = off
						continue
					}
					if !errors.Is(err, ErrNotCoordinator) {
						errc <- fmt.Errorf("worker %d commit %d: %w", w, off, err)
					}
					return
				}
			})
		}
		close(start)
		for range rng.IntN(200) {
			runtime.Gosched()
		}
		if err := a.UnloadPartition(p); err != nil {
			t.Fatal(err)
		}
		// Load on the next coordinator right away, while refused commits
		// may still be returning.
		b := newTestCoordinator(t, mem, topics, func(o *Options) { o.Unloaded = true })
		if err := b.LoadPartition(context.Background(), p); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		close(errc)
		for err := range errc {
			t.Fatalf("round %d: %v", round, err)
		}
		for w := range workers {
			if acked[w] == 0 {
				continue
			}
			resp, err := b.OffsetFetch(context.Background(), &OffsetFetchRequest{Group: "g", Topics: []OffsetFetchTopic{{"t", []int32{int32(w)}}}})
			if err != nil {
				t.Fatal(err)
			}
			if got := resp.Topics[0].Partitions[0].Offset; got != acked[w] {
				t.Fatalf("round %d, partition %d: loaded offset %d, last acknowledged %d", round, w, got, acked[w])
			}
		}
		a.Close()
		b.Close()
	}
}

// A replicated offsets partition: a LogStore with LogStoreOptions appends
// through Append (the leader's acks=all append) and, with ScanToLogEnd,
// loads what lies above a high watermark that replication has not moved
// yet, as a new leader must: every commit acknowledged in the epochs
// before is in its log, not always below its high watermark.
func TestLogStoreOptionsAppendAndScanToLogEnd(t *testing.T) {
	dir := t.TempDir()
	if err := mkdirDurable(vfs.Default, dir); err != nil {
		t.Fatal(err)
	}
	l, err := log.Open(vfs.Default, dir+"/"+OffsetsTopic+"-0", &log.Options{
		SegmentBytes: 1 << 20, FlushPolicy: log.FlushSync, RetentionAge: -1, RetentionCheckInterval: -1,
		ExternalHighWatermark: true,
	}, log.State{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	logs := []*log.Log{l}
	var appends int
	a := newTestCoordinator(t, NewLogStore(logs, &LogStoreOptions{Append: func(p int32, b record.Batch) (int64, error) {
		appends++
		first, _, err := logs[p].Append(b)
		return first, err
	}}), bigTopics{1}, nil)
	if err := simpleCommit(a, "g", 0, 9); err != nil {
		t.Fatal(err)
	}
	a.Close()
	if appends != 1 || l.HighWatermark() != 0 || l.LogEndOffset() != 1 {
		t.Fatalf("appends %d, high watermark %d, log end %d; want 1, 0, 1", appends, l.HighWatermark(), l.LogEndOffset())
	}
	for _, toEnd := range []bool{false, true} {
		b := newTestCoordinator(t, NewLogStore(logs, &LogStoreOptions{ScanToLogEnd: toEnd}), bigTopics{1}, func(o *Options) { o.Unloaded = true })
		if err := b.LoadPartition(context.Background(), 0); err != nil {
			t.Fatal(err)
		}
		want := int64(-1) // below the high watermark, nothing
		if toEnd {
			want = 9
		}
		if off := fetchOffset(t, b, "g", TopicPartition{"t", 0}); off != want {
			t.Fatalf("ScanToLogEnd %v: loaded offset %d, want %d", toEnd, off, want)
		}
		b.Close()
	}
}

// A replicated partition's append errors answer the commit as Kafka's
// coordinator does: a leader that lost the partition NOT_COORDINATOR (the
// client finds the new one), too few replicas or no acknowledgement in
// time COORDINATOR_NOT_AVAILABLE (it retries).
func TestCommitErrorsOfAReplicatedStore(t *testing.T) {
	for _, tc := range []struct {
		cause, want error
	}{
		{errs.New("replica: not the leader", kerr.NotLeaderForPartition), ErrNotCoordinator},
		{errs.New("replica: not enough in-sync replicas", kerr.NotEnoughReplicas), ErrCoordinatorNotAvailable},
		{errs.New("replica: not enough after the append", kerr.NotEnoughReplicasAfterAppend), ErrCoordinatorNotAvailable},
		{fmt.Errorf("waiting: %w", context.DeadlineExceeded), ErrCoordinatorNotAvailable},
	} {
		s := newMemStore(1)
		c := newTestCoordinator(t, s, bigTopics{1}, nil)
		s.mu.Lock()
		s.fail = tc.cause
		s.mu.Unlock()
		err := simpleCommit(c, "g", 0, 1)
		if !errors.Is(err, tc.want) || !errors.Is(err, tc.cause) {
			t.Fatalf("append failing with %v: commit %v, want %v", tc.cause, err, tc.want)
		}
		c.Close()
	}
}

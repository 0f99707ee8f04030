package folio

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/foliolog/folio/group"
)

func joinT(t testing.TB, b *Broker, groupID string, topics []string, opts *GroupOptions) *GroupConsumer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	gc, err := b.JoinGroup(ctx, groupID, topics, opts)
	if err != nil {
		t.Fatalf("JoinGroup(%s): %v", groupID, err)
	}
	return gc
}

// groupApp polls a GroupConsumer on its own goroutine and keeps what it
// gets.
type groupApp struct {
	gc     *GroupConsumer
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex // guards got and err
	got    []Record
	err    error
}

func startGroupApp(gc *GroupConsumer) *groupApp {
	ctx, cancel := context.WithCancel(context.Background())
	a := &groupApp{gc: gc, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(a.done)
		for r, err := range gc.Records(ctx) {
			a.mu.Lock()
			if err != nil {
				if ctx.Err() == nil {
					a.err = err
				}
				a.mu.Unlock()
				return
			}
			a.got = append(a.got, r)
			a.mu.Unlock()
		}
	}()
	return a
}

func (a *groupApp) stop(t testing.TB) []Record {
	t.Helper()
	a.cancel()
	<-a.done
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.err != nil {
		t.Fatalf("%s: %v", a.gc.MemberID(), a.err)
	}
	return a.got
}

func (a *groupApp) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.got)
}

func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// TestGroupQueueAndPubSub: three members of one group share a topic's
// partitions and together see every record exactly once (no member
// fails); a second group sees every record too.
func TestGroupQueueAndPubSub(t *testing.T) {
	b := openT(t, t.TempDir(), nil)
	createTopicT(t, b, "events", TopicConfig{Partitions: 6, Flush: FlushNone})
	opts := &GroupOptions{Reset: ResetEarliest}
	var workers []*groupApp
	for range 3 {
		workers = append(workers, startGroupApp(joinT(t, b, "workers", []string{"events"}, opts)))
	}
	audit := startGroupApp(joinT(t, b, "audit", []string{"events"}, opts))
	waitFor(t, "the workers to settle", func() bool {
		n := 0
		for _, w := range workers {
			n += len(w.gc.Assignment())
		}
		return n == 6 && len(workers[0].gc.Assignment()) == 2 && len(workers[1].gc.Assignment()) == 2
	})
	const n = 3000
	p := producerT(t, b, nil)
	produced := produceN(t, p, "events", "ev", n)
	waitFor(t, "every record", func() bool {
		total := 0
		for _, w := range workers {
			total += w.count()
		}
		return total >= n && audit.count() >= n
	})
	seen := map[[2]int64]int{}
	for _, w := range workers {
		owned := map[TopicPartition]bool{}
		for _, tp := range w.gc.Assignment() {
			owned[tp] = true
		}
		for _, r := range w.stop(t) {
			if !owned[TopicPartition{Topic: r.Topic, Partition: r.Partition}] {
				t.Fatalf("%s got %s-%d, not in its assignment %v", w.gc.MemberID(), r.Topic, r.Partition, w.gc.Assignment())
			}
			seen[[2]int64{int64(r.Partition), r.Offset}]++
		}
	}
	for i, po := range produced {
		if c := seen[po]; c != 1 {
			t.Fatalf("record %d (%v) delivered %d times to the workers", i, po, c)
		}
	}
	if len(seen) != n {
		t.Fatalf("workers saw %d distinct records, want %d", len(seen), n)
	}
	auditSeen := map[[2]int64]bool{}
	for _, r := range audit.stop(t) {
		auditSeen[[2]int64{int64(r.Partition), r.Offset}] = true
	}
	if len(auditSeen) != n {
		t.Fatalf("the audit group saw %d of %d records", len(auditSeen), n)
	}
	// Commits: Close commits what was handed out; the lag is zero.
	for _, w := range append(workers, audit) {
		if err := w.gc.Close(); err != nil {
			t.Fatal(err)
		}
	}
	for _, g := range []string{"workers", "audit"} {
		lag, err := b.GroupLag(g)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range lag {
			if l.Lag != 0 {
				t.Fatalf("group %s: %+v", g, l)
			}
		}
		if len(lag) != 6 {
			t.Fatalf("group %s: lag of %d partitions", g, len(lag))
		}
	}
}

// TestGroupResumesFromCommitAfterReopen: a group resumes exactly at its
// last commit after the Broker is closed and opened again.
func TestGroupResumesFromCommitAfterReopen(t *testing.T) {
	dir := t.TempDir()
	b, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	createTopicT(t, b, "orders", TopicConfig{Partitions: 3})
	p, err := b.NewProducer(nil)
	if err != nil {
		t.Fatal(err)
	}
	first := produceN(t, p, "orders", "a", 90)
	gc := joinT(t, b, "billing", []string{"orders"}, &GroupOptions{Reset: ResetEarliest, DisableAutoCommit: true})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	got := map[[2]int64]bool{}
	for r, err := range gc.Records(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		got[[2]int64{int64(r.Partition), r.Offset}] = true
		if len(got) == 40 {
			break
		}
	}
	if err := gc.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	// Records handed out after the commit are not committed (manual
	// commits): read some more, then leave without committing them.
	if _, err := gc.Poll(ctx); err != nil {
		t.Fatal(err)
	}
	if err := gc.Close(); err != nil {
		t.Fatal(err)
	}
	lag, err := b.GroupLag("billing")
	if err != nil {
		t.Fatal(err)
	}
	var lagged int64
	for _, l := range lag {
		lagged += l.Lag
	}
	if lagged != 50 {
		t.Fatalf("lag %d after committing 40 of 90: %+v", lagged, lag)
	}
	_ = p.Close()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}

	b = openT(t, dir, nil)
	// Open loaded the commits.
	if st := b.GroupStats(); st.Groups != 1 || st.LoadedRecords == 0 {
		t.Fatalf("after the load: %+v", st)
	}
	p = producerT(t, b, nil)
	second := produceN(t, p, "orders", "b", 30)
	gc = joinT(t, b, "billing", []string{"orders"}, &GroupOptions{Reset: ResetEarliest})
	want := map[[2]int64]bool{}
	for _, po := range append(first, second...) {
		if !got[po] {
			want[po] = true
		}
	}
	for len(want) > 0 {
		recs, err := gc.Poll(ctx)
		if err != nil {
			t.Fatalf("%d records left: %v", len(want), err)
		}
		for _, r := range recs {
			k := [2]int64{int64(r.Partition), r.Offset}
			if got[k] {
				t.Fatalf("%v was committed before the reopen and delivered again", k)
			}
			delete(want, k)
		}
	}
}

// TestGroupZombieCommitRefused: a member expelled for missing its session
// cannot commit over its successor.
func TestGroupZombieCommitRefused(t *testing.T) {
	b := openT(t, t.TempDir(), nil)
	createTopicT(t, b, "t", TopicConfig{Partitions: 1})
	p := producerT(t, b, nil)
	produceN(t, p, "t", "z", 10)
	coord, err := b.GroupCoordinator()
	if err != nil {
		t.Fatal(err)
	}
	// A raw member joins and syncs, then stops heartbeating.
	ctx := context.Background()
	req := &group.JoinGroupRequest{Group: "g", SessionTimeout: 6 * time.Second, ProtocolType: group.ProtocolTypeConsumer,
		Protocols: []group.JoinGroupProtocol{{Name: "cooperative-sticky"}}}
	resp, err := coord.JoinGroup(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := coord.SyncGroup(ctx, &group.SyncGroupRequest{Group: "g", GenerationID: resp.GenerationID, MemberID: resp.MemberID}); err != nil {
		t.Fatal(err)
	}
	// An in-process member joins; the zombie has not rejoined, so the
	// rebalance waits for it until the rebalance timeout (its session
	// timeout here) and goes on without it.
	gc := joinT(t, b, "g", []string{"t"}, &GroupOptions{Reset: ResetEarliest, DisableAutoCommit: true})
	if err := gc.CommitOffsets(ctx, map[TopicPartition]int64{{Topic: "t", Partition: 0}: 8}); err != nil {
		t.Fatal(err)
	}
	zresp, err := coord.OffsetCommit(ctx, &group.OffsetCommitRequest{Group: "g", GenerationID: resp.GenerationID, MemberID: resp.MemberID,
		Topics: []group.OffsetCommitTopic{{Topic: "t", Partitions: []group.OffsetCommitPartition{{Partition: 0, Offset: 2}}}}})
	if !errors.Is(err, group.ErrUnknownMemberID) {
		t.Fatalf("zombie commit: %+v, %v", zresp, err)
	}
	f, err := coord.OffsetFetch(ctx, &group.OffsetFetchRequest{Group: "g", Topics: []group.OffsetFetchTopic{{Topic: "t", Partitions: []int32{0}}}})
	if err != nil || f.Topics[0].Partitions[0].Offset != 8 {
		t.Fatalf("offset after the zombie's commit: %+v %v", f, err)
	}
}

func TestGroupOptionsErrors(t *testing.T) {
	b := openT(t, t.TempDir(), nil)
	ctx := context.Background()
	if _, err := b.JoinGroup(ctx, "g", nil, nil); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("no topics: %v", err)
	}
	if _, err := b.JoinGroup(ctx, "g", []string{"t"}, &GroupOptions{Reset: 7}); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("bad reset: %v", err)
	}
	if st := b.Stats(); st.Consumers != 0 {
		t.Fatalf("a failed join left %d consumers open", st.Consumers)
	}
	ro, err := OpenReadOnly(b.Dir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if _, err := ro.GroupCoordinator(); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("groups on a read-only broker: %v", err)
	}
}

// TestBrokerCloseClosesGroups: Close commits and closes the group
// consumers left open (their heartbeat goroutines end: goleak checks), so
// the next Open resumes from there.
func TestBrokerCloseClosesGroups(t *testing.T) {
	dir := t.TempDir()
	b, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	createTopicT(t, b, "t", TopicConfig{Partitions: 2})
	p, err := b.NewProducer(nil)
	if err != nil {
		t.Fatal(err)
	}
	produceN(t, p, "t", "c", 20)
	gc, err := b.JoinGroup(context.Background(), "g", []string{"t"}, &GroupOptions{Reset: ResetEarliest})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for n := 0; n < 20; {
		recs, err := gc.Poll(ctx)
		if err != nil {
			t.Fatal(err)
		}
		n += len(recs)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := gc.Poll(ctx); !errors.Is(err, ErrClosed) && !errors.Is(err, group.ErrClosed) {
		t.Fatalf("Poll after the Broker closed: %v", err)
	}
	b = openT(t, dir, nil)
	lag, err := b.GroupLag("g")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range lag {
		if l.Lag != 0 || l.Committed != l.HighWatermark {
			t.Fatalf("after Close and Open: %+v", l)
		}
	}
	if len(lag) != 2 {
		t.Fatalf("lag of %d partitions", len(lag))
	}
}

// TestGroupConsumerSeek: GroupConsumer.Seek takes the Offset a Consumer's
// Seek takes, and the next commit covers the new position.
func TestGroupConsumerSeek(t *testing.T) {
	b := openT(t, t.TempDir(), nil)
	createTopicT(t, b, "t", TopicConfig{Flush: FlushNone})
	p := producerT(t, b, nil)
	produceN(t, p, "t", "a", 10)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	gc := joinT(t, b, "g", []string{"t"}, &GroupOptions{DisableAutoCommit: true})
	defer gc.Close()
	if err := gc.Seek("t", 0, AtOffset(7)); err != nil {
		t.Fatal(err)
	}
	recs, err := gc.Poll(ctx)
	if err != nil || len(recs) != 3 || recs[0].Offset != 7 {
		t.Fatalf("after Seek(AtOffset(7)): %d records from %v, %v", len(recs), recs, err)
	}
	if err := gc.Seek("t", 0, AtEarliest()); err != nil {
		t.Fatal(err)
	}
	if err := gc.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	lag, err := b.GroupLag("g")
	if err != nil || len(lag) != 1 || lag[0].Committed != 0 || lag[0].Lag != 10 {
		t.Fatalf("after Seek(AtEarliest()) and Commit: %+v, %v", lag, err)
	}
	if err := gc.Seek("t", 0, AtLatest()); err != nil {
		t.Fatal(err)
	}
	if err := gc.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if lag, err = b.GroupLag("g"); err != nil || lag[0].Committed != 10 {
		t.Fatalf("after Seek(AtLatest()) and Commit: %+v, %v", lag, err)
	}
	if err := gc.Seek("t", 5, AtEarliest()); err == nil {
		t.Fatalf("Seek of a partition that does not exist: %v", err)
	}
}

// TestDefaultResetIsEarliest: a program that produces first and then joins
// a new group with default options reads what it produced (issue 11, 9c);
// a plain Consumer with default options whose position fell below the log
// start moves to it. The zero ResetPolicy is ResetEarliest.
func TestDefaultResetIsEarliest(t *testing.T) {
	if ResetPolicy(0) != ResetEarliest || group.ResetPolicy(0) != group.ResetEarliest {
		t.Fatal("the zero ResetPolicy is not ResetEarliest")
	}
	b := openT(t, t.TempDir(), nil)
	createTopicT(t, b, "t", TopicConfig{Partitions: 3, Flush: FlushNone})
	p := producerT(t, b, nil)
	produceN(t, p, "t", "a", 30)
	gc := joinT(t, b, "new", []string{"t"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	seen := map[string]bool{}
	for r, err := range gc.Records(ctx) {
		if err != nil {
			t.Fatalf("after %d records: %v", len(seen), err)
		}
		seen[string(r.Value)] = true
		if len(seen) == 30 {
			break
		}
	}
	for i := range 30 {
		if !seen[string(value("a", i))] {
			t.Fatalf("record %d produced before the join was not read", i)
		}
	}
	if err := gc.Close(); err != nil {
		t.Fatal(err)
	}

	if err := b.DeleteRecordsBefore("t", 0, 3); err != nil {
		t.Fatal(err)
	}
	c := consumerT(t, b, nil)
	if err := c.Assign(Assignment{Topic: "t", Partition: 0, Start: AtOffset(1)}); err != nil {
		t.Fatal(err)
	}
	recs, err := c.Poll(ctx)
	if err != nil || len(recs) == 0 || recs[0].Offset != 3 {
		t.Fatalf("default Consumer below the log start: %v, %v", recs, err)
	}
}

// TestReadOnlyGroupLag: a read-only Broker beside a running application
// reports a group's lag from the files, as of the call.
func TestReadOnlyGroupLag(t *testing.T) {
	dir := t.TempDir()
	b := openT(t, dir, nil)
	createTopicT(t, b, "t", TopicConfig{Partitions: 2, Flush: FlushNone})
	p := producerT(t, b, &ProducerOptions{ManualPartitioning: true})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for i := range 10 {
		if _, _, err := p.Produce(ctx, &Record{Topic: "t", Partition: int32(i % 2), Value: value("a", i)}); err != nil {
			t.Fatal(err)
		}
	}
	gc := joinT(t, b, "g", []string{"t"}, &GroupOptions{DisableAutoCommit: true})
	defer gc.Close()
	if err := gc.CommitOffsets(ctx, map[TopicPartition]int64{{Topic: "t", Partition: 0}: 2}); err != nil {
		t.Fatal(err)
	}

	ro, err := OpenReadOnly(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	lag, err := ro.GroupLag("g")
	if err != nil || len(lag) != 2 || lag[0].Committed != 2 || lag[0].Lag != 3 || lag[1].Committed != -1 || lag[1].Lag != 5 {
		t.Fatalf("read-only GroupLag: %+v, %v", lag, err)
	}
	// A later commit shows at the next call (after Refresh, which every
	// read-only view of new records needs).
	if err := gc.CommitOffsets(ctx, map[TopicPartition]int64{{Topic: "t", Partition: 1}: 5}); err != nil {
		t.Fatal(err)
	}
	if err := ro.Refresh(); err != nil {
		t.Fatal(err)
	}
	if lag, err = ro.GroupLag("g"); err != nil || lag[1].Committed != 5 || lag[1].Lag != 0 {
		t.Fatalf("read-only GroupLag after a new commit: %+v, %v", lag, err)
	}
	if _, err := ro.GroupLag("nope"); !errors.Is(err, ErrGroupNotFound) {
		t.Fatalf("read-only GroupLag of an unknown group: %v", err)
	}
	if ro.Stats().Groups.Groups != 0 {
		t.Fatal("the read-only lag left a coordinator behind")
	}
}

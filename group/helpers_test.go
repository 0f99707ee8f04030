package group

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/foliolog/folio/record"
)

var seedFlag = flag.Uint64("seed", 0, "seed of the randomized tests (0: pick one and print it)")

func TestMain(m *testing.M) {
	if dir := os.Getenv(crashChildEnv); dir != "" {
		crashChild(dir) // commits until killed
	}
	goleak.VerifyTestMain(m)
}

// testSeed returns the seed of a randomized test and logs it so that a
// failure can be replayed with -seed.
func testSeed(t testing.TB) uint64 {
	t.Helper()
	s := *seedFlag
	if s == 0 {
		s = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (replay with -seed=%d)", s, s)
	return s
}

// memStore is an in-memory Store: durable as long as the test keeps it.
type memStore struct {
	mu    sync.Mutex // guards parts and fail
	parts [][]memBatch
	fail  error // returned by Append while set
}

type memBatch struct {
	base  int64
	batch record.Batch
}

func newMemStore(n int) *memStore { return &memStore{parts: make([][]memBatch, n)} }

func (s *memStore) Partitions() int32 { return int32(len(s.parts)) }

// setFail makes every later Append fail with err (nil: succeed again).
func (s *memStore) setFail(err error) {
	s.mu.Lock()
	s.fail = err
	s.mu.Unlock()
}

func (s *memStore) Append(p int32, b record.Batch) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return 0, s.fail
	}
	var next int64
	if n := len(s.parts[p]); n > 0 {
		next = s.parts[p][n-1].batch.LastOffset() + 1
	}
	c := b.Clone()
	c.SetBaseOffset(next)
	s.parts[p] = append(s.parts[p], memBatch{next, c})
	return next, nil
}

func (s *memStore) Scan(p int32, fn func(record.Batch) error) error {
	s.mu.Lock()
	bs := slices.Clone(s.parts[p])
	s.mu.Unlock()
	for _, b := range bs {
		if err := fn(b.batch); err != nil {
			return err
		}
	}
	return nil
}

// testRec is a record of memTopics.
type testRec struct {
	tp     TopicPartition
	offset int64
	value  string
}

// memTopics holds topics in memory; produce wakes waiting readers.
type memTopics struct {
	mu      sync.Mutex // guards parts and changed
	parts   map[string][]*memPart
	changed chan struct{}
}

type memPart struct {
	logStart int64
	recs     []testRec
}

func newMemTopics() *memTopics {
	return &memTopics{parts: map[string][]*memPart{}, changed: make(chan struct{})}
}

func (m *memTopics) create(topic string, n int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for len(m.parts[topic]) < n {
		m.parts[topic] = append(m.parts[topic], &memPart{})
	}
	close(m.changed)
	m.changed = make(chan struct{})
}

func (m *memTopics) produce(topic string, p int32, value string) int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	mp := m.parts[topic][p]
	off := mp.logStart + int64(len(mp.recs))
	mp.recs = append(mp.recs, testRec{TopicPartition{topic, p}, off, value})
	close(m.changed)
	m.changed = make(chan struct{})
	return off
}

func (m *memTopics) Partitions(topic string) (int32, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ps, ok := m.parts[topic]
	if !ok {
		return 0, fmt.Errorf("topic %q: %w", topic, ErrUnknownTopicOrPartition)
	}
	return int32(len(ps)), nil
}

func (m *memTopics) Offsets(topic string, p int32) (PartitionOffsets, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ps := m.parts[topic]
	if p < 0 || int(p) >= len(ps) {
		return PartitionOffsets{}, fmt.Errorf("%s-%d: %w", topic, p, ErrUnknownTopicOrPartition)
	}
	end := ps[p].logStart + int64(len(ps[p].recs))
	return PartitionOffsets{LogStart: ps[p].logStart, HighWatermark: end, LogEnd: end}, nil
}

// memReader is a Reader of memTopics.
type memReader struct {
	topics *memTopics
	max    int

	mu      sync.Mutex // guards pos and changed
	pos     map[TopicPartition]int64
	changed chan struct{}
}

func newMemReader(t *memTopics) *memReader {
	return &memReader{topics: t, max: 5, pos: map[TopicPartition]int64{}, changed: make(chan struct{})}
}

func (r *memReader) Assign(starts []StartOffset) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range starts {
		if _, err := r.topics.Offsets(s.Topic, s.Partition); err != nil {
			return err
		}
		r.pos[s.TopicPartition] = s.Offset
	}
	close(r.changed)
	r.changed = make(chan struct{})
	return nil
}

func (r *memReader) Unassign(tps []TopicPartition) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, tp := range tps {
		delete(r.pos, tp)
	}
	close(r.changed)
	r.changed = make(chan struct{})
	return nil
}

func (r *memReader) Poll(ctx context.Context) ([]testRec, error) {
	for {
		r.mu.Lock()
		changed := r.changed
		r.topics.mu.Lock()
		produced := r.topics.changed
		var out []testRec
		tps := make([]TopicPartition, 0, len(r.pos))
		for tp := range r.pos {
			tps = append(tps, tp)
		}
		for _, tp := range sortedPartitions(tps) {
			mp := r.topics.parts[tp.Topic][tp.Partition]
			pos := max(r.pos[tp], mp.logStart)
			for pos < mp.logStart+int64(len(mp.recs)) && len(out) < r.max {
				out = append(out, mp.recs[pos-mp.logStart])
				pos++
			}
			r.pos[tp] = pos
		}
		r.topics.mu.Unlock()
		r.mu.Unlock()
		if len(out) > 0 {
			return out, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-changed:
		case <-produced:
		}
	}
}

func (r *memReader) Locate(rec testRec) (TopicPartition, int64) { return rec.tp, rec.offset }

// newTestCoordinator returns a coordinator over a memStore with n
// partitions and the topics, with short session timeouts allowed.
func newTestCoordinator(t testing.TB, store Store, topics Topics, mod func(*Options)) *Coordinator {
	t.Helper()
	o := &Options{Store: store, Topics: topics, MinSessionTimeout: time.Millisecond}
	if mod != nil {
		mod(o)
	}
	c, err := NewCoordinator(o)
	if err != nil {
		t.Fatalf("NewCoordinator: %v", err)
	}
	return c
}

// consumerProtocols are the JoinGroup protocols of a consumer subscribed
// to topics with the given assignors.
func consumerProtocols(topics []string, owned []TopicPartition, gen int32, names ...string) []JoinGroupProtocol {
	meta := encodeSubscription(topics, owned, gen)
	var out []JoinGroupProtocol
	for _, n := range names {
		out = append(out, JoinGroupProtocol{Name: n, Metadata: meta})
	}
	return out
}

// joinReq is a JoinGroup request of a consumer for tests.
func joinReq(group, memberID string, names ...string) *JoinGroupRequest {
	if len(names) == 0 {
		names = []string{"range"}
	}
	return &JoinGroupRequest{
		Group: group, MemberID: memberID, SessionTimeout: 10 * time.Second, RebalanceTimeout: 20 * time.Second,
		ProtocolType: ProtocolTypeConsumer, Protocols: consumerProtocols([]string{"t"}, nil, -1, names...),
		RequireKnownMemberID: true, ClientID: "test",
	}
}

// joinAsync runs JoinGroup on a goroutine; the result arrives on the
// channel.
func joinAsync(ctx context.Context, c *Coordinator, req *JoinGroupRequest) <-chan joinOutcome {
	ch := make(chan joinOutcome, 1)
	go func() {
		r, err := c.JoinGroup(ctx, req)
		ch <- joinOutcome{r, err}
	}()
	return ch
}

func syncAsync(ctx context.Context, c *Coordinator, req *SyncGroupRequest) <-chan syncOutcome {
	ch := make(chan syncOutcome, 1)
	go func() {
		r, err := c.SyncGroup(ctx, req)
		ch <- syncOutcome{r, err}
	}()
	return ch
}

// newMemberT joins a new dynamic member through MEMBER_ID_REQUIRED and
// returns its id; the second join runs asynchronously.
func newMemberT(t testing.TB, ctx context.Context, c *Coordinator, req *JoinGroupRequest) (string, <-chan joinOutcome) {
	t.Helper()
	resp, err := c.JoinGroup(ctx, req)
	if !isErr(err, ErrMemberIDRequired) || resp == nil || resp.MemberID == "" {
		t.Fatalf("first join: %+v, %v; want MEMBER_ID_REQUIRED with an id", resp, err)
	}
	r := *req
	r.MemberID = resp.MemberID
	return resp.MemberID, joinAsync(ctx, c, &r)
}

func isErr(err, target error) bool {
	return err != nil && errors.Is(err, target)
}

func mustRecv[T any](t testing.TB, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	default:
		t.Fatalf("no result yet")
	}
	var zero T
	return zero
}

package transport

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/foliolog/folio/log"
	"github.com/foliolog/folio/partition"
	"github.com/foliolog/folio/record"
	"github.com/foliolog/folio/topic"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// replTestBackend is a testBackend whose partitions have an external high
// watermark (as replicated ones do) and that leads those in leaders.
type replTestBackend struct {
	*testBackend
	mu      sync.Mutex
	leaders map[string]*fakeLeader // by "topic-partition"
}

func (b *replTestBackend) PartitionLeader(name string, p int32) (PartitionLeader, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if ld, ok := b.leaders[fmt.Sprintf("%s-%d", name, p)]; ok {
		return ld, nil
	}
	return nil, fmt.Errorf("%w: %s-%d: this broker follows", kerr.NotLeaderForPartition, name, p)
}

// fakeLeader is a PartitionLeader in a fixed epoch that records the
// fetches reported to it.
type fakeLeader struct {
	epoch   int32
	mu      sync.Mutex
	fetches []followerFetched
}

type followerFetched struct {
	replica     int32
	incarnation int64
	epoch       int32
	offset      int64
}

func (l *fakeLeader) Epoch() int32 { return l.epoch }

func (l *fakeLeader) CheckEpoch(epoch int32) error {
	switch {
	case epoch < l.epoch:
		return kerr.FencedLeaderEpoch
	case epoch > l.epoch:
		return kerr.UnknownLeaderEpoch
	}
	return nil
}

func (l *fakeLeader) FollowerFetched(_ context.Context, replica int32, incarnation int64, epoch int32, offset int64) (int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.fetches = append(l.fetches, followerFetched{replica, incarnation, epoch, offset})
	return -1, nil
}

func (l *fakeLeader) take() []followerFetched {
	l.mu.Lock()
	defer l.mu.Unlock()
	f := l.fetches
	l.fetches = nil
	return f
}

// externalHW is a partition.Replication that only owns the high watermark.
type externalHW struct{}

func (externalHW) ExternalHighWatermark() bool                              { return true }
func (externalHW) BeforeAppend(context.Context, *partition.Partition) error { return nil }
func (externalHW) AfterAppend(context.Context, *partition.Partition, int64, int64) error {
	return nil
}

// addReplicated opens a one-partition topic with an external high
// watermark in b.
func (b *replTestBackend) addReplicated(t *testing.T, name string, id byte) *partition.Partition {
	t.Helper()
	in := topic.Info{Name: name, Created: time.Now(), Config: topic.Config{Partitions: 1}.WithDefaults()}
	in.ID[0] = id
	p, err := partition.Open(nil, filepath.Join(b.dir, name+"-0"), in, 0, log.State{},
		&partition.Options{RetentionCheckInterval: -1, Replication: externalHW{}})
	if err != nil {
		t.Fatal(err)
	}
	b.testBackend.mu.Lock()
	b.topics[name] = &testTopic{info: in, parts: []*partition.Partition{p}}
	b.testBackend.mu.Unlock()
	return p
}

// appendEpoch appends n one-record batches stamped with epoch.
func appendEpoch(t *testing.T, p *partition.Partition, epoch int32, n int) {
	t.Helper()
	if p.LeaderEpoch() != epoch {
		if err := p.SetLeaderEpoch(epoch); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		bld, err := record.NewBuilder(nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := bld.Append(record.Record{Value: fmt.Appendf(nil, "e%d-%d", epoch, i)}); err != nil {
			t.Fatal(err)
		}
		bt, err := bld.Build(nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.AppendBatch(context.Background(), bt); err != nil {
			t.Fatal(err)
		}
	}
}

// TestFollowerFetch: a Fetch with a replica id is served as a Kafka leader
// serves a follower: reads stop at the log end (the high watermark stays
// at 0 here), a parked fetch wakes on an append, a stale or future current
// leader epoch is FENCED_LEADER_EPOCH or UNKNOWN_LEADER_EPOCH, a partition
// this broker does not lead NOT_LEADER_OR_FOLLOWER, a last fetched epoch
// outside the leader's lineage gets a DivergingEpoch and no records (and
// does not count as the follower's position), and every other fetch is
// reported to the leader with the follower's id, incarnation and offset.
func TestFollowerFetch(t *testing.T) {
	rb := &replTestBackend{testBackend: newTestBackend(t), leaders: map[string]*fakeLeader{}}
	ts := startServerBackend(t, rb)
	p := rb.addReplicated(t, "r", 7)
	rb.addReplicated(t, "f", 8) // led elsewhere
	ld := &fakeLeader{epoch: 2}
	rb.leaders["r-0"] = ld
	appendEpoch(t, p, 0, 3) // offsets 0..2 in epoch 0
	appendEpoch(t, p, 2, 2) // 3..4 in epoch 2
	if hw := p.HighWatermark(); hw != 0 {
		t.Fatalf("high watermark %d, want 0 (nothing replicated)", hw)
	}
	ctx := testCtx(t)
	cl := newClient(t, ts.addr)
	cl12 := newClient(t, ts.addr, kgo.MaxVersions(kversion.V3_0_0())) // Fetch v12

	fetch := func(version int16, name string, current, last int32, offset int64, maxWait int32) kmsg.FetchResponseTopicPartition {
		t.Helper()
		req := kmsg.NewPtrFetchRequest()
		req.Version = version
		req.ReplicaID, req.ReplicaState.ID, req.ReplicaState.Epoch = 2, 2, 9
		req.MaxWaitMillis, req.MinBytes, req.MaxBytes = maxWait, 1, 1<<20
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = name
		rt.TopicID = [16]byte{7}
		if name == "f" {
			rt.TopicID = [16]byte{8}
		}
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.Partition, fp.FetchOffset, fp.PartitionMaxBytes = 0, offset, 1<<20
		fp.CurrentLeaderEpoch, fp.LastFetchedEpoch = current, last
		rt.Partitions = append(rt.Partitions, fp)
		req.Topics = append(req.Topics, rt)
		c := cl
		if version == 12 {
			c = cl12
		}
		resp, err := c.Request(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if got := resp.GetVersion(); got != version {
			t.Fatalf("kgo sent v%d, want v%d", got, version)
		}
		return resp.(*kmsg.FetchResponse).Topics[0].Partitions[0]
	}
	for _, v := range []int16{12, 16} {
		ld.take()
		r := fetch(v, "r", 2, 0, 0, 0)
		if r.ErrorCode != 0 || len(r.RecordBatches) == 0 {
			t.Fatalf("v%d: follower fetch at 0: code %d, %d bytes; want the records below the log end", v, r.ErrorCode, len(r.RecordBatches))
		}
		var got []int64
		for rest := r.RecordBatches; len(rest) > 0; {
			var b record.Batch
			var err error
			if b, rest, err = record.Parse(rest); err != nil {
				t.Fatal(err)
			}
			got = append(got, b.BaseOffset())
		}
		if len(got) != 5 || got[4] != 4 {
			t.Fatalf("v%d: batches at %v, want 0..4", v, got)
		}
		wantInc := int64(-1)
		if v >= 15 {
			wantInc = 9
		}
		if f := ld.take(); len(f) != 1 || f[0] != (followerFetched{2, wantInc, 2, 0}) {
			t.Fatalf("v%d: fetches reported %+v, want replica 2, incarnation %d, epoch 2, offset 0", v, f, wantInc)
		}
	}
	for _, c := range []struct {
		name          string
		current, last int32
		offset        int64
		code          int16
		div           *divergingEpoch
	}{
		{"r", 1, 0, 0, kerr.FencedLeaderEpoch.Code, nil},
		{"r", 3, 0, 0, kerr.UnknownLeaderEpoch.Code, nil},
		{"f", 2, 0, 0, kerr.NotLeaderForPartition.Code, nil},
		{"r", 2, 1, 4, 0, &divergingEpoch{0, 3}},        // epoch 1 is not the leader's: epoch 0 ends at 3
		{"r", 2, 0, 4, 0, &divergingEpoch{0, 3}},        // the follower has epoch 0 past its end
		{"r", 2, 3, 5, kerr.OffsetOutOfRange.Code, nil}, // an epoch above the leader's: no end in its lineage (Kafka)
		{"r", 2, 0, 3, 0, nil},                          // at the end of epoch 0: in the lineage
	} {
		r := fetch(16, c.name, c.current, c.last, c.offset, 0)
		f := ld.take()
		if r.ErrorCode != c.code {
			t.Errorf("%s current %d last %d at %d: code %d, want %d", c.name, c.current, c.last, c.offset, r.ErrorCode, c.code)
			continue
		}
		gotDiv := divergingEpoch{r.DivergingEpoch.Epoch, r.DivergingEpoch.EndOffset}
		switch {
		case c.div != nil && (gotDiv != *c.div || len(r.RecordBatches) != 0 || len(f) != 0):
			t.Errorf("last %d at %d: diverging %+v, %d bytes, %d reported; want %+v, none, none", c.last, c.offset, gotDiv, len(r.RecordBatches), len(f), *c.div)
		case c.div == nil && gotDiv != (divergingEpoch{-1, -1}):
			t.Errorf("last %d at %d: diverging %+v, want none", c.last, c.offset, gotDiv)
		case c.div == nil && c.code == 0 && (len(f) != 1 || len(r.RecordBatches) == 0):
			t.Errorf("last %d at %d: %d reported, %d bytes; want one, records", c.last, c.offset, len(f), len(r.RecordBatches))
		case c.code != 0 && len(f) != 0:
			t.Errorf("%s: a refused fetch was reported: %+v", c.name, f)
		}
	}

	// A consumer sees nothing: the high watermark is 0.
	cr := kmsg.NewPtrFetchRequest()
	cr.ReplicaID, cr.MaxBytes = -1, 1<<20
	crt := kmsg.NewFetchRequestTopic()
	crt.Topic, crt.TopicID = "r", [16]byte{7}
	cfp := kmsg.NewFetchRequestTopicPartition()
	cfp.PartitionMaxBytes = 1 << 20
	crt.Partitions = append(crt.Partitions, cfp)
	cr.Topics = append(cr.Topics, crt)
	resp, err := cl.Request(ctx, cr)
	if err != nil {
		t.Fatal(err)
	}
	if cp := resp.(*kmsg.FetchResponse).Topics[0].Partitions[0]; len(cp.RecordBatches) != 0 || cp.HighWatermark != 0 {
		t.Fatalf("consumer fetch: %d bytes, high watermark %d; want none, 0", len(cp.RecordBatches), cp.HighWatermark)
	}

	// Parked at the log end, the fetch wakes on the append, long before
	// its MaxWait.
	parked := make(chan struct{}, 1)
	onPark := func() { parked <- struct{}{} }
	ts.onPark.Store(&onPark)
	done := make(chan kmsg.FetchResponseTopicPartition, 1)
	start := time.Now()
	go func() { done <- fetch(16, "r", 2, 2, 5, 20_000) }()
	<-parked
	appendEpoch(t, p, 2, 1)
	r := <-done
	if len(r.RecordBatches) == 0 || r.ErrorCode != 0 {
		t.Fatalf("parked fetch: code %d, %d bytes", r.ErrorCode, len(r.RecordBatches))
	}
	if el := time.Since(start); el > 10*time.Second {
		t.Fatalf("the parked fetch answered after %v: it waited out its MaxWait instead of waking on the append", el)
	}
}

// startServerBackend is startServer over a replTestBackend.
func startServerBackend(t *testing.T, b *replTestBackend) *testServer {
	t.Helper()
	s, err := NewServer(b, &Options{Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ts := &testServer{Server: s, b: b.testBackend, addr: l.Addr().String(), done: make(chan error, 1)}
	go func() { ts.done <- s.Serve(context.Background(), l) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		if err := <-ts.done; !errors.Is(err, ErrServerClosed) {
			t.Errorf("Serve returned %v, want ErrServerClosed", err)
		}
	})
	return ts
}

package folio

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestKafkaGroupOverTheWire: two kgo members of a group split a topic's
// partitions and commit; a third, after they leave, resumes where they
// committed. The group is the Broker's coordinator, the one in-process
// GroupConsumers use.
func TestKafkaGroupOverTheWire(t *testing.T) {
	b, err := Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := b.CreateTopic("g", TopicConfig{Partitions: 4}); err != nil {
		t.Fatal(err)
	}
	addr := serveT(t, b)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	prod, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("g"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	produce := func(from, n int) {
		t.Helper()
		for i := from; i < from+n; i++ {
			if err := prod.ProduceSync(ctx, &kgo.Record{Partition: int32(i % 4), Value: fmt.Appendf(nil, "%d", i)}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}

	// assigned reports each member's partitions after every rebalance.
	type assignment struct {
		member string
		parts  []int32
	}
	assigned := make(chan assignment, 64)
	member := func(name string) *kgo.Client {
		var mu sync.Mutex
		owned := map[int32]bool{}
		report := func(m map[string][]int32, add bool) {
			mu.Lock()
			for _, p := range m["g"] {
				if add {
					owned[p] = true
				} else {
					delete(owned, p)
				}
			}
			var ps []int32
			for p := range owned {
				ps = append(ps, p)
			}
			mu.Unlock()
			assigned <- assignment{name, ps}
		}
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumerGroup("grp"), kgo.ConsumeTopics("g"),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit(), kgo.HeartbeatInterval(100*time.Millisecond),
			kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { report(m, true) }),
			kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { report(m, false) }),
			kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { report(m, false) }),
			kgo.ClientID(name))
		if err != nil {
			t.Fatal(err)
		}
		return cl
	}
	a, bm := member("a"), member("b")
	defer a.Close()
	defer bm.Close()
	// Wait until the two split the four partitions.
	owned := map[string][]int32{}
	for len(owned["a"]) == 0 || len(owned["b"]) == 0 || len(owned["a"])+len(owned["b"]) != 4 {
		select {
		case as := <-assigned:
			owned[as.member] = as.parts
		case <-ctx.Done():
			t.Fatalf("the members never split the partitions: %v", owned)
		}
	}
	seenBy := map[int32]string{}
	for name, ps := range owned {
		for _, p := range ps {
			if other, dup := seenBy[p]; dup {
				t.Fatalf("partition %d owned by %s and %s", p, other, name)
			}
			seenBy[p] = name
		}
	}

	produce(0, 40)
	got := map[string]bool{}
	for _, m := range []struct {
		name string
		cl   *kgo.Client
	}{{"a", a}, {"b", bm}} {
		want := 10 * len(owned[m.name])
		n := 0
		for n < want {
			fs := m.cl.PollFetches(ctx)
			if err := fs.Err0(); err != nil {
				t.Fatalf("%s: %v", m.name, err)
			}
			for _, r := range fs.Records() {
				if seenBy[r.Partition] != m.name {
					t.Fatalf("%s got a record of partition %d, owned by %s", m.name, r.Partition, seenBy[r.Partition])
				}
				got[string(r.Value)] = true
				n++
			}
		}
		if err := m.cl.CommitUncommittedOffsets(ctx); err != nil {
			t.Fatalf("%s commit: %v", m.name, err)
		}
	}
	if len(got) != 40 {
		t.Fatalf("the two members read %d distinct records, want 40", len(got))
	}
	a.Close()
	bm.Close()

	adm := kadm.NewClient(prod)
	offs, err := adm.FetchOffsets(ctx, "grp")
	if err != nil {
		t.Fatal(err)
	}
	for p := range int32(4) {
		if o, ok := offs.Lookup("g", p); !ok || o.At != 10 {
			t.Fatalf("committed offset of g-%d: %+v, want 10", p, o)
		}
	}

	produce(40, 8)
	c := member("c")
	defer c.Close()
	resumed := map[string]bool{}
	for len(resumed) < 8 {
		fs := c.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		for _, r := range fs.Records() {
			if r.Offset < 10 {
				t.Fatalf("the third member read offset %d of g-%d: it did not resume at the commit", r.Offset, r.Partition)
			}
			resumed[string(r.Value)] = true
		}
	}
	groups, err := adm.DescribeGroups(ctx, "grp")
	if err != nil {
		t.Fatal(err)
	}
	if g := groups["grp"]; g.State != "Stable" || len(g.Members) != 1 || g.Members[0].ClientID != "c" {
		t.Fatalf("DescribeGroups: %+v", g)
	}
	listed, err := adm.ListGroups(ctx)
	if err != nil || len(listed.Groups()) != 1 {
		t.Fatalf("ListGroups: %v, %v", listed, err)
	}
}

// TestKafkaGoGroupResumes: a segmentio/kafka-go group reader (its own
// JoinGroup/SyncGroup/OffsetCommit versions) commits as it reads, and a
// second reader of the group resumes after the commit.
func TestKafkaGoGroupResumes(t *testing.T) {
	b, err := Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := b.CreateTopic("kg", TopicConfig{Partitions: 2}); err != nil {
		t.Fatal(err)
	}
	addr := serveT(t, b)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	tr := &kafkago.Transport{} // its own, so its idle connections close with the test
	defer tr.CloseIdleConnections()
	w := &kafkago.Writer{Addr: kafkago.TCP(addr), Topic: "kg", Balancer: &kafkago.RoundRobin{}, BatchTimeout: time.Millisecond, Transport: tr}
	defer w.Close()
	var msgs []kafkago.Message
	for i := range 20 {
		msgs = append(msgs, kafkago.Message{Value: fmt.Appendf(nil, "%d", i)})
	}
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		t.Fatal(err)
	}
	read := func(n int) map[string]bool {
		r := kafkago.NewReader(kafkago.ReaderConfig{Brokers: []string{addr}, GroupID: "kgg", Topic: "kg", MaxWait: 50 * time.Millisecond,
			StartOffset: kafkago.FirstOffset, HeartbeatInterval: 200 * time.Millisecond})
		defer r.Close()
		got := map[string]bool{}
		for len(got) < n {
			m, err := r.ReadMessage(ctx) // commits synchronously (CommitInterval 0)
			if err != nil {
				t.Fatal(err)
			}
			got[string(m.Value)] = true
		}
		return got
	}
	first := read(20)
	if err := w.WriteMessages(ctx, kafkago.Message{Value: []byte("20")}, kafkago.Message{Value: []byte("21")}); err != nil {
		t.Fatal(err)
	}
	second := read(2)
	for v := range second {
		if first[v] {
			t.Fatalf("the second reader re-read %q: it did not resume at the commit", v)
		}
	}
}

package folio

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/foliolog/folio/record"
	"github.com/foliolog/folio/replica"
	"github.com/foliolog/folio/transport"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// testCluster is brokers of one process sharing a replica.Mem, each with
// its own data directory and Kafka endpoint on a loopback port that stays
// its address across restarts.
type testCluster struct {
	t       *testing.T
	meta    *replica.Mem
	book    map[int32]string
	dirs    map[int32]string
	opts    ClusterOptions
	brokers map[int32]*Broker
	stops   map[int32]func()
}

func newTestCluster(t *testing.T, n int, opts ClusterOptions) *testCluster {
	return newTestClusterDirs(t, n, opts, nil)
}

// newTestClusterDirs is newTestCluster with the data directories of dirs
// for the brokers it names (fresh ones for the others); brokers open in
// the order of their ids.
func newTestClusterDirs(t *testing.T, n int, opts ClusterOptions, dirs map[int32]string) *testCluster {
	tc := &testCluster{t: t, meta: replica.NewMem(), book: map[int32]string{}, dirs: map[int32]string{},
		brokers: map[int32]*Broker{}, stops: map[int32]func(){}}
	ls := map[int32]net.Listener{}
	for id := int32(1); id <= int32(n); id++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls[id], tc.book[id], tc.dirs[id] = l, l.Addr().String(), filepath.Join(t.TempDir(), fmt.Sprint("b", id))
		if d, ok := dirs[id]; ok {
			tc.dirs[id] = d
		}
	}
	opts.Metadata, opts.Brokers = tc.meta, tc.book
	tc.opts = opts
	for id := int32(1); id <= int32(n); id++ {
		tc.start(id, ls[id])
	}
	t.Cleanup(func() {
		for id := range tc.stops {
			tc.stop(id)
		}
	})
	return tc
}

// start opens broker id and serves it on l (nil: a new listener on its
// address).
func (tc *testCluster) start(id int32, l net.Listener) {
	t := tc.t
	t.Helper()
	if l == nil {
		var err error
		if l, err = net.Listen("tcp", tc.book[id]); err != nil {
			t.Fatal(err)
		}
	}
	o := tc.opts
	o.BrokerID = id
	b, err := Open(tc.dirs[id], &Options{Cluster: &o, CheckpointInterval: -1, RetentionCheckInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	s, err := transport.NewServer(b, &transport.Options{NodeID: id})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(context.Background(), l) }()
	tc.brokers[id] = b
	tc.stops[id] = func() {
		if err := s.Shutdown(context.Background()); err != nil {
			t.Error(err)
		}
		if err := <-done; !errors.Is(err, transport.ErrServerClosed) {
			t.Error(err)
		}
		if err := b.Close(); err != nil {
			t.Errorf("closing broker %d: %v", id, err)
		}
	}
}

func (tc *testCluster) stop(id int32) {
	tc.stops[id]()
	delete(tc.stops, id)
	delete(tc.brokers, id)
}

// waitState waits, on the metadata's change signal, until tp's state
// satisfies ok.
func (tc *testCluster) waitState(ctx context.Context, tp replica.TopicPartition, ok func(replica.State) bool) replica.State {
	tc.t.Helper()
	for {
		_, next := tc.meta.Changes()
		st, err := tc.meta.Partition(ctx, tp)
		if err == nil && ok(st) {
			return st
		}
		select {
		case <-next:
		case <-ctx.Done():
			tc.t.Fatalf("%s: waiting for its state: %v; now %+v", tp, ctx.Err(), st)
		}
	}
}

func clusterClient(t *testing.T, seed string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(seed), kgo.MetadataMinAge(50 * time.Millisecond),
		kgo.RetryBackoffFn(func(int) time.Duration { return 20 * time.Millisecond })}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// produceRaw sends one acks=all produce of one record to broker id
// directly and returns the partition's error code.
func produceRaw(ctx context.Context, t *testing.T, cl *kgo.Client, id int32, topicName string, topicID [16]byte, value string) int16 {
	t.Helper()
	bld, err := record.NewBuilder(nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := bld.Append(record.Record{Value: []byte(value), Timestamp: time.Now().UnixMilli()}); err != nil {
		t.Fatal(err)
	}
	batch, err := bld.Build(nil)
	if err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic, rt.TopicID = topicName, topicID // v13 names topics by id
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl.Broker(int(id)))
	if err != nil {
		t.Fatal(err)
	}
	return resp.Topics[0].Partitions[0].ErrorCode
}

// TestClusterWithKafkaClients: three brokers on loopback replicate a topic
// (replication factor 3, min.insync.replicas 2) with franz-go as the
// client, acks=all and idempotent: produce through a follower's address
// reaches the leader through Metadata, a consumer reads from the start, a
// group commits and resumes; with one follower stopped producing goes on,
// with two it is refused with NOT_ENOUGH_REPLICAS before anything is
// written; the followers come back, rejoin the ISR, and every replica's
// log files end byte-identical.
func TestClusterWithKafkaClients(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tc := newTestCluster(t, 3, ClusterOptions{MinInsyncReplicas: 2})
	const topicName = "orders"
	tp := replica.TopicPartition{Topic: topicName, Partition: 0}
	// Created through broker 2; partition 0's preferred leader is broker 1.
	if _, err := tc.brokers[2].CreateTopic(topicName, TopicConfig{Partitions: 1, Flush: FlushNone}); err != nil {
		t.Fatal(err)
	}
	st, err := tc.meta.Partition(ctx, tp)
	if err != nil || st.Leader != 1 || len(st.ISR) != 3 {
		t.Fatalf("created %+v, %v", st, err)
	}

	prod := clusterClient(t, tc.book[2], kgo.DefaultProduceTopic(topicName), kgo.RequiredAcks(kgo.AllISRAcks()))
	var sent []string
	produce := func(n int) {
		t.Helper()
		for range n {
			v := fmt.Sprint("r", len(sent))
			if err := prod.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
				t.Fatalf("producing %s: %v", v, err)
			}
			sent = append(sent, v)
		}
	}
	produce(50)

	// Metadata through any broker names the real leader and replicas.
	adm := clusterClient(t, tc.book[3])
	mreq := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr(topicName)
	mreq.Topics = append(mreq.Topics, mt)
	mresp, err := mreq.RequestWith(ctx, adm.Broker(3))
	if err != nil {
		t.Fatal(err)
	}
	mp := mresp.Topics[0].Partitions[0]
	if len(mresp.Brokers) != 3 || mp.Leader != 1 || !slices.Equal(mp.Replicas, []int32{1, 2, 3}) || len(mp.ISR) != 3 {
		t.Fatalf("metadata from broker 3: brokers %d, partition %+v", len(mresp.Brokers), mp)
	}
	// A follower refuses produce: the client must go to the leader.
	if code := produceRaw(ctx, t, adm, 2, topicName, mresp.Topics[0].TopicID, "to-a-follower"); code != kerr.NotLeaderForPartition.Code {
		t.Fatalf("produce to a follower: code %d", code)
	}

	// And a consumer's fetch.
	freq := kmsg.NewPtrFetchRequest()
	freq.ReplicaID, freq.MaxBytes = -1, 1<<20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic, ft.TopicID = topicName, mresp.Topics[0].TopicID
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.PartitionMaxBytes = 1 << 20
	ft.Partitions = append(ft.Partitions, fp)
	freq.Topics = append(freq.Topics, ft)
	fresp, err := freq.RequestWith(ctx, adm.Broker(2))
	if err != nil {
		t.Fatal(err)
	}
	if code := fresp.Topics[0].Partitions[0].ErrorCode; code != kerr.NotLeaderForPartition.Code {
		t.Fatalf("consumer fetch from a follower: code %d", code)
	}

	consumeAll := func(want []string, opts ...kgo.Opt) *kgo.Client {
		t.Helper()
		cl := clusterClient(t, tc.book[3], append([]kgo.Opt{kgo.ConsumeTopics(topicName)}, opts...)...)
		var got []string
		for len(got) < len(want) {
			fs := cl.PollFetches(ctx)
			if err := fs.Err0(); err != nil {
				t.Fatal(err)
			}
			fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
		}
		if !slices.Equal(got, want) {
			t.Fatalf("consumed %v, want %v", got, want)
		}
		return cl
	}
	consumeAll(sent, kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())).Close()

	// A group commits, and resumes after its last commit.
	g := consumeAll(sent, kgo.ConsumerGroup("g"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
	if err := g.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatal(err)
	}
	g.Close()
	before := len(sent)
	produce(10)
	consumeAll(sent[before:], kgo.ConsumerGroup("g"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())).Close()

	// One follower stopped: |ISR| = 2 = min.insync.replicas, producing goes
	// on.
	tc.stop(3)
	tc.waitState(ctx, tp, func(s replica.State) bool { return !s.InISR(3) })
	produce(10)
	// A second: the ISR is the leader alone, below min.insync.replicas.
	tc.stop(2)
	tc.waitState(ctx, tp, func(s replica.State) bool { return !s.InISR(2) })
	// The leader has adopted the shrunk ISR (as Kafka's leader learns it
	// from the controller) before the next produce.
	v, _ := tc.meta.Changes()
	if err := tc.brokers[1].cluster.waitSynced(ctx, v); err != nil {
		t.Fatal(err)
	}
	end := tc.brokers[1].mustPart(t, topicName).LogEndOffset()
	if code := produceRaw(ctx, t, adm, 1, topicName, mresp.Topics[0].TopicID, "below-min-isr"); code != kerr.NotEnoughReplicas.Code {
		t.Fatalf("acks=all produce with the ISR below min: code %d", code)
	}
	if got := tc.brokers[1].mustPart(t, topicName).LogEndOffset(); got != end {
		t.Fatalf("a refused produce was written: log end %d, was %d", got, end)
	}

	// They return, catch up and rejoin; producing goes on.
	tc.start(2, nil)
	tc.start(3, nil)
	tc.waitState(ctx, tp, func(s replica.State) bool { return len(s.ISR) == 3 })
	produce(10)
	consumeAll(sent, kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())).Close()

	// Every replica ends with the leader's bytes. The last produce was
	// acknowledged at a high watermark every ISR member reached.
	hw := tc.brokers[1].mustPart(t, topicName).HighWatermark()
	if hw != int64(len(sent)) {
		t.Fatalf("leader's high watermark %d, %d acknowledged", hw, len(sent))
	}
	logs := map[int32]map[string][]byte{}
	for _, id := range []int32{1, 2, 3} {
		if got := tc.brokers[id].mustPart(t, topicName).LogEndOffset(); got != hw {
			t.Fatalf("broker %d log end %d, the high watermark %d", id, got, hw)
		}
	}
	// Read while all run: a broker's controlled shutdown would elect
	// another leader, which opens epoch 1 in its own epoch cache.
	for _, id := range []int32{1, 2, 3} {
		logs[id] = logFiles(t, filepath.Join(tc.dirs[id], topicName+"-0"))
	}
	if len(logs[1]) == 0 {
		t.Fatal("no log files")
	}
	sameEpochs(t, tc, 1, topicName)
	for _, id := range []int32{2, 3} {
		if len(logs[id]) != len(logs[1]) {
			t.Fatalf("broker %d has %d files, the leader %d", id, len(logs[id]), len(logs[1]))
		}
		for name, data := range logs[1] {
			if !bytes.Equal(logs[id][name], data) {
				t.Fatalf("broker %d: %s differs from the leader's (%q and %q)", id, name, logs[id][name][:min(len(logs[id][name]), 64)], data[:min(len(data), 64)])
			}
		}
	}
}

// sameEpochs fails unless every broker's partition holds the leader's
// epoch lineage.
func sameEpochs(t *testing.T, tc *testCluster, leader int32, name string) {
	t.Helper()
	want := tc.brokers[leader].mustPart(t, name).Log().LeaderEpochs()
	for id, b := range tc.brokers {
		if got := b.mustPart(t, name).Log().LeaderEpochs(); !slices.Equal(got, want) {
			t.Fatalf("broker %d epoch lineage %v, the leader's %v", id, got, want)
		}
	}
}

func (b *Broker) mustPart(t *testing.T, name string) *brokerPart {
	t.Helper()
	p, err := b.lookup(name, 0)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// logFiles reads a partition directory's segment files. (A follower
// writes its leader-epoch checkpoint with its flushes, so on a live
// FlushNone follower the file may lag; sameEpochs compares the lineages.)
func logFiles(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".log") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = data
	}
	return out
}

// TestClusterLeaderFailover: the leader's controlled shutdown hands the
// partition to an in-sync follower in a new epoch; an idempotent franz-go
// producer follows Metadata to it and nothing acknowledged is lost or
// doubled; the old leader returns as a follower, reconciles by epoch
// lineage and rejoins the ISR with the new leader's bytes.
func TestClusterLeaderFailover(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tc := newTestCluster(t, 3, ClusterOptions{MinInsyncReplicas: 2})
	const topicName = "failover"
	tp := replica.TopicPartition{Topic: topicName, Partition: 0}
	if _, err := tc.brokers[1].CreateTopic(topicName, TopicConfig{Partitions: 1, Flush: FlushNone}); err != nil {
		t.Fatal(err)
	}
	prod := clusterClient(t, tc.book[3], kgo.DefaultProduceTopic(topicName), kgo.RequiredAcks(kgo.AllISRAcks()))
	var sent []string
	produce := func(n int) {
		t.Helper()
		for range n {
			v := fmt.Sprint("f", len(sent))
			if err := prod.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
				t.Fatalf("producing %s: %v", v, err)
			}
			sent = append(sent, v)
		}
	}
	produce(20)
	tc.stop(1)
	st := tc.waitState(ctx, tp, func(s replica.State) bool { return s.Leader > 1 && !s.InISR(1) })
	if st.LeaderEpoch != 1 {
		t.Fatalf("after the leader's shutdown: %+v", st)
	}
	produce(20)
	tc.start(1, nil)
	tc.waitState(ctx, tp, func(s replica.State) bool { return len(s.ISR) == 3 })
	produce(5)

	cons := clusterClient(t, tc.book[1], kgo.ConsumeTopics(topicName), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var got []string
	for len(got) < len(sent) {
		fs := cons.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	if !slices.Equal(got, sent) {
		t.Fatalf("consumed %v, want %v", got, sent)
	}
	leader := tc.brokers[st.Leader].mustPart(t, topicName)
	for id, b := range tc.brokers {
		if end := b.mustPart(t, topicName).LogEndOffset(); end != leader.HighWatermark() {
			t.Fatalf("broker %d log end %d, the leader's high watermark %d", id, end, leader.HighWatermark())
		}
	}
	sameEpochs(t, tc, st.Leader, topicName)
	if got := leader.Log().LeaderEpochs(); len(got) != 2 {
		t.Fatalf("the new leader's lineage %v: want epochs 0 and 1", got)
	}
	want := logFiles(t, filepath.Join(tc.dirs[st.Leader], topicName+"-0"))
	for id := range tc.brokers {
		for name, data := range logFiles(t, filepath.Join(tc.dirs[id], topicName+"-0")) {
			if !bytes.Equal(data, want[name]) {
				t.Fatalf("broker %d: %s differs from the new leader's: %q and %q", id, name, data[:min(len(data), 64)], want[name][:min(len(want[name]), 64)])
			}
		}
	}
}

// TestClusterOptionsValidate: each bad field is refused by name at Open,
// nothing opened.
func TestClusterOptionsValidate(t *testing.T) {
	meta := replica.NewMem()
	book := map[int32]string{1: "127.0.0.1:9092", 2: "127.0.0.1:9093"}
	for _, c := range []struct {
		o    ClusterOptions
		want string
	}{
		{ClusterOptions{BrokerID: -1, Metadata: meta, Brokers: book}, "BrokerID"},
		{ClusterOptions{BrokerID: 1, Brokers: book}, "Metadata"},
		{ClusterOptions{BrokerID: 3, Metadata: meta, Brokers: book}, "Brokers"},
		{ClusterOptions{BrokerID: 1, Metadata: meta, Brokers: book, ReplicationFactor: 3}, "ReplicationFactor"},
		{ClusterOptions{BrokerID: 1, Metadata: meta, Brokers: book, MinInsyncReplicas: -1}, "MinInsyncReplicas"},
		{ClusterOptions{BrokerID: 1, Metadata: meta, Brokers: map[int32]string{1: "nohost"}}, "Brokers[1]"},
		{ClusterOptions{BrokerID: 1, Metadata: meta, Brokers: book, SessionTimeout: -time.Second}, "SessionTimeout"},
	} {
		b, err := Open(filepath.Join(t.TempDir(), "d"), &Options{Cluster: &c.o})
		if err == nil {
			_ = b.Close()
			t.Fatalf("%+v opened", c.o)
		}
		if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), c.want) {
			t.Fatalf("%+v: %v, want ErrInvalidConfig naming %s", c.o, err, c.want)
		}
	}
}

package folio

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/foliolog/folio/replica"
	"github.com/foliolog/folio/topic"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// crash stops broker id as a crash would for the cluster: no hand-over of
// its leaderships, no leaving the ISRs, no end of its session; the others
// learn of it when its session lapses (or the test ends it).
func (tc *testCluster) crash(id int32) {
	tc.brokers[id].cluster.crashed.Store(true)
	tc.stop(id)
}

// syncedNow waits until broker id's manager has brought its roles to the
// metadata's current version.
func (tc *testCluster) syncedNow(ctx context.Context, id int32) {
	tc.t.Helper()
	v, _ := tc.meta.Changes()
	if err := tc.brokers[id].cluster.waitSynced(ctx, v); err != nil {
		tc.t.Fatalf("broker %d syncing to version %d: %v", id, v, err)
	}
}

// produceAll produces n records acks=all through cl, each acknowledged
// before the next, and appends their values to sent.
func produceAll(ctx context.Context, t *testing.T, cl *kgo.Client, sent *[]string, tag string, n int) {
	t.Helper()
	for range n {
		v := fmt.Sprint(tag, len(*sent))
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatalf("producing %s: %v", v, err)
		}
		*sent = append(*sent, v)
	}
}

// consumeAll reads the topic's partition 0 from the start through a
// client seeded with addr until it has want records, and returns their
// values.
func consumeAll(ctx context.Context, t *testing.T, addr, topicName string, want int) []string {
	t.Helper()
	cons := clusterClient(t, addr, kgo.ConsumeTopics(topicName), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var got []string
	for len(got) < want {
		fs := cons.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	return got
}

// TestClusterLeaderCrashFailover: the leader crashes (no controlled
// shutdown); once its session lapses the others fence it out of the ISR
// and elect an in-sync follower in a new epoch; a franz-go producer finds
// it through Metadata, and every record acknowledged with acks=all before
// the crash is there.
func TestClusterLeaderCrashFailover(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tc := newTestCluster(t, 3, ClusterOptions{MinInsyncReplicas: 2, SessionTimeout: 2 * time.Second})
	const topicName = "crash"
	tp := replica.TopicPartition{Topic: topicName, Partition: 0}
	if _, err := tc.brokers[1].CreateTopic(topicName, TopicConfig{Partitions: 1, Flush: FlushNone}); err != nil {
		t.Fatal(err)
	}
	prod := clusterClient(t, tc.book[3], kgo.DefaultProduceTopic(topicName), kgo.RequiredAcks(kgo.AllISRAcks()))
	var sent []string
	produceAll(ctx, t, prod, &sent, "c", 20)
	before, err := tc.meta.Partition(ctx, tp)
	if err != nil || before.Leader != 1 {
		t.Fatalf("before the crash: %+v, %v", before, err)
	}

	tc.crash(1)
	if !tc.meta.Alive(1) {
		t.Fatal("a crashed broker's session ended at once: the crash told the metadata")
	}
	// The session lapses: the others' heartbeat ticks see it.
	st := tc.waitState(ctx, tp, func(s replica.State) bool { return s.Leader > 1 })
	if st.LeaderEpoch <= before.LeaderEpoch || st.InISR(1) || len(st.ISR) != 2 || st.Recovering {
		t.Fatalf("after the leader's crash: %+v, before %+v", st, before)
	}
	if tc.meta.Alive(1) {
		t.Fatal("the crashed broker's session is still alive")
	}
	produceAll(ctx, t, prod, &sent, "c", 20)

	leader := tc.brokers[st.Leader].mustPart(t, topicName)
	if hw := leader.HighWatermark(); hw != int64(len(sent)) {
		t.Fatalf("the new leader's high watermark %d, want %d", hw, len(sent))
	}
	if got := consumeAll(ctx, t, tc.book[st.Leader], topicName, len(sent)); !slices.Equal(got, sent) {
		t.Fatalf("consumed %v, want %v", got, sent)
	}
	for id, b := range tc.brokers {
		if n := b.Stats().UncleanElections; n != 0 {
			t.Fatalf("broker %d counts %d unclean elections after a clean one", id, n)
		}
	}
}

// TestUncleanElectionOffKeepsLeaderless: with unclean election off (the
// default), a partition whose only in-sync replica crashed stays
// leaderless though an out-of-sync replica is alive: a produce to that
// replica is refused with a retriable error and its log is not touched;
// when the in-sync replica returns it leads again, nothing lost.
func TestUncleanElectionOffKeepsLeaderless(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// Sessions lapse only when the test ends them.
	tc := newTestCluster(t, 2, ClusterOptions{SessionTimeout: time.Hour})
	const topicName = "leaderless"
	tp := replica.TopicPartition{Topic: topicName, Partition: 0}
	info, err := tc.brokers[1].CreateTopic(topicName, TopicConfig{Partitions: 1, Flush: FlushNone})
	if err != nil {
		t.Fatal(err)
	}
	prod := clusterClient(t, tc.book[1], kgo.DefaultProduceTopic(topicName), kgo.RequiredAcks(kgo.AllISRAcks()))
	var sent []string
	produceAll(ctx, t, prod, &sent, "o", 10)
	tc.stop(2) // controlled: out of the ISR
	tc.waitState(ctx, tp, func(s replica.State) bool { return !s.InISR(2) })
	produceAll(ctx, t, prod, &sent, "o", 10) // only broker 1 holds these

	tc.crash(1)
	tc.meta.EndSession(1) // the controller takes it for gone
	st := tc.waitState(ctx, tp, func(s replica.State) bool { return s.Leader == -1 })
	tc.start(2, nil)
	tc.syncedNow(ctx, 2)
	if st2, err := tc.meta.Partition(ctx, tp); err != nil || st2.Leader != -1 || st2.LeaderEpoch != st.LeaderEpoch {
		t.Fatalf("with broker 2 alive out of the ISR: %+v, %v; want leaderless as %+v", st2, err, st)
	}
	raw := clusterClient(t, tc.book[2])
	code := produceRaw(ctx, t, raw, 2, topicName, info.ID, "refused")
	if code != kerr.NotLeaderForPartition.Code && code != kerr.LeaderNotAvailable.Code {
		t.Fatalf("produce to the out-of-sync replica: %v, want NOT_LEADER_OR_FOLLOWER or LEADER_NOT_AVAILABLE", kerr.ErrorForCode(code))
	}
	if !kerr.IsRetriable(kerr.ErrorForCode(code)) {
		t.Fatalf("%v is not retriable", kerr.ErrorForCode(code))
	}
	if end := tc.brokers[2].mustPart(t, topicName).LogEndOffset(); end != 10 {
		t.Fatalf("the out-of-sync replica's log end %d, want its 10", end)
	}

	tc.start(1, nil)
	st = tc.waitState(ctx, tp, func(s replica.State) bool { return s.Leader == 1 && len(s.ISR) == 2 })
	if st.Recovering {
		t.Fatalf("a clean election left the state recovering: %+v", st)
	}
	produceAll(ctx, t, prod, &sent, "o", 5)
	if got := consumeAll(ctx, t, tc.book[2], topicName, len(sent)); !slices.Equal(got, sent) {
		t.Fatalf("consumed %v, want %v", got, sent)
	}
	if n := tc.brokers[2].Stats().UncleanElections; n != 0 {
		t.Fatalf("%d unclean elections with unclean election off", n)
	}
}

// TestUncleanElectionTruncationIsTyped: with the topic's
// unclean.leader.election.enable switched on, the
// in-sync replicas gone, an out-of-sync replica is elected in a new
// epoch (counted on it, and the state's recovery cleared once it leads);
// a follower that had more truncates to its log, and an in-process
// consumer on it that had read past the new leader's end gets a
// *TruncatedError naming the partition and offsets on its next Poll,
// never records of the new lineage at offsets it had already read.
func TestUncleanElectionTruncationIsTyped(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tc := newTestCluster(t, 3, ClusterOptions{SessionTimeout: time.Hour})
	const topicName = "unclean"
	tp := replica.TopicPartition{Topic: topicName, Partition: 0}
	if _, err := tc.brokers[1].CreateTopic(topicName, TopicConfig{Partitions: 1, Flush: FlushNone}); err != nil {
		t.Fatal(err)
	}
	prod := clusterClient(t, tc.book[1], kgo.DefaultProduceTopic(topicName), kgo.RequiredAcks(kgo.AllISRAcks()))
	var sent []string
	produceAll(ctx, t, prod, &sent, "u", 10)
	tc.stop(2)
	tc.waitState(ctx, tp, func(s replica.State) bool { return !s.InISR(2) })
	produceAll(ctx, t, prod, &sent, "u", 10) // brokers 1 and 3 only

	// A consumer on follower 3 reads all 20.
	cons, err := tc.brokers[3].NewConsumer(&ConsumerOptions{Reset: ResetNone})
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	if err := cons.Assign(Assignment{Topic: topicName, Start: AtEarliest()}); err != nil {
		t.Fatal(err)
	}
	var read []string
	for len(read) < 20 {
		recs, err := cons.Poll(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			read = append(read, string(r.Value))
		}
	}
	if !slices.Equal(read, sent) {
		t.Fatalf("follower 3's consumer read %v, want %v", read, sent)
	}
	// A franz-go consumer reads all 20 from the leader.
	kcons := clusterClient(t, tc.book[3], kgo.ConsumeTopics(topicName), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if got := pollKgo(ctx, t, kcons, 20, nil); !slices.Equal(got, sent) {
		t.Fatalf("the kgo consumer read %v, want %v", got, sent)
	}

	// The topic's unclean.leader.election.enable, switched on live
	// through one broker, reaches the controller.
	if _, err := tc.brokers[3].AlterTopicConfig(topicName, false, func(c *TopicConfig) error {
		return c.Set(topic.KeyUnclean, "true")
	}); err != nil {
		t.Fatal(err)
	}
	if rec, _ := tc.meta.Topic(topicName); !rec.Config.UncleanLeaderElection {
		t.Fatalf("the metadata's topic config %+v after the alter", rec.Config)
	}

	// Broker 3 taken for gone (a pause, say) and the leader crashed:
	// broker 2, alive and out of the ISR, is all that is left.
	tc.meta.EndSession(3)
	tc.waitState(ctx, tp, func(s replica.State) bool { return !s.InISR(3) })
	tc.crash(1)
	tc.start(2, nil)
	tc.meta.EndSession(1)
	st := tc.waitState(ctx, tp, func(s replica.State) bool { return s.Leader == 2 && !s.Recovering })
	if len(st.ISR) != 1 || !st.InISR(2) || st.LeaderEpoch != 1 {
		t.Fatalf("after the unclean election: %+v", st)
	}
	if n := tc.brokers[2].Stats().UncleanElections; n != 1 {
		t.Fatalf("broker 2 counts %d unclean elections, want 1", n)
	}

	// The new leader's lineage goes on from its 10; broker 3 truncates
	// to it and copies 5 more.
	prod2 := clusterClient(t, tc.book[2], kgo.DefaultProduceTopic(topicName), kgo.RequiredAcks(kgo.AllISRAcks()))
	var after []string
	produceAll(ctx, t, prod2, &after, "n", 5)
	if end := tc.brokers[2].mustPart(t, topicName).LogEndOffset(); end != 15 {
		t.Fatalf("the new leader's log end %d after 5 acknowledged records on its 10", end)
	}
	recs, err := cons.Poll(ctx)
	var te *TruncatedError
	if !errors.Is(err, ErrTruncated) || !errors.As(err, &te) {
		t.Fatalf("Poll after the truncation: %d records %v, err %v; want ErrTruncated", len(recs), recs, err)
	}
	if te.Topic != topicName || te.Partition != 0 || te.Offset != 20 || te.End != 10 || te.Epoch != 0 {
		t.Fatalf("truncation error %+v, want %s-0 offset 20 end 10 epoch 0", te, topicName)
	}
	// franz-go validates its position with OffsetForLeaderEpoch (KIP-320)
	// after the leader's epoch moved: the endpoint answers epoch 0 ends at
	// 10, and the client reports the loss of [10, 20) before reading the
	// new leader's records from 10.
	var loss *kgo.ErrDataLoss
	if got := pollKgo(ctx, t, kcons, 5, &loss); !slices.Equal(got, after) {
		t.Fatalf("the kgo consumer read %v after the truncation, want %v", got, after)
	}
	if loss == nil || loss.Topic != topicName || loss.Partition != 0 || loss.ConsumedTo != 20 || loss.ResetTo != 10 {
		t.Fatalf("the kgo consumer's data loss %+v, want %s-0 consumed to 20, reset to 10", loss, topicName)
	}

	// Told, not reset: the position stays for the caller to move.
	if pos, err := cons.Position(topicName, 0); err != nil || pos != 20 {
		t.Fatalf("position %d, %v after the truncation error, want 20", pos, err)
	}
	if err := cons.Seek(topicName, 0, AtOffset(te.End)); err != nil {
		t.Fatal(err)
	}
	var got []string
	for len(got) < 5 {
		recs, err := cons.Poll(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			got = append(got, string(r.Value))
		}
	}
	if !slices.Equal(got, after) {
		t.Fatalf("read from the truncation point %v, want %v", got, after)
	}
}

// TestClusterProducerIDsUnique: brokers of a cluster hand out producer ids
// unique among them, to Kafka clients and in-process producers alike: two
// brokers counting each on their own gave a producer after a failover the
// id of one before it, whose sequence numbers made its records
// "duplicates", acknowledged and never written.
func TestClusterProducerIDsUnique(t *testing.T) {
	tc := newTestCluster(t, 2, ClusterOptions{SessionTimeout: time.Hour})
	seen := map[int64]int32{}
	for range 3 {
		for _, id := range []int32{1, 2} {
			pid, err := tc.brokers[id].AllocateProducerID()
			if err != nil {
				t.Fatal(err)
			}
			p, err := tc.brokers[id].NewProducer(nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, x := range []int64{pid, p.pid} {
				if other, dup := seen[x]; dup {
					t.Fatalf("producer id %d handed out by broker %d and by broker %d", x, other, id)
				}
				seen[x] = id
			}
			if err := p.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// pollKgo polls cl until it has n records and returns their values. An
// *kgo.ErrDataLoss goes to *loss when loss is not nil; any other error
// fails the test.
func pollKgo(ctx context.Context, t *testing.T, cl *kgo.Client, n int, loss **kgo.ErrDataLoss) []string {
	t.Helper()
	var got []string
	for len(got) < n {
		fs := cl.PollFetches(ctx)
		for _, fe := range fs.Errors() {
			var dl *kgo.ErrDataLoss
			if loss != nil && errors.As(fe.Err, &dl) {
				*loss = dl
				continue
			}
			t.Fatalf("polling %s-%d: %v", fe.Topic, fe.Partition, fe.Err)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	return got
}

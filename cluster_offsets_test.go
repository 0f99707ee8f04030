package folio

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/foliolog/folio/group"
	"github.com/foliolog/folio/replica"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// findCoordinator asks broker via which broker coordinates groupID: -1
// while none is named.
func findCoordinator(ctx context.Context, t *testing.T, cl *kgo.Client, via int32, groupID string) int32 {
	t.Helper()
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorKey, req.CoordinatorKeys = groupID, []string{groupID} // for any version the client picks
	resp, err := req.RequestWith(ctx, cl.Broker(int(via)))
	if err != nil {
		t.Fatal(err)
	}
	code, node := resp.ErrorCode, resp.NodeID
	if resp.Version >= 4 {
		if len(resp.Coordinators) != 1 || resp.Coordinators[0].Key != groupID {
			t.Fatalf("FindCoordinator through %d: %+v", via, resp.Coordinators)
		}
		code, node = resp.Coordinators[0].ErrorCode, resp.Coordinators[0].NodeID
	}
	if code != 0 {
		return -1
	}
	return node
}

// commitRaw sends an OffsetCommit of an Empty group (generation -1) for
// topicName-0 to broker id directly and returns the partition's code.
func commitRaw(ctx context.Context, t *testing.T, cl *kgo.Client, id int32, groupID, topicName string, offset int64) int16 {
	t.Helper()
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group, req.Generation = groupID, -1
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = topicName
	rp := kmsg.NewOffsetCommitRequestTopicPartition()
	rp.Offset, rp.LeaderEpoch = offset, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl.Broker(int(id)))
	if err != nil {
		t.Fatal(err)
	}
	return resp.Topics[0].Partitions[0].ErrorCode
}

// TestClusterGroupCoordinatorFollowsOffsetsLeader: __consumer_offsets is
// replicated, and a group's coordinator is the leader of its partition.
// Commits go through it (acks=all); another broker answers
// NOT_COORDINATOR. The leader crashes; once a new leader is elected,
// FindCoordinator names it, and it serves every commit acknowledged
// before the crash and takes new ones.
func TestClusterGroupCoordinatorFollowsOffsetsLeader(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tc := newTestCluster(t, 3, ClusterOptions{MinInsyncReplicas: 2, SessionTimeout: 2 * time.Second})
	const topicName, groupID = "events", "movers"
	if _, err := tc.brokers[1].CreateTopic(topicName, TopicConfig{Partitions: 1, Flush: FlushNone}); err != nil {
		t.Fatal(err)
	}
	prod := clusterClient(t, tc.book[2], kgo.DefaultProduceTopic(topicName), kgo.RequiredAcks(kgo.AllISRAcks()))
	var sent []string
	produceAll(ctx, t, prod, &sent, "e", 30) // commits up to 30 stand unclamped

	// The first FindCoordinator creates the offsets topic, replicated.
	cl := clusterClient(t, tc.book[3])
	var coord int32 = -1
	for coord < 0 {
		coord = findCoordinator(ctx, t, cl, 3, groupID)
		if ctx.Err() != nil {
			t.Fatal("no coordinator named")
		}
	}
	rec, ok := tc.meta.Topic(group.OffsetsTopic)
	if !ok || rec.Config.Partitions != DefaultOffsetsPartitions {
		t.Fatalf("offsets topic in the metadata: %+v %v", rec, ok)
	}
	tp := replica.TopicPartition{Topic: group.OffsetsTopic, Partition: group.PartitionFor(groupID, rec.Config.Partitions)}
	st, err := tc.meta.Partition(ctx, tp)
	if err != nil || st.Leader != coord || len(st.Replicas) != 3 {
		t.Fatalf("group's offsets partition %s: %+v %v; FindCoordinator names %d", tp, st, err, coord)
	}
	for _, via := range []int32{1, 2} {
		if got := findCoordinator(ctx, t, cl, via, groupID); got != coord {
			t.Fatalf("FindCoordinator through %d names %d, through 3 %d", via, got, coord)
		}
	}

	// Commits through the coordinator (kadm follows FindCoordinator and
	// retries while the partition loads), each acknowledged before the
	// next.
	adm := kadm.NewClient(cl)
	var acked int64
	for off := int64(1); off <= 20; off++ {
		var os kadm.Offsets
		os.AddOffset(topicName, 0, off, -1)
		resps, err := adm.CommitOffsets(ctx, groupID, os)
		if err == nil {
			err = resps.Error()
		}
		if err != nil {
			t.Fatalf("commit %d: %v", off, err)
		}
		acked = off
	}
	// Every replica of the partition holds the commits: acknowledged
	// once committed.
	offsetsPart := func(id int32) *brokerPart {
		t.Helper()
		p, err := tc.brokers[id].lookup(tp.Topic, tp.Partition)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	hw := offsetsPart(coord).HighWatermark()
	for _, id := range st.Replicas {
		if end := offsetsPart(id).LogEndOffset(); end < hw || hw == 0 {
			t.Fatalf("broker %d: offsets partition log end %d, the leader's high watermark %d", id, end, hw)
		}
	}

	// A broker that does not lead the partition is not the coordinator.
	other := int32(1)
	if other == coord {
		other = 2
	}
	if code := commitRaw(ctx, t, cl, other, groupID, topicName, 25); code != kerr.NotCoordinator.Code {
		t.Fatalf("commit to broker %d, not the coordinator: code %d", other, code)
	}
	if c, err := tc.brokers[other].GroupCoordinator(); err != nil {
		t.Fatal(err)
	} else if _, err := c.OffsetFetch(ctx, &group.OffsetFetchRequest{Group: groupID}); !errors.Is(err, group.ErrNotCoordinator) {
		t.Fatalf("offset fetch on broker %d through the Broker API: %v, want NOT_COORDINATOR", other, err)
	}

	// The coordinator crashes; a new leader is elected once its session
	// lapses.
	tc.crash(coord)
	st = tc.waitState(ctx, tp, func(s replica.State) bool { return s.Leader >= 0 && s.Leader != coord })
	next := st.Leader
	survivor := next // ask through a broker that is up
	for found := int32(-1); found != next; {
		found = findCoordinator(ctx, t, cl, survivor, groupID)
		if ctx.Err() != nil {
			t.Fatalf("FindCoordinator names %d, the new leader is %d", found, next)
		}
	}
	// The new coordinator serves every acknowledged commit, once loaded.
	// A client keeps the coordinator it found, the crashed broker, whose
	// dial fails: a client that starts afresh asks again (and may pick
	// the crashed broker for its FindCoordinator: it tries again).
	for {
		fresh := clusterClient(t, tc.book[next])
		resps, err := kadm.NewClient(fresh).FetchOffsets(ctx, groupID)
		fresh.Close()
		if err == nil {
			o, ok := resps.Lookup(topicName, 0)
			if !ok || o.Err != nil || o.At != acked {
				t.Fatalf("offset from the new coordinator %d: %+v %v; acknowledged %d", next, o, ok, acked)
			}
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("fetching offsets after the crash: %v", err)
		}
	}
	c, err := tc.brokers[next].GroupCoordinator()
	if err != nil {
		t.Fatal(err)
	}
	fresp, err := c.OffsetFetch(ctx, &group.OffsetFetchRequest{Group: groupID, Topics: []group.OffsetFetchTopic{{Topic: topicName, Partitions: []int32{0}}}})
	if err != nil || fresp.Topics[0].Partitions[0].Offset != acked {
		t.Fatalf("offset through the Broker API of %d: %+v %v; acknowledged %d", next, fresp, err, acked)
	}
	// And takes new commits, replicated to the ISR left (2 =
	// min.insync.replicas).
	if code := commitRaw(ctx, t, cl, next, groupID, topicName, acked+1); code != 0 {
		t.Fatalf("commit to the new coordinator: code %d", code)
	}
	if o := fetchGroupOffset(ctx, t, tc.brokers[next], groupID, topicName); o != acked+1 {
		t.Fatalf("offset after a commit to the new coordinator: %d, want %d", o, acked+1)
	}
}

func fetchGroupOffset(ctx context.Context, t *testing.T, b *Broker, groupID, topicName string) int64 {
	t.Helper()
	c, err := b.GroupCoordinator()
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.OffsetFetch(ctx, &group.OffsetFetchRequest{Group: groupID, Topics: []group.OffsetFetchTopic{{Topic: topicName, Partitions: []int32{0}}}})
	if err != nil {
		t.Fatal(err)
	}
	return resp.Topics[0].Partitions[0].Offset
}

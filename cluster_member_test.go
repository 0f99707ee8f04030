package folio

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/foliolog/folio/group"
	"github.com/foliolog/folio/replica"
	"github.com/twmb/franz-go/pkg/kgo"
)

// pollGroup polls gc until it has n records, and returns their values.
func pollGroup(ctx context.Context, t *testing.T, gc *GroupConsumer, n int) []string {
	t.Helper()
	var got []string
	for len(got) < n {
		recs, err := gc.Poll(ctx)
		if err != nil {
			t.Fatalf("Poll after %d of %d records: %v", len(got), n, err)
		}
		for _, r := range recs {
			got = append(got, string(r.Value))
		}
	}
	return got
}

// TestClusterInProcessMemberFollowsCoordinator: an in-process member
// (JoinGroup) on a broker that is not its group's coordinator joins
// through the coordinator, the leader of the group's offsets partition,
// consumes and commits there. The coordinator is shut down (or crashes:
// the leadership moves once its session lapses), the partition's
// leadership moves, and the member follows it as a Kafka client would: it
// consumes the rest, its commit succeeds on the new coordinator, and a
// fresh member resumes from that commit with nothing lost.
func TestClusterInProcessMemberFollowsCoordinator(t *testing.T) {
	for _, crash := range []bool{false, true} {
		t.Run(map[bool]string{false: "shutdown", true: "crash"}[crash], func(t *testing.T) {
			testMemberFollowsCoordinator(t, crash)
		})
	}
}

func testMemberFollowsCoordinator(t *testing.T, crash bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	tc := newTestCluster(t, 3, ClusterOptions{SessionTimeout: 2 * time.Second})
	const topicName, groupID = "events", "followers"
	if _, err := tc.brokers[1].CreateTopic(topicName, TopicConfig{Partitions: 1, Flush: FlushNone}); err != nil {
		t.Fatal(err)
	}
	tc.waitState(ctx, replica.TopicPartition{Topic: topicName, Partition: 0}, func(s replica.State) bool { return len(s.ISR) == 3 })

	coord := int32(-1)
	for coord < 0 {
		if coord = tc.brokers[1].CoordinatorID(groupID); coord < 0 {
			if ctx.Err() != nil {
				t.Fatal("no coordinator named")
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	home, survivor := int32(1), int32(2) // the member's broker and one that stays up: neither coordinates
	for _, id := range []int32{1, 2, 3} {
		if id != coord {
			home = id
		}
	}
	for _, id := range []int32{1, 2, 3} {
		if id != coord && id != home {
			survivor = id
		}
	}
	t.Logf("coordinator %d, member on %d, fresh member on %d", coord, home, survivor)

	prod := clusterClient(t, tc.book[home], kgo.DefaultProduceTopic(topicName), kgo.RequiredAcks(kgo.AllISRAcks()))
	var sent []string
	produceAll(ctx, t, prod, &sent, "e", 20)

	gc, err := tc.brokers[home].JoinGroup(ctx, groupID, []string{topicName}, &GroupOptions{
		DisableAutoCommit: true, HeartbeatInterval: 200 * time.Millisecond,
	})
	if err != nil {
		t.Fatalf("JoinGroup on broker %d, not the coordinator: %v", home, err)
	}
	defer gc.Close()
	got := pollGroup(ctx, t, gc, 20)
	if err := gc.Commit(ctx); err != nil {
		t.Fatalf("Commit through coordinator %d: %v", coord, err)
	}
	if o := fetchGroupOffset(ctx, t, tc.brokers[coord], groupID, topicName); o != 20 {
		t.Fatalf("offset on the coordinator: %d, want 20", o)
	}

	// The coordinator shuts down: its offsets partitions go to others.
	rec, _ := tc.meta.Topic(group.OffsetsTopic)
	tp := replica.TopicPartition{Topic: group.OffsetsTopic, Partition: group.PartitionFor(groupID, rec.Config.Partitions)}
	if crash {
		tc.crash(coord)
	} else {
		tc.stop(coord)
	}
	next := tc.waitState(ctx, tp, func(s replica.State) bool { return s.Leader >= 0 && s.Leader != coord }).Leader
	t.Logf("new coordinator %d", next)
	produceAll(ctx, t, prod, &sent, "e", 10)

	got = append(got, pollGroup(ctx, t, gc, 10)...)
	if err := gc.Commit(ctx); err != nil {
		t.Fatalf("Commit after the move: %v", err)
	}
	if o := fetchGroupOffset(ctx, t, tc.brokers[next], groupID, topicName); o != 30 {
		t.Fatalf("offset on the new coordinator %d: %d, want 30", next, o)
	}
	// The commit before the move covered every record read, so the
	// rejoin on the new coordinator resumed after it: each record once.
	if !slices.Equal(got, sent) {
		t.Fatalf("records read: %v, want %v", got, sent)
	}
	if err := gc.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}

	// A fresh member resumes from the commit.
	fresh, err := tc.brokers[survivor].JoinGroup(ctx, groupID, []string{topicName}, &GroupOptions{DisableAutoCommit: true})
	if err != nil {
		t.Fatalf("JoinGroup of a fresh member on %d: %v", survivor, err)
	}
	defer fresh.Close()
	if pos, err := fresh.Position(topicName, 0); err != nil || pos != 30 {
		t.Fatalf("fresh member's position: %d %v, want 30", pos, err)
	}
	produceAll(ctx, t, prod, &sent, "e", 5)
	if more := pollGroup(ctx, t, fresh, 5); !slices.Equal(more, sent[30:]) {
		t.Fatalf("fresh member read %v, want %v", more, sent[30:])
	}
}

package folio

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/foliolog/folio/group"
	"github.com/foliolog/folio/replica"
	"github.com/foliolog/folio/topic"
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

// TestClusterAdoptsSingleBrokerOffsets: a data directory whose broker
// kept a topic and consumer groups alone joins a cluster, and its records
// and commits stay where clients look for them. Its __consumer_offsets and
// its topic enter the metadata under their own ids, led by that broker,
// alone in the ISR until the other replicas have copied its log; after
// that broker shuts down, the new leader of the group's offsets partition
// coordinates the group and serves the commit made before the cluster
// existed (a coordinator that could not see the topic would drop it as a
// deleted topic's), and the topic's new leader holds its records. A second
// directory with its own __consumer_offsets cannot join the same cluster:
// Open names the conflict.
func TestClusterAdoptsSingleBrokerOffsets(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const groupID, topicName = "old-group", "events"
	var eventsID topic.ID
	commitAlone := func(dir string, offset int64) topic.ID {
		b := openT(t, dir, nil)
		eventsID = createTopicT(t, b, topicName, TopicConfig{Partitions: 1, Flush: FlushNone}).ID
		p := producerT(t, b, nil)
		for i := range 50 {
			if _, _, err := p.Produce(ctx, &Record{Topic: topicName, Value: value("e", i)}); err != nil {
				t.Fatal(err)
			}
		}
		coord, err := b.GroupCoordinator()
		if err != nil {
			t.Fatal(err)
		}
		resp, err := coord.OffsetCommit(ctx, &group.OffsetCommitRequest{Group: groupID, GenerationID: -1, Topics: []group.OffsetCommitTopic{
			{Topic: topicName, Partitions: []group.OffsetCommitPartition{{Partition: 0, Offset: offset, LeaderEpoch: -1}}},
		}})
		if err != nil || resp.Topics[0].Partitions[0].Err != nil {
			t.Fatalf("commit alone: %v %+v", err, resp)
		}
		info, err := b.DescribeTopic(group.OffsetsTopic)
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
		return info.ID
	}
	oldDir := t.TempDir()
	oldID := commitAlone(oldDir, 42)
	oldEventsID := eventsID

	tc := newTestClusterDirs(t, 3, ClusterOptions{MinInsyncReplicas: 2, SessionTimeout: 2 * time.Second}, map[int32]string{1: oldDir})
	rec, ok := tc.meta.Topic(group.OffsetsTopic)
	if !ok || rec.ID != oldID {
		t.Fatalf("the cluster's %s: %+v %v; the directory's id is %s", group.OffsetsTopic, rec, ok, oldID)
	}
	tp := replica.TopicPartition{Topic: group.OffsetsTopic, Partition: group.PartitionFor(groupID, rec.Config.Partitions)}

	// committed asks broker id's coordinator for the group's commit,
	// waiting while the partition loads or has no leader.
	committed := func(id int32) int64 {
		t.Helper()
		off := int64(-2)
		waitFor(t, fmt.Sprintf("broker %d to coordinate %q", id, groupID), func() bool {
			coord, err := tc.brokers[id].GroupCoordinator()
			if err == nil {
				var resp *group.OffsetFetchResponse
				resp, err = coord.OffsetFetch(ctx, &group.OffsetFetchRequest{Group: groupID,
					Topics: []group.OffsetFetchTopic{{Topic: topicName, Partitions: []int32{0}}}})
				if err == nil {
					off = resp.Topics[0].Partitions[0].Offset
					return true
				}
			}
			if !errors.Is(err, group.ErrNotCoordinator) && !errors.Is(err, group.ErrCoordinatorLoadInProgress) {
				t.Fatalf("broker %d: offset fetch: %v", id, err)
			}
			return false
		})
		return off
	}
	state := func() replica.State {
		t.Helper()
		st, err := tc.meta.Partition(ctx, tp)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	if st := state(); st.Leader != 1 || len(st.Replicas) != 3 || len(st.ISR) != 1 {
		t.Fatalf("group's offsets partition, adopted: %+v; want broker 1 leading 3 replicas, alone in the ISR", st)
	}
	if got := committed(1); got != 42 {
		t.Fatalf("the adopting broker serves commit %d, want 42", got)
	}
	// The other replicas copy the logs, the group's offsets partition's
	// and the topic's, and join their ISRs: until then broker 1 is each
	// one's whole ISR, and its shutdown would leave them leaderless.
	evTP := replica.TopicPartition{Topic: topicName, Partition: 0}
	waitFor(t, "the followers to join the ISRs", func() bool {
		ev, err := tc.meta.Partition(ctx, evTP)
		return len(state().ISR) == 3 && err == nil && len(ev.ISR) == 3
	})
	tc.stop(1)
	var leader int32
	waitFor(t, "a new leader", func() bool {
		leader = state().Leader
		return leader >= 0 && leader != 1
	})
	if got := committed(leader); got != 42 {
		t.Fatalf("broker %d, the new coordinator, serves commit %d, want 42", leader, got)
	}
	// The directory's other topic came along: its records are on the
	// new leader's replica.
	evRec, ok := tc.meta.Topic(topicName)
	if !ok || evRec.ID != oldEventsID {
		t.Fatalf("%s in the metadata: %+v %v; the directory's id is %s", topicName, evRec, ok, oldEventsID)
	}
	waitFor(t, "a leader of "+topicName, func() bool {
		st, err := tc.meta.Partition(ctx, evTP)
		return err == nil && st.Leader >= 0 && st.Leader != 1
	})
	ev, err := tc.meta.Partition(ctx, evTP)
	if err != nil {
		t.Fatal(err)
	}
	if p := tc.brokers[ev.Leader].mustPart(t, topicName); p.LogEndOffset() != 50 {
		t.Fatalf("broker %d leads %s-0 with %d records, want the 50 written alone", ev.Leader, topicName, p.LogEndOffset())
	}

	// A former replica's directory, opened with metadata that lost the
	// cluster's history (a new replica.Mem: a restart of the whole
	// process), adopts nothing: its copies may be stale.
	tc.stop(2)
	fresh := replica.NewMem()
	o2 := tc.opts
	o2.BrokerID, o2.Metadata = 2, fresh
	b2, err := Open(tc.dirs[2], &Options{Cluster: &o2, CheckpointInterval: -1})
	if err != nil {
		t.Fatalf("reopening a former replica with fresh metadata: %v", err)
	}
	if rec, ok := fresh.Topic(group.OffsetsTopic); ok {
		t.Fatalf("a former replica's directory was adopted into fresh metadata: %+v", rec)
	}
	if err := b2.Close(); err != nil {
		t.Fatal(err)
	}

	// Another single broker's offsets: not the cluster's.
	otherDir := t.TempDir()
	commitAlone(otherDir, 7)
	o := tc.opts
	o.BrokerID = 1
	if b, err := Open(otherDir, &Options{Cluster: &o}); !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), group.OffsetsTopic) {
		if err == nil {
			_ = b.Close()
		}
		t.Fatalf("opening a directory with its own %s into the cluster: %v", group.OffsetsTopic, err)
	}
}

// TestClusterCoordinatorWithoutReplicaOfTopic: a group's coordinator need
// not hold a replica of the topics the group reads (four brokers, a topic
// of three replicas). It takes the group's commits for such a topic,
// knowing its partitions from the metadata, and after it shuts down the
// next coordinator loads them back rather than dropping them for a
// deleted topic's. An in-process member of such a group, on a broker with
// a replica, takes its reset's start from its own broker.
func TestClusterCoordinatorWithoutReplicaOfTopic(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tc := newTestCluster(t, 4, ClusterOptions{ReplicationFactor: 3, SessionTimeout: 2 * time.Second})
	const topicName = "narrow"
	if _, err := tc.brokers[1].CreateTopic(topicName, TopicConfig{Partitions: 1, Flush: FlushNone}); err != nil {
		t.Fatal(err)
	}
	st, err := tc.meta.Partition(ctx, replica.TopicPartition{Topic: topicName})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tc.brokers[1].GroupCoordinator(); err != nil { // creates __consumer_offsets
		t.Fatal(err)
	}
	rec, ok := tc.meta.Topic(group.OffsetsTopic)
	if !ok {
		t.Fatal("no offsets topic in the metadata")
	}
	// Groups whose offsets partition a broker without a replica of the
	// topic leads.
	var groupIDs []string
	var tp replica.TopicPartition
	var coord int32
	for i := 0; len(groupIDs) < 2; i++ {
		g := fmt.Sprint("g", i)
		gtp := replica.TopicPartition{Topic: group.OffsetsTopic, Partition: group.PartitionFor(g, rec.Config.Partitions)}
		ost, err := tc.meta.Partition(ctx, gtp)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(st.Replicas, ost.Leader) {
			if len(groupIDs) == 0 {
				tp, coord = gtp, ost.Leader
			}
			groupIDs = append(groupIDs, g)
		}
	}
	groupID := groupIDs[0]

	// An in-process member on a broker holding the topic, of a group
	// that broker does not coordinate, starts at the earliest offset it
	// reads there: the reset's offsets are its own broker's, not the
	// coordinator's, which holds no replica.
	home := st.Replicas[0]
	p := producerT(t, tc.brokers[st.Leader], nil)
	for i := range 3 {
		// Until the leader's manager has applied the metadata (created
		// its replica, taken its role), it refuses.
		waitFor(t, "the topic's leader to take a record", func() bool {
			_, _, err := p.Produce(ctx, &Record{Topic: topicName, Value: value("n", i)})
			if err != nil && !errors.Is(err, replica.ErrNotLeader) && !errors.Is(err, ErrUnknownTopic) {
				t.Fatal(err)
			}
			return err == nil
		})
	}
	gc, err := tc.brokers[home].JoinGroup(ctx, groupIDs[1], []string{topicName}, &GroupOptions{Reset: ResetEarliest, DisableAutoCommit: true})
	if err != nil {
		t.Fatalf("JoinGroup on broker %d, coordinated by one without a replica: %v", home, err)
	}
	var got []Record
	for len(got) < 3 {
		recs, err := gc.Poll(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, recs...)
	}
	if got[0].Offset != 0 || len(got) != 3 {
		t.Fatalf("member read %d records from offset %d, want 3 from 0", len(got), got[0].Offset)
	}
	if err := gc.Close(); err != nil {
		t.Fatal(err)
	}
	request := func(id int32, f func(*group.Coordinator) error) {
		t.Helper()
		waitFor(t, fmt.Sprintf("broker %d to coordinate %q", id, groupID), func() bool {
			c, err := tc.brokers[id].GroupCoordinator()
			if err == nil {
				err = f(c)
			}
			if errors.Is(err, group.ErrNotCoordinator) || errors.Is(err, group.ErrCoordinatorLoadInProgress) {
				return false
			}
			if err != nil {
				t.Fatalf("broker %d: %v", id, err)
			}
			return true
		})
	}
	request(coord, func(c *group.Coordinator) error {
		resp, err := c.OffsetCommit(ctx, &group.OffsetCommitRequest{Group: groupID, GenerationID: -1, Topics: []group.OffsetCommitTopic{
			{Topic: topicName, Partitions: []group.OffsetCommitPartition{{Partition: 0, Offset: 0, LeaderEpoch: -1}}},
		}})
		if err == nil {
			err = resp.Topics[0].Partitions[0].Err
		}
		return err
	})
	waitFor(t, "the offsets partition's ISR", func() bool {
		ost, err := tc.meta.Partition(ctx, tp)
		return err == nil && len(ost.ISR) == 3
	})
	tc.stop(coord)
	var next int32 = -1
	waitFor(t, "a new coordinator", func() bool {
		ost, err := tc.meta.Partition(ctx, tp)
		if err == nil && ost.Leader >= 0 && ost.Leader != coord {
			next = ost.Leader
		}
		return next >= 0
	})
	request(next, func(c *group.Coordinator) error {
		resp, err := c.OffsetFetch(ctx, &group.OffsetFetchRequest{Group: groupID, Topics: []group.OffsetFetchTopic{{Topic: topicName, Partitions: []int32{0}}}})
		if err == nil && resp.Topics[0].Partitions[0].Offset != 0 {
			t.Fatalf("broker %d serves commit %d of %s, want 0", next, resp.Topics[0].Partitions[0].Offset, topicName)
		}
		return err
	})
}

package group

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/foliolog/folio/record"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// groupRecords returns the decoded group metadata records of a group in
// the store, in log order.
func groupRecords(t testing.TB, s *memStore, groupID string) []groupRecord {
	t.Helper()
	var out []groupRecord
	p := PartitionFor(groupID, s.Partitions())
	_ = s.Scan(p, func(b record.Batch) error {
		it := b.Records(nil)
		defer it.Close()
		for it.Next() {
			r := it.Record()
			_, kind, err := decodeOffsetRecord(r.Key(), r.Value(), r.ValueIsNull())
			if err != nil {
				t.Fatalf("store holds a bad record: %v", err)
			}
			if kind != kindGroupMetadata {
				continue
			}
			gr, err := decodeGroupRecord(r.Key(), r.Value(), r.ValueIsNull())
			if err != nil {
				t.Fatalf("store holds a bad group record: %v", err)
			}
			if gr.group == groupID {
				out = append(out, gr)
			}
		}
		return it.Err()
	})
	return out
}

// lastGroupRecord is the group's latest metadata record.
func lastGroupRecord(t testing.TB, s *memStore, groupID string) groupRecord {
	t.Helper()
	recs := groupRecords(t, s, groupID)
	if len(recs) == 0 {
		t.Fatalf("group %s has no metadata record", groupID)
	}
	return recs[len(recs)-1]
}

// membersOf returns "member=topic-partition,..." per member of a group
// record, decoding each assignment, in member order.
func membersOf(t testing.TB, v kmsg.GroupMetadataValue) []string {
	t.Helper()
	var out []string
	for _, m := range v.Members {
		tps, err := decodeAssignment(m.Assignment)
		if err != nil {
			t.Fatalf("member %s: %v", m.MemberID, err)
		}
		var s []string
		for _, tp := range tps {
			s = append(s, tp.String())
		}
		out = append(out, m.MemberID+"="+strings.Join(s, ","))
	}
	return out
}

func assign(id string, tps ...TopicPartition) SyncGroupAssignment {
	return SyncGroupAssignment{MemberID: id, Assignment: encodeAssignment(tps)}
}

// TestGroupMetadataRecords: each completed rebalance writes the members
// and their assignments, a member's leave is reflected by the next
// generation's record, the last leave records the group Empty, and a new
// coordinator keeps the generation but no members.
func TestGroupMetadataRecords(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newMemStore(3)
		c := newTestCoordinator(t, store, newMemTopics(), nil)
		defer c.Close()
		t0, t1 := TopicPartition{"t", 0}, TopicPartition{"t", 1}

		a, ach := newRaw(t, c, joinReq("g", ""))
		a.joined(mustRecvAfter(t, ach))
		if recs := groupRecords(t, store, "g"); len(recs) != 0 {
			t.Fatalf("a record before the leader's sync: %+v", recs)
		}
		mustRecvAfter(t, a.sync([]SyncGroupAssignment{assign(a.id, t0, t1)}))
		if got := membersOf(t, lastGroupRecord(t, store, "g").value); !slices.Equal(got, []string{a.id + "=t-0,t-1"}) {
			t.Fatalf("generation 1 members %v", got)
		}

		b, bch := newRaw(t, c, joinReq("g", ""))
		synctest.Wait()
		a.joined(mustRecvAfter(t, a.join()))
		b.joined(mustRecv(t, bch))
		as := a.sync([]SyncGroupAssignment{assign(a.id, t0), assign(b.id, t1)})
		bs := b.sync(nil)
		synctest.Wait()
		if o := mustRecv(t, as); o.err != nil {
			t.Fatal(o.err)
		}
		if o := mustRecv(t, bs); o.err != nil {
			t.Fatal(o.err)
		}
		r := lastGroupRecord(t, store, "g")
		v := r.value
		if r.tombstone || v.Generation != 2 || v.ProtocolType != ProtocolTypeConsumer || v.Protocol == nil || *v.Protocol != "range" ||
			v.Leader == nil || *v.Leader != a.id {
			t.Fatalf("generation 2 record %+v", r)
		}
		if got := membersOf(t, v); !slices.Equal(got, []string{a.id + "=t-0", b.id + "=t-1"}) {
			t.Fatalf("generation 2 members %v", got)
		}
		for _, m := range v.Members {
			if m.ClientID != "test" || m.SessionTimeoutMillis != 10_000 || m.RebalanceTimeoutMillis != 20_000 || m.InstanceID != nil {
				t.Fatalf("member fields %+v", m)
			}
			s, err := decodeSubscription(m.MemberID, "", m.Subscription)
			if err != nil || !slices.Equal(s.Topics, []string{"t"}) {
				t.Fatalf("member %s subscription %+v, %v", m.MemberID, s, err)
			}
		}

		// b leaves: a rejoins alone, and generation 3's record lists a only.
		if _, err := c.LeaveGroup(context.Background(), &LeaveGroupRequest{Group: "g", Members: []LeaveGroupMember{{MemberID: b.id}}}); err != nil {
			t.Fatal(err)
		}
		a.joined(mustRecvAfter(t, a.join()))
		mustRecvAfter(t, a.sync([]SyncGroupAssignment{assign(a.id, t0, t1)}))
		if r := lastGroupRecord(t, store, "g"); r.value.Generation != 3 || !slices.Equal(membersOf(t, r.value), []string{a.id + "=t-0,t-1"}) {
			t.Fatalf("after b left: %+v", r)
		}

		// a leaves: the group is recorded Empty.
		if _, err := c.LeaveGroup(context.Background(), &LeaveGroupRequest{Group: "g", Members: []LeaveGroupMember{{MemberID: a.id}}}); err != nil {
			t.Fatal(err)
		}
		r = lastGroupRecord(t, store, "g")
		if r.tombstone || len(r.value.Members) != 0 || r.value.Protocol != nil || r.value.Leader != nil || r.value.Generation != 4 {
			t.Fatalf("after the last leave: %+v", r)
		}
		if st := c.Stats(); st.MetadataWrites != 4 || st.MetadataErrors != 0 {
			t.Fatalf("stats %+v", st)
		}
		c.Close()

		// A new coordinator keeps the generation, and writes nothing: the
		// record already says Empty.
		c2 := newTestCoordinator(t, store, newMemTopics(), nil)
		defer c2.Close()
		d, err := c2.DescribeGroups(context.Background(), []string{"g"})
		if err != nil || d[0].State != StateEmpty || d[0].GenerationID != 4 || len(d[0].Members) != 0 {
			t.Fatalf("after reload: %+v, %v", d, err)
		}
		if st := c2.Stats(); st.MetadataWrites != 0 {
			t.Fatalf("reload of an Empty group wrote %d records", st.MetadataWrites)
		}
		// The next generation continues the count.
		n, nch := newRaw(t, c2, joinReq("g", ""))
		if r := n.joined(mustRecvAfter(t, nch)); r.GenerationID != 5 {
			t.Fatalf("first generation after reload: %d, want 5", r.GenerationID)
		}
	})
}

// TestGroupMetadataAfterCrash: a coordinator that stopped while its group
// had members left a record listing them; the next one loads the group
// Empty, without the members, and records that.
func TestGroupMetadataAfterCrash(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newMemStore(1)
		c := newTestCoordinator(t, store, newMemTopics(), nil)
		a, ach := newRaw(t, c, joinReq("g", ""))
		a.joined(mustRecvAfter(t, ach))
		mustRecvAfter(t, a.sync([]SyncGroupAssignment{assign(a.id, TopicPartition{"t", 0})}))
		c.Close() // the process died: nobody left

		c2 := newTestCoordinator(t, store, newMemTopics(), nil)
		defer c2.Close()
		d, err := c2.DescribeGroups(context.Background(), []string{"g"})
		if err != nil || d[0].State != StateEmpty || len(d[0].Members) != 0 || d[0].GenerationID != 1 {
			t.Fatalf("after the crash: %+v, %v", d, err)
		}
		if r := lastGroupRecord(t, store, "g"); len(r.value.Members) != 0 || r.value.Generation != 1 {
			t.Fatalf("record after reload %+v", r)
		}
		a.c = c2
		wantErr(t, "the old member's heartbeat", a.heartbeat(), ErrUnknownMemberID)
	})
}

// TestGroupMetadataWriteFailureDoesNotFailRebalance: a failed metadata
// write is logged and counted, and the generation completes anyway.
func TestGroupMetadataWriteFailureDoesNotFailRebalance(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newMemStore(1)
		var logged bytes.Buffer
		c := newTestCoordinator(t, store, newMemTopics(), func(o *Options) {
			o.Logger = slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelWarn}))
		})
		defer c.Close()
		a, ach := newRaw(t, c, joinReq("g", ""))
		a.joined(mustRecvAfter(t, ach))
		store.setFail(errors.New("disk on fire"))
		o := mustRecvAfter(t, a.sync([]SyncGroupAssignment{assign(a.id, TopicPartition{"t", 0})}))
		if o.err != nil {
			t.Fatalf("sync with a failing store: %v", o.err)
		}
		if tps, err := decodeAssignment(o.resp.Assignment); err != nil || len(tps) != 1 {
			t.Fatalf("assignment %v, %v", tps, err)
		}
		if err := a.heartbeat(); err != nil {
			t.Fatalf("the group is not Stable: %v", err)
		}
		if st := c.Stats(); st.MetadataErrors != 1 || st.MetadataWrites != 0 {
			t.Fatalf("stats %+v", st)
		}
		if !strings.Contains(logged.String(), "disk on fire") {
			t.Fatalf("the failure was not logged: %s", logged.String())
		}
		store.setFail(nil)
	})
}

// TestGroupMetadataWriteFailureBindsWithLoadMembers: with LoadMembers the
// next coordinator takes back the members of the last record written, so
// a generation whose record fails must not take effect: every member's
// sync gets COORDINATOR_NOT_AVAILABLE and no assignment, and the group
// rebalances. Once the store takes writes again the rejoin completes a
// generation whose record is written, and a coordinator loading the
// partition takes that generation's member back.
func TestGroupMetadataWriteFailureBindsWithLoadMembers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store, topics := newMemStore(1), newMemTopics()
		loadMembers := func(o *Options) { o.LoadMembers = true }
		c := newTestCoordinator(t, store, topics, loadMembers)
		defer c.Close()
		a, ach := newRaw(t, c, joinReq("g", ""))
		a.joined(mustRecvAfter(t, ach))
		store.setFail(errors.New("not the leader any more"))
		o := mustRecvAfter(t, a.sync([]SyncGroupAssignment{assign(a.id, TopicPartition{"t", 0})}))
		if !errors.Is(o.err, ErrCoordinatorNotAvailable) || o.resp != nil {
			t.Fatalf("sync whose generation's record failed: %+v, %v; want COORDINATOR_NOT_AVAILABLE and no assignment", o.resp, o.err)
		}
		if err := a.heartbeat(); !errors.Is(err, ErrRebalanceInProgress) {
			t.Fatalf("heartbeat after the failed record: %v, want REBALANCE_IN_PROGRESS", err)
		}
		store.setFail(nil)
		a.joined(mustRecvAfter(t, a.join()))
		o = mustRecvAfter(t, a.sync([]SyncGroupAssignment{assign(a.id, TopicPartition{"t", 0})}))
		if o.err != nil {
			t.Fatalf("sync once the store takes writes: %v", o.err)
		}
		d := newTestCoordinator(t, store, topics, loadMembers)
		defer d.Close()
		desc, err := d.DescribeGroups(context.Background(), []string{"g"})
		if err != nil || desc[0].State != StateStable || len(desc[0].Members) != 1 || desc[0].Members[0].MemberID != a.id {
			t.Fatalf("a coordinator loading the partition: %+v %v; want member %s back, Stable", desc, err, a.id)
		}
	})
}

// TestGroupMetadataTombstoneOnDelete: deleting a group writes a tombstone
// for its metadata; a new coordinator does not know the group.
func TestGroupMetadataTombstoneOnDelete(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newMemStore(2)
		c := newTestCoordinator(t, store, newMemTopics(), nil)
		a, ach := newRaw(t, c, joinReq("g", ""))
		a.joined(mustRecvAfter(t, ach))
		mustRecvAfter(t, a.sync(nil))
		if _, err := c.LeaveGroup(context.Background(), &LeaveGroupRequest{Group: "g", Members: []LeaveGroupMember{{MemberID: a.id}}}); err != nil {
			t.Fatal(err)
		}
		if res, err := c.DeleteGroups(context.Background(), []string{"g"}); err != nil || res[0].Err != nil {
			t.Fatalf("delete: %+v, %v", res, err)
		}
		if r := lastGroupRecord(t, store, "g"); !r.tombstone {
			t.Fatalf("last record after delete: %+v", r)
		}
		c.Close()
		c2 := newTestCoordinator(t, store, newMemTopics(), nil)
		defer c2.Close()
		if l, err := c2.ListGroups(context.Background()); err != nil || len(l) != 0 {
			t.Fatalf("groups after reload: %+v, %v", l, err)
		}
	})
}

// TestEmptyGroupKeepsProtocolType: a consumer group whose last member left
// is still a consumer group, as in Kafka: DescribeGroups and ListGroups
// give its protocol type, its Empty metadata record carries it, and so
// does the group a new coordinator loads from the record. The Java
// AdminClient takes a group without one for a simple consumer group
// (ConsumerGroupDescription.isSimpleConsumerGroup); kafkatest's Java test
// found it.
func TestEmptyGroupKeepsProtocolType(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newMemStore(2)
		c := newTestCoordinator(t, store, newMemTopics(), nil)
		a, ach := newRaw(t, c, joinReq("g", ""))
		a.joined(mustRecvAfter(t, ach))
		mustRecvAfter(t, a.sync(nil))
		if _, err := c.LeaveGroup(context.Background(), &LeaveGroupRequest{Group: "g", Members: []LeaveGroupMember{{MemberID: a.id}}}); err != nil {
			t.Fatal(err)
		}
		check := func(c *Coordinator, when string) {
			t.Helper()
			d, err := c.DescribeGroups(context.Background(), []string{"g"})
			if err != nil || len(d) != 1 || d[0].State != StateEmpty || d[0].ProtocolType != ProtocolTypeConsumer || d[0].Protocol != "" {
				t.Fatalf("%s: described %+v, %v; want Empty, protocol type consumer, no protocol", when, d, err)
			}
			l, err := c.ListGroups(context.Background())
			if err != nil || len(l) != 1 || l[0].ProtocolType != ProtocolTypeConsumer {
				t.Fatalf("%s: listed %+v, %v", when, l, err)
			}
		}
		check(c, "after the last member left")
		if r := lastGroupRecord(t, store, "g"); r.tombstone || len(r.value.Members) != 0 || r.value.ProtocolType != ProtocolTypeConsumer {
			t.Fatalf("the Empty group's record %+v", r)
		}
		c.Close()
		c2 := newTestCoordinator(t, store, newMemTopics(), nil)
		defer c2.Close()
		check(c2, "after a reload")
	})
}

func TestDecodeGroupRecord(t *testing.T) {
	v := kmsg.GroupMetadataValue{Version: 3, ProtocolType: "consumer", Generation: 7, Protocol: kmsg.StringPtr("range"),
		Leader: kmsg.StringPtr("m1"), CurrentStateTimestamp: 99,
		Members: []kmsg.GroupMetadataValueMember{{MemberID: "m1", InstanceID: kmsg.StringPtr("i1"), ClientID: "c", ClientHost: "/h",
			RebalanceTimeoutMillis: 5, SessionTimeoutMillis: 6, Subscription: []byte{1}, Assignment: encodeAssignment([]TopicPartition{{"t", 2}})}}}
	key := appendGroupKey(nil, "grp")
	if _, kind, err := decodeOffsetRecord(key, nil, true); err != nil || kind != kindGroupMetadata {
		t.Fatalf("kind %v, %v", kind, err)
	}
	r, err := decodeGroupRecord(key, v.AppendTo(nil), false)
	if err != nil || r.group != "grp" || r.tombstone || r.value.Generation != 7 || *r.value.Members[0].InstanceID != "i1" {
		t.Fatalf("decoded %+v, %v", r, err)
	}
	v4 := v
	v4.Version = 4
	if r, err := decodeGroupRecord(key, v4.AppendTo(nil), false); err != nil || len(r.value.Members) != 1 {
		t.Fatalf("flexible v4: %+v, %v", r, err)
	}
	if r, err := decodeGroupRecord(key, nil, true); err != nil || !r.tombstone {
		t.Fatalf("tombstone: %+v, %v", r, err)
	}
	bad := map[string][2][]byte{
		"offset key":          {appendOffsetKey(nil, "g", TopicPartition{"t", 0}), v.AppendTo(nil)},
		"truncated key":       {key[:3], v.AppendTo(nil)},
		"truncated value":     {key, v.AppendTo(nil)[:20]},
		"short value":         {key, {0}},
		"unknown version":     {key, {0, 9, 0, 0}},
		"negative version":    {key, {0xff, 0xff}},
		"negative generation": {key, (&kmsg.GroupMetadataValue{Version: 3, Generation: -2}).AppendTo(nil)},
	}
	for name, kv := range bad {
		if r, err := decodeGroupRecord(kv[0], kv[1], false); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %+v, %v; want ErrCorrupt", name, r, err)
		}
	}
}

// FuzzDecodeGroupRecord: arbitrary value bytes under a group metadata key
// never panic the decoder; what it accepts re-encodes to a record that
// decodes the same.
func FuzzDecodeGroupRecord(f *testing.F) {
	v := kmsg.GroupMetadataValue{Version: 3, ProtocolType: "consumer", Generation: 2, Protocol: kmsg.StringPtr("range"),
		Members: []kmsg.GroupMetadataValueMember{{MemberID: "m", Assignment: []byte{0, 1}}}}
	f.Add("g", v.AppendTo(nil), false)
	f.Add("g", []byte(nil), true)
	f.Add("", []byte{0, 4, 0}, false)
	f.Add("g", []byte{0, 3, 0, 0}, false)
	f.Fuzz(func(t *testing.T, groupID string, value []byte, null bool) {
		key := appendGroupKey(nil, groupID)
		r, err := decodeGroupRecord(key, value, null)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error outside ErrCorrupt: %v", err)
			}
			return
		}
		if r.group != groupID || r.tombstone != null {
			t.Fatalf("decoded %+v from group %q null %v", r, groupID, null)
		}
		if null {
			return
		}
		enc := r.value.AppendTo(nil)
		r2, err := decodeGroupRecord(key, enc, false)
		if err != nil || !bytes.Equal(r2.value.AppendTo(nil), enc) {
			t.Fatalf("re-encoded %+v decodes to %+v, %v", r.value, r2.value, err)
		}
		for _, m := range r.value.Members {
			_, _ = decodeAssignment(m.Assignment) // must not panic either
		}
	})
}

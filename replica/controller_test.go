package replica

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/foliolog/folio/errs"
	"github.com/foliolog/folio/topic"
	"github.com/twmb/franz-go/pkg/kerr"
)

// TestMemSessions: a lapsed session fences its broker out of the ISRs and
// hands its leaderships to the first live in-sync replica in a new
// epoch; with no live in-sync replica the partition stays leaderless
// unless Unclean, when the first live replica leads alone, recovering
// until it says Recovered. A heartbeat under an old incarnation is
// refused.
func TestMemSessions(t *testing.T) {
	m := NewMem()
	t0 := time.Unix(1000, 0)
	for id := int32(1); id <= 3; id++ {
		m.Register(id, int64(id)*10)
		if err := m.Heartbeat(id, int64(id)*10, t0); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.Heartbeat(2, 1, t0); !errors.Is(err, ErrStaleIncarnation) {
		t.Fatalf("heartbeat under a stale incarnation: %v", err)
	}
	tp := TopicPartition{"t", 0}
	if _, err := m.Create(tp, 1, 2, 3); err != nil {
		t.Fatal(err)
	}
	const timeout = time.Second
	if es := m.ExpireSessions(t0.Add(timeout), timeout); len(es) != 0 {
		t.Fatalf("elections with every session live: %+v", es)
	}
	// Brokers 2 and 3 heartbeat, 1 does not.
	t1 := t0.Add(timeout + time.Millisecond)
	_ = m.Heartbeat(2, 20, t1)
	_ = m.Heartbeat(3, 30, t1)
	es := m.ExpireSessions(t1, timeout)
	st, _ := m.Partition(t.Context(), tp)
	if len(es) != 1 || es[0].Leader != 2 || es[0].Unclean || es[0].LeaderEpoch != 1 ||
		st.Leader != 2 || st.LeaderEpoch != 1 || st.InISR(1) || len(st.ISR) != 2 || st.Recovering || m.Alive(1) {
		t.Fatalf("after broker 1's session lapsed: %+v, state %+v", es, st)
	}

	// 3 leaves the ISR; then the leader's session ends: no one eligible.
	if _, err := m.Fence(tp, 3); err != nil {
		t.Fatal(err)
	}
	es = m.EndSession(2)
	st, _ = m.Partition(t.Context(), tp)
	if len(es) != 1 || es[0].Leader != -1 || st.Leader != -1 || st.LeaderEpoch != 2 || !st.InISR(2) {
		t.Fatalf("with no live in-sync replica: %+v, state %+v", es, st)
	}
	if es := m.ExpireSessions(t1, timeout); len(es) != 0 {
		t.Fatalf("a second pass elected %+v with unclean election off", es)
	}

	m.SetUnclean(true)
	es = m.ExpireSessions(t1, timeout)
	st, _ = m.Partition(t.Context(), tp)
	if len(es) != 1 || es[0].Leader != 3 || !es[0].Unclean || st.Leader != 3 || st.LeaderEpoch != 3 ||
		len(st.ISR) != 1 || !st.InISR(3) || !st.Recovering {
		t.Fatalf("unclean election: %+v, state %+v", es, st)
	}
	if m.Recovered(tp, 3, 2) {
		t.Fatal("Recovered under an old epoch")
	}
	if !m.Recovered(tp, 3, 3) {
		t.Fatal("Recovered refused")
	}
	if st, _ = m.Partition(t.Context(), tp); st.Recovering {
		t.Fatalf("still recovering: %+v", st)
	}
}

// TestMemTopicUnclean: a topic's unclean.leader.election.enable, set at
// creation or by AlterTopicConfig, allows the unclean election of its
// partitions only.
func TestMemTopicUnclean(t *testing.T) {
	m := NewMem()
	t0 := time.Unix(1000, 0)
	for id := int32(1); id <= 2; id++ {
		m.Register(id, 1)
		_ = m.Heartbeat(id, 1, t0)
	}
	for _, name := range []string{"a", "b"} {
		rec := TopicRecord{Name: name, Config: topic.Config{Partitions: 1}}
		if err := m.CreateTopic(rec, [][]int32{{1, 2}}); err != nil {
			t.Fatal(err)
		}
		if _, err := m.Fence(TopicPartition{name, 0}, 2); err != nil {
			t.Fatal(err)
		}
	}
	if !m.AlterTopicConfig("b", topic.Config{UncleanLeaderElection: true}) || m.AlterTopicConfig("c", topic.Config{}) {
		t.Fatal("AlterTopicConfig: wrong report")
	}
	if rec, _ := m.Topic("b"); rec.Config.Partitions != 1 {
		t.Fatalf("AlterTopicConfig lost the partition count: %+v", rec.Config)
	}
	es := m.EndSession(1)
	if len(es) != 2 || es[0].Topic != "a" || es[0].Leader != -1 || es[1].Topic != "b" || es[1].Leader != 2 || !es[1].Unclean {
		t.Fatalf("elections %+v: want a leaderless, b led by 2 uncleanly", es)
	}
}

// TestMemFencedBrokerIneligibleForISR: once the controller tracks sessions,
// an ISR expansion that adds a broker without a live session (ended or
// lapsed) is refused with ErrIneligibleReplica until that broker
// heartbeats again (KIP-841); a Mem whose brokers never heartbeat tracks no
// sessions and admits any current incarnation.
func TestMemFencedBrokerIneligibleForISR(t *testing.T) {
	ctx := t.Context()
	tp := TopicPartition{"t", 0}
	t0 := time.Unix(1000, 0)
	m := NewMem()
	for id := int32(1); id <= 3; id++ {
		m.Register(id, int64(id)*10)
		if err := m.Heartbeat(id, int64(id)*10, t0); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := m.Create(tp, 1, 2, 3); err != nil {
		t.Fatal(err)
	}
	st, err := m.Fence(tp, 3)
	if err != nil {
		t.Fatal(err)
	}
	m.EndSession(3)
	grow := func(st State) ISRChange {
		return ISRChange{Leader: st.Leader, LeaderEpoch: st.LeaderEpoch, Version: st.Version,
			ISR: append(slices.Clone(st.ISR), Member{ID: 3, Incarnation: 30})}
	}
	got, err := m.AlterISR(ctx, tp, grow(st))
	if !errors.Is(err, ErrIneligibleReplica) || got.InISR(3) {
		t.Fatalf("adding broker 3 without a session: %+v, %v; want ErrIneligibleReplica", got, err)
	}
	if code := errs.Code(err); code != kerr.IneligibleReplica.Code {
		t.Fatalf("Kafka code %d, want INELIGIBLE_REPLICA", code)
	}
	if err := m.Heartbeat(3, 30, t0.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if got, err = m.AlterISR(ctx, tp, grow(got)); err != nil || !got.InISR(3) {
		t.Fatalf("adding broker 3 after its heartbeat: %+v, %v", got, err)
	}

	// No sessions tracked: eligibility is the incarnation alone.
	m = NewMem()
	for id := int32(1); id <= 3; id++ {
		m.Register(id, int64(id)*10)
	}
	if _, err := m.Create(tp, 1, 2, 3); err != nil {
		t.Fatal(err)
	}
	if st, err = m.Fence(tp, 3); err != nil {
		t.Fatal(err)
	}
	if got, err = m.AlterISR(ctx, tp, grow(st)); err != nil || !got.InISR(3) {
		t.Fatalf("adding broker 3 where no sessions are tracked: %+v, %v", got, err)
	}
}

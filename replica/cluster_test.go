package replica

import (
	"context"
	"errors"
	"testing"

	"github.com/foliolog/folio/topic"
)

// TestMemCreateTopicAndChanges: a replicated topic is created with its
// partitions' states in one change; every change closes the channel
// Changes handed out and raises the version, so a broker waiting on it
// learns of an election without polling.
func TestMemCreateTopicAndChanges(t *testing.T) {
	m := NewMem()
	m.Register(1, 11)
	m.Register(2, 22)
	v0, next := m.Changes()
	rec := TopicRecord{Name: "orders", Config: topic.Config{Partitions: 2}}
	if err := m.CreateTopic(rec, [][]int32{{1, 2}, {2, 1}}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-next:
	default:
		t.Fatal("creating a topic did not signal a change")
	}
	v1, next := m.Changes()
	if v1 <= v0 {
		t.Fatalf("version %d after %d", v1, v0)
	}
	st, err := m.Partition(context.Background(), TopicPartition{"orders", 1})
	if err != nil || st.Leader != 2 || len(st.ISR) != 2 || st.ISR[0] != (Member{2, 22}) {
		t.Fatalf("partition 1: %+v, %v", st, err)
	}
	if got, ok := m.Topic("orders"); !ok || got.Config.Partitions != 2 || len(m.Topics()) != 1 {
		t.Fatalf("topic: %+v %v, topics %v", got, ok, m.Topics())
	}
	if err := m.CreateTopic(rec, [][]int32{{1}, {1}}); !errors.Is(err, topic.ErrExists) {
		t.Fatalf("second create: %v", err)
	}
	if err := m.CreateTopic(TopicRecord{Name: "x", Config: topic.Config{Partitions: 1}}, [][]int32{{}}); err == nil {
		t.Fatal("a partition without replicas was created")
	}
	if _, _, err := m.Elect(TopicPartition{"orders", 0}, 2); err != nil {
		t.Fatal(err)
	}
	select {
	case <-next:
	default:
		t.Fatal("an election did not signal a change")
	}
}

// TestMemAddPartitionsAndDeleteTopic: a topic grows by whole partitions,
// numbered on from its count and assigned as at creation, in one change;
// deleting it removes it and its partitions' states in one change.
func TestMemAddPartitionsAndDeleteTopic(t *testing.T) {
	m := NewMem()
	m.Register(1, 11)
	m.Register(2, 22)
	if err := m.CreateTopic(TopicRecord{Name: "orders", Config: topic.Config{Partitions: 1}}, [][]int32{{1, 2}}); err != nil {
		t.Fatal(err)
	}
	v0, next := m.Changes()
	rec, err := m.AddPartitions("orders", [][]int32{{2, 1}, {1, 2}})
	if err != nil || rec.Config.Partitions != 3 {
		t.Fatalf("AddPartitions: %+v, %v", rec, err)
	}
	if v, _ := m.Changes(); v <= v0 {
		t.Fatal("adding partitions raised no version")
	}
	select {
	case <-next:
	default:
		t.Fatal("adding partitions did not signal a change")
	}
	st, err := m.Partition(context.Background(), TopicPartition{"orders", 1})
	if err != nil || st.Leader != 2 || len(st.ISR) != 2 || st.ISR[0] != (Member{2, 22}) {
		t.Fatalf("new partition 1: %+v, %v", st, err)
	}
	if got, _ := m.Topic("orders"); got.Config.Partitions != 3 {
		t.Fatalf("topic after growing: %+v", got)
	}
	if _, err := m.AddPartitions("orders", [][]int32{{}}); err == nil {
		t.Fatal("a new partition without replicas was added")
	}
	if _, err := m.AddPartitions("orders", nil); !errors.Is(err, topic.ErrInvalidPartitions) {
		t.Fatalf("adding no partition: %v", err)
	}
	if _, err := m.AddPartitions("nope", [][]int32{{1}}); !errors.Is(err, topic.ErrNotFound) {
		t.Fatalf("growing a missing topic: %v", err)
	}
	if got, _ := m.Topic("orders"); got.Config.Partitions != 3 {
		t.Fatalf("a refused growth changed the topic: %+v", got)
	}

	_, next = m.Changes()
	if !m.DeleteTopic("orders") {
		t.Fatal("DeleteTopic found no topic")
	}
	select {
	case <-next:
	default:
		t.Fatal("deleting a topic did not signal a change")
	}
	if _, ok := m.Topic("orders"); ok || len(m.Topics()) != 0 {
		t.Fatal("the deleted topic is still listed")
	}
	for p := range int32(3) {
		if _, err := m.Partition(context.Background(), TopicPartition{"orders", p}); err == nil {
			t.Fatalf("partition %d of the deleted topic still has a state", p)
		}
	}
	if m.DeleteTopic("orders") {
		t.Fatal("a second DeleteTopic found the topic")
	}
}

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

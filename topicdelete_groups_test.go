package folio

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/foliolog/folio/group"
)

// commitT commits offset for group g in partition 0 of topic t.
func commitT(t *testing.T, b *Broker, g, topicName string, offset int64) {
	t.Helper()
	c, err := b.GroupCoordinator()
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.OffsetCommit(context.Background(), &group.OffsetCommitRequest{Group: g, GenerationID: -1,
		Topics: []group.OffsetCommitTopic{{Topic: topicName, Partitions: []group.OffsetCommitPartition{{Partition: 0, Offset: offset, LeaderEpoch: -1}}}}})
	if err == nil {
		err = resp.Err()
	}
	if err != nil {
		t.Fatal(err)
	}
}

// committedIn returns group g's committed offset in partition 0 of topic
// t, -1 for none.
func committedIn(t *testing.T, b *Broker, g, topicName string) int64 {
	t.Helper()
	c, err := b.GroupCoordinator()
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.OffsetFetch(context.Background(), &group.OffsetFetchRequest{Group: g, Topics: []group.OffsetFetchTopic{{Topic: topicName, Partitions: []int32{0}}}})
	if err != nil {
		t.Fatal(err)
	}
	return resp.Topics[0].Partitions[0].Offset
}

// TestDeleteTopicDeletesGroupOffsets: deleting a topic deletes its groups'
// committed offsets, durably, so that a topic created again under the name
// starts without them: a group reads its first records, nothing warns of
// records lost, and other topics' offsets stay.
func TestDeleteTopicDeletesGroupOffsets(t *testing.T) {
	for _, crash := range []bool{false, true} {
		name := map[bool]string{false: "tombstones", true: "tombstones lost"}[crash]
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			b := openT(t, dir, nil)
			createTopicT(t, b, "t", TopicConfig{})
			createTopicT(t, b, "other", TopicConfig{})
			p := producerT(t, b, nil)
			produceN(t, p, "t", "old", 10)
			produceN(t, p, "other", "o", 3)
			commitT(t, b, "g", "t", 8)
			commitT(t, b, "g", "other", 2)
			if crash {
				// As if the process died between the catalog's delete and
				// the tombstones: the coordinator hears nothing.
				b.groups.loaded.Store(nil)
			}
			if err := b.DeleteTopic("t"); err != nil {
				t.Fatal(err)
			}
			if !crash {
				if off := committedIn(t, b, "g", "t"); off != -1 {
					t.Fatalf("after DeleteTopic, g's offset in t is %d, want none", off)
				}
			}
			if err := b.Close(); err != nil {
				t.Fatal(err)
			}

			var warned errWarnings
			b, err := Open(dir, &Options{Logger: slog.New(&warned)})
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			if off := committedIn(t, b, "g", "t"); off != -1 {
				t.Fatalf("after reopening, g's offset in the deleted t is %d, want none", off)
			}
			if off := committedIn(t, b, "g", "other"); off != 2 {
				t.Fatalf("g's offset in other is %d, want 2", off)
			}
			createTopicT(t, b, "t", TopicConfig{})
			p = producerT(t, b, nil)
			produceN(t, p, "t", "new", 3)
			if off := committedIn(t, b, "g", "t"); off != -1 {
				t.Fatalf("the new t inherits g's offset %d", off)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			gc, err := b.JoinGroup(ctx, "g", []string{"t"}, &GroupOptions{Reset: group.ResetEarliest})
			if err != nil {
				t.Fatal(err)
			}
			var got []Record
			for len(got) < 3 {
				recs, err := gc.Poll(ctx)
				if err != nil {
					t.Fatalf("Poll after %d records: %v", len(got), err)
				}
				got = append(got, recs...)
			}
			if got[0].Offset != 0 || string(got[0].Value) != string(value("new", 0)) {
				t.Fatalf("g starts the new t at offset %d (%q), want its first record", got[0].Offset, got[0].Value)
			}
			if err := gc.Close(); err != nil {
				t.Fatal(err)
			}
			if len(warned.msgs) != 0 {
				t.Fatalf("warnings: %v", warned.msgs)
			}
		})
	}
}

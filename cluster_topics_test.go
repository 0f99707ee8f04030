package folio

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/foliolog/folio/replica"
	"github.com/foliolog/folio/topic"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestClusterTopicChangesReachEveryBroker: a configuration change, new
// partitions and a deletion of a replicated topic, each made through one
// broker, reach every broker's replica; the new partitions are led and
// replicated like the first, a deleted topic's directories go from every
// broker, and a topic created again under the name starts empty under a
// new id.
func TestClusterTopicChangesReachEveryBroker(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tc := newTestCluster(t, 3, ClusterOptions{MinInsyncReplicas: 2})
	const name = "changing"
	if _, err := tc.brokers[1].CreateTopic(name, TopicConfig{Partitions: 1, Flush: FlushNone}); err != nil {
		t.Fatal(err)
	}
	prod := clusterClient(t, tc.book[2], kgo.DefaultProduceTopic(name), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for i := range 5 {
		if err := prod.ProduceSync(ctx, &kgo.Record{Value: []byte(fmt.Sprint("v", i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	everyBroker := func(check func(id int32, b *Broker) error) {
		t.Helper()
		for id, b := range tc.brokers {
			tc.syncedNow(ctx, id)
			if err := check(id, b); err != nil {
				t.Fatalf("broker %d: %v", id, err)
			}
		}
	}

	// A configuration change through broker 3 reaches all three.
	if _, err := tc.brokers[3].AlterTopicConfig(name, false, func(c *TopicConfig) error {
		c.MaxMessageBytes = 12345
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	everyBroker(func(id int32, b *Broker) error {
		ti, err := b.DescribeTopic(name)
		if err != nil {
			return err
		}
		if ti.Config.MaxMessageBytes != 12345 {
			return fmt.Errorf("max.message.bytes %d, want 12345", ti.Config.MaxMessageBytes)
		}
		return nil
	})
	if rec, _ := tc.meta.Topic(name); rec.Config.MaxMessageBytes != 12345 {
		t.Fatalf("the metadata holds %+v", rec.Config)
	}

	// Two more partitions through broker 2: every broker opens them, each
	// has three replicas and a leader, and takes acks=all produce.
	if _, err := tc.brokers[2].AddPartitions(name, 3); err != nil {
		t.Fatal(err)
	}
	everyBroker(func(id int32, b *Broker) error {
		ti, err := b.DescribeTopic(name)
		if err != nil {
			return err
		}
		if len(ti.Partitions) != 3 || ti.Config.Partitions != 3 {
			return fmt.Errorf("%d partitions (config %d), want 3", len(ti.Partitions), ti.Config.Partitions)
		}
		return nil
	})
	prod = clusterClient(t, tc.book[1], kgo.DefaultProduceTopic(name), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(kgo.ManualPartitioner())) // metadata of three partitions
	for p := int32(1); p < 3; p++ {
		tc.waitState(ctx, replica.TopicPartition{Topic: name, Partition: p}, func(s replica.State) bool {
			return len(s.Replicas) == 3 && len(s.ISR) == 3
		})
		if err := prod.ProduceSync(ctx, &kgo.Record{Partition: p, Value: []byte("new")}).FirstErr(); err != nil {
			t.Fatalf("producing to new partition %d: %v", p, err)
		}
	}
	if _, err := tc.brokers[1].AddPartitions(name, 2); !errors.Is(err, topic.ErrInvalidPartitions) {
		t.Fatalf("shrinking a replicated topic: %v", err)
	}

	// Deleted through broker 1: gone from every broker and its directory.
	old, err := tc.brokers[1].DescribeTopic(name)
	if err != nil {
		t.Fatal(err)
	}
	if err := tc.brokers[1].DeleteTopic(name); err != nil {
		t.Fatal(err)
	}
	everyBroker(func(id int32, b *Broker) error {
		if _, err := b.DescribeTopic(name); !errors.Is(err, ErrUnknownTopic) {
			return fmt.Errorf("the deleted topic: %v", err)
		}
		left, _ := filepath.Glob(filepath.Join(tc.dirs[id], name+"-*"))
		if len(left) != 0 {
			return fmt.Errorf("directories of the deleted topic: %v", left)
		}
		return nil
	})
	if _, ok := tc.meta.Topic(name); ok {
		t.Fatal("the metadata still holds the deleted topic")
	}
	if err := tc.brokers[1].DeleteTopic(name); !errors.Is(err, ErrUnknownTopic) {
		t.Fatalf("deleting it again: %v", err)
	}

	// Created again: a new id, empty on every broker.
	if _, err := tc.brokers[3].CreateTopic(name, TopicConfig{Partitions: 1, Flush: FlushNone}); err != nil {
		t.Fatal(err)
	}
	everyBroker(func(id int32, b *Broker) error {
		ti, err := b.DescribeTopic(name)
		if err != nil {
			return err
		}
		if ti.ID == old.ID {
			return errors.New("the topic created again has the deleted one's id")
		}
		if hw := ti.Partitions[0].HighWatermark; hw != 0 {
			return fmt.Errorf("the topic created again holds records up to %d", hw)
		}
		return nil
	})
	if _, err := os.Stat(tc.dirs[1]); err != nil {
		t.Fatal(err)
	}
}

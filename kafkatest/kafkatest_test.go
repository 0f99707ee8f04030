package kafkatest

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

func TestNewSurvivesMalformedFrameAndPersists(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	t.Run("first", func(t *testing.T) {
		c := New(t, &Options{Dir: dir, Partitions: 3})
		// Garbage on one connection closes that connection only.
		nc, err := net.Dial("tcp", c.Addr())
		if err != nil {
			t.Fatal(err)
		}
		nc.Write([]byte{0x7f, 0xff, 0xff, 0xff, 1, 2, 3})
		nc.Close()
		cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.AllowAutoTopicCreation(), kgo.DefaultProduceTopic("kept"))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("survives a restart")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		in, err := c.Broker.DescribeTopic("kept")
		if err != nil || len(in.Partitions) != 3 {
			t.Fatalf("auto-created topic: %+v %v", in, err)
		}
	})
	// A new cluster on the same directory has the record.
	c := New(t, &Options{Dir: dir})
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addr()), kgo.ConsumeTopics("kept"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	fs := cl.PollFetches(ctx)
	if err := fs.Err0(); err != nil {
		t.Fatal(err)
	}
	if recs := fs.Records(); len(recs) != 1 || string(recs[0].Value) != "survives a restart" {
		t.Fatalf("after the restart: %v", recs)
	}
}

// TestEmptyGroupStaysConsumerGroup: after its last member left, and after
// a restart, a consumer group is described and listed over the wire with
// protocol type "consumer", as Kafka does; the Java AdminClient reports a
// group without one as a simple consumer group (found by java_test.go,
// whose own test skips where Maven Central is out of reach).
func TestEmptyGroupStaysConsumerGroup(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	check := func(t *testing.T, c *Cluster) {
		t.Helper()
		cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addr()))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		adm := kadm.NewClient(cl)
		ds, err := adm.DescribeGroups(ctx, "g")
		if err != nil {
			t.Fatal(err)
		}
		if d := ds["g"]; d.Err != nil || d.State != "Empty" || d.ProtocolType != "consumer" {
			t.Fatalf("described %+v, want Empty with protocol type consumer", d)
		}
		ls, err := adm.ListGroups(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if l, ok := ls["g"]; !ok || l.ProtocolType != "consumer" {
			t.Fatalf("listed %+v, want g with protocol type consumer", ls)
		}
	}
	t.Run("left", func(t *testing.T) {
		c := New(t, &Options{Dir: dir, Topics: []string{"t"}})
		cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addr()), kgo.ConsumerGroup("g"), kgo.ConsumeTopics("t"),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DefaultProduceTopic("t"), kgo.DisableAutoCommit())
		if err != nil {
			t.Fatal(err)
		}
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil || len(fs.Records()) != 1 {
			t.Fatalf("poll: %v, %d records", err, len(fs.Records()))
		}
		if err := cl.CommitUncommittedOffsets(ctx); err != nil {
			t.Fatal(err)
		}
		cl.Close() // leaves the group
		check(t, c)
	})
	t.Run("restarted", func(t *testing.T) { check(t, New(t, &Options{Dir: dir})) })
}

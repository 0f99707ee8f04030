package kafkatest

import (
	"context"
	"net"
	"testing"
	"time"

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

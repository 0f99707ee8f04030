package transport

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/foliolog/folio/topic"
	"github.com/twmb/franz-go/pkg/kgo"
)

func TestKgoProduceConsume(t *testing.T) {
	ts := startServer(t, nil, nil)
	ts.b.mustCreate(t, "t", topic.Config{Partitions: 3})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl := newClient(t, ts.addr, kgo.DefaultProduceTopic("t"))
	const n = 300
	for i := range n {
		cl.Produce(ctx, &kgo.Record{Key: fmt.Appendf(nil, "k%d", i), Value: fmt.Appendf(nil, "v%d", i)}, nil)
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	cons := newClient(t, ts.addr, kgo.ConsumeTopics("t"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	seen := map[string]bool{}
	for len(seen) < n {
		fs := cons.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		fs.EachRecord(func(r *kgo.Record) { seen[string(r.Value)] = true })
	}
}

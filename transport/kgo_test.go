package transport

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/foliolog/folio/readpath"
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

// TestFetchUsesTheReadPath: record bytes of a read.path=sendfile topic go
// out by sendfile (no user-space copy), those of an mmap topic by one
// write from the mapping.
func TestFetchUsesTheReadPath(t *testing.T) {
	ts := startServer(t, nil, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, path := range []string{"sendfile", "mmap"} {
		var cfg topic.Config
		if err := cfg.Set("read.path", path); err != nil {
			t.Fatal(err)
		}
		cfg.Partitions = 1
		ts.b.mustCreate(t, "rp-"+path, cfg)
		cl := newClient(t, ts.addr, kgo.DefaultProduceTopic("rp-"+path), kgo.ProducerBatchCompression(kgo.NoCompression()))
		for range 20 {
			cl.Produce(ctx, &kgo.Record{Value: make([]byte, 4000)}, nil)
		}
		if err := cl.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		before := readpath.ReadCounters()
		cons := newClient(t, ts.addr, kgo.ConsumeTopics("rp-"+path), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		for n := 0; n < 20; {
			fs := cons.PollFetches(ctx)
			if err := fs.Err0(); err != nil {
				t.Fatal(err)
			}
			n += fs.NumRecords()
		}
		after := readpath.ReadCounters()
		sent, copied := after.SendfileBytes-before.SendfileBytes, after.CopiedBytes-before.CopiedBytes
		switch {
		case path == "sendfile" && runtime.GOOS == "linux" && sent < 20*4000:
			t.Fatalf("sendfile topic: %d bytes by sendfile, %d copied", sent, copied)
		case path == "mmap" && (copied < 20*4000 || sent != 0):
			t.Fatalf("mmap topic: %d bytes written from the mapping, %d by sendfile", copied, sent)
		}
		cons.Close()
	}
}

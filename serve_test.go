package folio

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/foliolog/folio/transport"
	"github.com/twmb/franz-go/pkg/kgo"
)

var _ transport.Backend = (*Broker)(nil)

// serveT serves b over loopback for the test and returns the address.
func serveT(t *testing.T, b *Broker) string {
	t.Helper()
	s, err := transport.NewServer(b, nil)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(context.Background(), l) }()
	t.Cleanup(func() {
		if err := s.Shutdown(context.Background()); err != nil {
			t.Error(err)
		}
		if err := <-done; !errors.Is(err, transport.ErrServerClosed) {
			t.Error(err)
		}
	})
	return l.Addr().String()
}

// TestKafkaClientAndInProcessInterchange: what a Kafka client writes over
// the wire the in-process Consumer reads field for field, and what the
// in-process Producer writes a Kafka client reads the same, for every
// read path.
func TestKafkaClientAndInProcessInterchange(t *testing.T) {
	for _, rp := range []string{"mmap", "sendfile"} {
		t.Run(rp, func(t *testing.T) {
			b, err := Open(t.TempDir(), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			var cfg TopicConfig
			if err := cfg.Set("read.path", rp); err != nil {
				t.Fatal(err)
			}
			cfg.Partitions = 1
			for _, name := range []string{"wire", "local"} {
				if _, err := b.CreateTopic(name, cfg); err != nil {
					t.Fatal(err)
				}
			}
			addr := serveT(t, b)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			ts := time.UnixMilli(1_700_000_000_123)
			want := func(i int) (key, value []byte, hdr string) {
				if i%5 == 0 {
					key = nil
				} else {
					key = fmt.Appendf(nil, "key-%d", i)
				}
				value = bytes.Repeat(fmt.Appendf(nil, "%d,", i), i%50)
				if i%7 == 0 {
					value = nil
				}
				return key, value, fmt.Sprintf("h%d", i)
			}
			const n = 120

			// A Kafka client writes; the in-process Consumer reads.
			cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("wire"), kgo.ProducerBatchCompression(kgo.ZstdCompression()))
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			for i := range n {
				k, v, h := want(i)
				cl.Produce(ctx, &kgo.Record{Key: k, Value: v, Timestamp: ts.Add(time.Duration(i) * time.Millisecond), Headers: []kgo.RecordHeader{{Key: h, Value: []byte(h)}}}, nil)
			}
			if err := cl.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			c, err := b.NewConsumer(nil)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if err := c.Assign(Assignment{Topic: "wire", Partition: 0, Start: AtEarliest()}); err != nil {
				t.Fatal(err)
			}
			i := 0
			for r, err := range c.Records(ctx) {
				if err != nil {
					t.Fatal(err)
				}
				k, v, h := want(i)
				if r.Offset != int64(i) || !bytes.Equal(r.Key, k) || (r.Key == nil) != (k == nil) || !bytes.Equal(r.Value, v) || (r.Value == nil) != (v == nil) ||
					!r.Timestamp.Equal(ts.Add(time.Duration(i)*time.Millisecond)) || len(r.Headers) != 1 || r.Headers[0].Key != h || string(r.Headers[0].Value) != h {
					t.Fatalf("record %d read in-process: %+v", i, r)
				}
				if i++; i == n {
					break
				}
			}

			// The in-process Producer writes; a Kafka client reads.
			p, err := b.NewProducer(nil)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			for i := range n {
				k, v, h := want(i)
				if _, _, err := p.Produce(ctx, &Record{Topic: "local", Key: k, Value: v, Timestamp: ts.Add(time.Duration(i) * time.Millisecond), Headers: []Header{{Key: h, Value: []byte(h)}}}); err != nil {
					t.Fatal(err)
				}
			}
			cons, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics("local"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
			if err != nil {
				t.Fatal(err)
			}
			defer cons.Close()
			got := 0
			for got < n {
				fs := cons.PollFetches(ctx)
				if err := fs.Err0(); err != nil {
					t.Fatal(err)
				}
				for _, r := range fs.Records() {
					k, v, h := want(got)
					if r.Offset != int64(got) || !bytes.Equal(r.Key, k) || (r.Key == nil) != (k == nil) || !bytes.Equal(r.Value, v) || (r.Value == nil) != (v == nil) ||
						!r.Timestamp.Equal(ts.Add(time.Duration(got)*time.Millisecond)) || len(r.Headers) != 1 || r.Headers[0].Key != h {
						t.Fatalf("record %d read by kgo: %+v", got, r)
					}
					got++
				}
			}
		})
	}
}

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

// TestFetchCountsDelivered: a Kafka client's fetches count in the
// partition's Delivered counters (Stats' RecordsOut): exactly the records
// from the fetch offset on, the first batch's earlier records left out,
// on both read paths, and the sendfile path still sends without a copy.
func TestFetchCountsDelivered(t *testing.T) {
	ts := startServer(t, nil, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, path := range []string{"sendfile", "mmap"} {
		name := "out-" + path
		var cfg topic.Config
		if err := cfg.Set("read.path", path); err != nil {
			t.Fatal(err)
		}
		cfg.Partitions = 1
		ts.b.mustCreate(t, name, cfg)
		cl := newClient(t, ts.addr, kgo.DefaultProduceTopic(name), kgo.ProducerBatchCompression(kgo.NoCompression()))
		const total, from = 40, 5
		for batch := range 4 { // 4 batches of 10: offset 5 lies inside the first
			for i := range 10 {
				cl.Produce(ctx, &kgo.Record{Value: fmt.Appendf(nil, "v%d-%d", batch, i)}, nil)
			}
			if err := cl.Flush(ctx); err != nil {
				t.Fatal(err)
			}
		}
		p, err := ts.b.Partition(name, 0)
		if err != nil {
			t.Fatal(err)
		}
		if n, _ := p.Out(); n != 0 {
			t.Fatalf("%s: %d records out before any fetch", path, n)
		}
		before := readpath.ReadCounters()
		cons := newClient(t, ts.addr, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{name: {0: kgo.NewOffset().At(from)}}))
		for n := 0; n < total-from; {
			fs := cons.PollFetches(ctx)
			if err := fs.Err0(); err != nil {
				t.Fatal(err)
			}
			n += fs.NumRecords()
		}
		cons.Close()
		after := readpath.ReadCounters()
		if recs, bytes := p.Out(); recs != total-from || bytes <= 0 {
			t.Fatalf("%s: a client fetched %d records from offset %d; counted %d records, %d bytes", path, total-from, from, recs, bytes)
		}
		if path == "sendfile" && runtime.GOOS == "linux" && after.CopiedBytes != before.CopiedBytes {
			t.Fatalf("sendfile topic: counting copied %d bytes", after.CopiedBytes-before.CopiedBytes)
		}
		cl.Close()
	}
}

// bytesHeaders is a batchHeaders over a byte slice.
type bytesHeaders []byte

func (b bytesHeaders) Len() int { return len(b) }
func (b bytesHeaders) ReadAt(p []byte, off int64) (int, error) {
	if off >= int64(len(b)) {
		return 0, fmt.Errorf("past the end")
	}
	n := copy(p, b[off:])
	if n < len(p) {
		return n, fmt.Errorf("short")
	}
	return n, nil
}

// Damaged or cut bytes end the count; they never panic.
func FuzzDeliveredRecords(f *testing.F) {
	f.Add([]byte{}, int64(0))
	f.Add(make([]byte, 100), int64(3))
	f.Fuzz(func(t *testing.T, b []byte, from int64) {
		if n := deliveredRecords(bytesHeaders(b), from); n < 0 {
			t.Fatalf("negative count %d", n)
		}
	})
}

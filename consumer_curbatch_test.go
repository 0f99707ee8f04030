package folio

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"testing"
	"time"

	"github.com/foliolog/folio/record"
	"github.com/foliolog/folio/topic"
)

// produceOneBatch produces n records with values value(tag, i) as one batch
// (a 1 MiB BatchBytes, one Flush) and returns the partition.
func produceOneBatch(t *testing.T, b *Broker, name, tag string, n int) *brokerPart {
	t.Helper()
	// No linger ends the batch before the Flush.
	p := producerT(t, b, &ProducerOptions{BatchBytes: 1 << 20, Linger: time.Hour})
	for i := range n {
		p.ProduceAsync(context.Background(), &Record{Topic: name, Value: value(tag, i)}, func(_ *Record, err error) {
			if err != nil {
				t.Error(err)
			}
		})
	}
	if err := p.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	bp, err := b.lookup(name, 0)
	if err != nil {
		t.Fatal(err)
	}
	return bp
}

// pollCheck polls c once and checks that its records are the next ones
// of tag from offset next on, reading each value before the next Poll (a
// zero-copy value is valid until then); it returns the new next offset.
func pollCheck(t *testing.T, c *Consumer, tag string, next int) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	recs, err := c.Poll(ctx)
	if err != nil {
		t.Fatalf("Poll at %d: %v", next, err)
	}
	for _, r := range recs {
		if r.Offset != int64(next) || !bytes.Equal(r.Value, value(tag, next)) {
			t.Fatalf("record at offset %d = %q, want offset %d %q", r.Offset, r.Value, next, value(tag, next))
		}
		next++
	}
	return next
}

// keptBatchConsumer opens a broker whose topic "t" holds n records of tag
// "v" in one batch, and a consumer of it with opts that has polled once:
// it keeps the batch.
func keptBatchConsumer(t *testing.T, n int, opts *ConsumerOptions) (*Broker, *Consumer) {
	t.Helper()
	b := openT(t, t.TempDir(), nil)
	createTopicT(t, b, "t", TopicConfig{Flush: FlushNone})
	produceOneBatch(t, b, "t", "v", n)
	c := consumerT(t, b, opts)
	if err := c.Assign(Assignment{Topic: "t"}); err != nil {
		t.Fatal(err)
	}
	pollCheck(t, c, "v", 0)
	return b, c
}

// A batch holding many times MaxPollRecords records is read, and its CRC
// checked, once: the Polls after the first take its records from the
// batch they stopped inside, in every read mode.
func TestPollDrainsABatchOverPolls(t *testing.T) {
	const n = 2000
	for _, tc := range []struct {
		name     string
		cfg      TopicConfig
		zeroCopy bool
	}{
		{"copy", TopicConfig{Flush: FlushNone}, false},
		{"zerocopy", TopicConfig{Flush: FlushNone}, true},
		{"zstd-zerocopy", TopicConfig{Flush: FlushNone, Compression: topic.CompressionZstd}, true},
		{"zstd-copy", TopicConfig{Flush: FlushNone, Compression: topic.CompressionZstd}, false},
		{"sendfile", TopicConfig{Flush: FlushNone, ReadPath: ReadSendfile}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := openT(t, t.TempDir(), nil)
			createTopicT(t, b, "t", tc.cfg)
			bp := produceOneBatch(t, b, "t", "v", n)
			c := consumerT(t, b, &ConsumerOptions{MaxPollRecords: 7, ZeroCopy: tc.zeroCopy})
			if err := c.Assign(Assignment{Topic: "t"}); err != nil {
				t.Fatal(err)
			}
			next := pollCheck(t, c, "v", 0)
			_, bytesRead := bp.Out()
			if bytesRead == 0 || len(c.curs) != 1 {
				t.Fatalf("after the first Poll: %d bytes read, %d batches kept", bytesRead, len(c.curs))
			}
			for next < n {
				next = pollCheck(t, c, "v", next)
			}
			if recs, out := bp.Out(); recs != n || out != bytesRead {
				t.Fatalf("delivered %d records from %d bytes read; want %d from %d (the batch read once)", recs, out, n, bytesRead)
			}
			if len(c.curs) != 0 {
				t.Fatalf("a drained batch is still kept")
			}
		})
	}
}

// A Seek, an Assign or a rewind (Records left early) moves the position
// away from where the kept batch goes on: the next Poll reads from the new
// position.
func TestPollKeptBatchAfterSeek(t *testing.T) {
	_, c := keptBatchConsumer(t, 1000, &ConsumerOptions{MaxPollRecords: 10, ZeroCopy: true})
	if err := c.Seek("t", 0, AtOffset(500)); err != nil {
		t.Fatal(err)
	}
	next := pollCheck(t, c, "v", 500)
	// Sought back to the very offset the kept batch goes on from: a new
	// generation, read again, same records.
	if err := c.Seek("t", 0, AtOffset(int64(next))); err != nil {
		t.Fatal(err)
	}
	pollCheck(t, c, "v", next)
	if err := c.Assign(Assignment{Topic: "t", Start: AtOffset(3)}); err != nil {
		t.Fatal(err)
	}
	pollCheck(t, c, "v", 3)
	// Records stopped after 2 of the Poll's 10: the position goes back to
	// the third, behind the kept batch.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got := 0
	for r, err := range c.Records(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		if r.Offset != int64(13+got) {
			t.Fatalf("Records: offset %d, want %d", r.Offset, 13+got)
		}
		if got++; got == 2 {
			break
		}
	}
	pollCheck(t, c, "v", 15)
}

// A truncation may write new records over the bytes a kept batch aliases:
// after one, the next Poll reads the log again, and returns what it holds
// now.
func TestPollKeptBatchAfterTruncation(t *testing.T) {
	const n = 1000
	b := openT(t, t.TempDir(), nil)
	createTopicT(t, b, "t", TopicConfig{Flush: FlushNone})
	bp := produceOneBatch(t, b, "t", "old", n)
	c := consumerT(t, b, &ConsumerOptions{MaxPollRecords: 10, ZeroCopy: true})
	if err := c.Assign(Assignment{Topic: "t"}); err != nil {
		t.Fatal(err)
	}
	pollCheck(t, c, "old", 0)
	if err := bp.TruncateTo(0); err != nil {
		t.Fatal(err)
	}
	produceOneBatch(t, b, "t", "new", n)
	// The same offsets, other bytes at the same file positions.
	next := pollCheck(t, c, "new", 10)
	for next < n {
		next = pollCheck(t, c, "new", next)
	}
}

// The log start moving past the position, and the topic's deletion, are
// told by the Poll after them as without a kept batch.
func TestPollKeptBatchAfterDeletion(t *testing.T) {
	const n = 1000
	b, c := keptBatchConsumer(t, n, &ConsumerOptions{MaxPollRecords: 10, Reset: ResetNone})
	if err := b.DeleteRecordsBefore("t", 0, n); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var oor *OffsetOutOfRangeError
	if _, err := c.Poll(ctx); !errors.As(err, &oor) {
		t.Fatalf("Poll below the log start: %v, want an *OffsetOutOfRangeError", err)
	}

	createTopicT(t, b, "d", TopicConfig{Flush: FlushNone})
	produceOneBatch(t, b, "d", "v", n)
	d := consumerT(t, b, &ConsumerOptions{MaxPollRecords: 10})
	if err := d.Assign(Assignment{Topic: "d"}); err != nil {
		t.Fatal(err)
	}
	pollCheck(t, d, "v", 0)
	if err := b.DeleteTopic("d"); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Poll(ctx); !errors.Is(err, ErrUnknownTopic) {
		t.Fatalf("Poll of a deleted topic: %v, want ErrUnknownTopic", err)
	}
}

// A kept batch of a partition unassigned is dropped by the next Poll, and
// Close drops them all.
func TestPollKeptBatchReleased(t *testing.T) {
	const n = 1000
	b := openT(t, t.TempDir(), nil)
	createTopicT(t, b, "a", TopicConfig{Flush: FlushNone})
	createTopicT(t, b, "b", TopicConfig{Flush: FlushNone})
	produceOneBatch(t, b, "a", "v", n)
	produceOneBatch(t, b, "b", "v", n)
	c := consumerT(t, b, &ConsumerOptions{MaxPollRecords: 10, ZeroCopy: true})
	if err := c.Assign(Assignment{Topic: "a"}); err != nil {
		t.Fatal(err)
	}
	pollCheck(t, c, "v", 0)
	if len(c.curs) != 1 {
		t.Fatalf("%d batches kept, want 1", len(c.curs))
	}
	if err := c.Unassign(TopicPartition{Topic: "a"}); err != nil {
		t.Fatal(err)
	}
	if err := c.Assign(Assignment{Topic: "b"}); err != nil {
		t.Fatal(err)
	}
	pollCheck(t, c, "v", 0)
	if len(c.curs) != 1 || c.curs[0].tp.Topic != "b" {
		t.Fatalf("after unassigning a: %d batches kept", len(c.curs))
	}
	_ = c.Close()
	if len(c.curs)+len(c.held.views)+len(c.held.iters) != 0 {
		t.Fatalf("Close kept %d batches, %d views, %d iterators", len(c.curs), len(c.held.views), len(c.held.iters))
	}
}

// Kept batches holding memory of their own (Sendfile buffers) stay under
// keptBytesMax FetchBytes per consumer; the partitions past it read their
// batch again at the next Poll, and every record still comes once, in
// order.
func TestPollKeptBatchesMemoryCap(t *testing.T) {
	const parts, n = 8, 1000
	b := openT(t, t.TempDir(), nil)
	createTopicT(t, b, "s", TopicConfig{Partitions: parts, Flush: FlushNone, ReadPath: ReadSendfile})
	p := producerT(t, b, &ProducerOptions{BatchBytes: 1 << 20, Linger: time.Hour, ManualPartitioning: true})
	for part := range int32(parts) {
		for i := range n {
			p.ProduceAsync(context.Background(), &Record{Topic: "s", Partition: part, Value: padded(i)}, nil)
		}
	}
	if err := p.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	const fetch = 64 << 10
	c := consumerT(t, b, &ConsumerOptions{MaxPollRecords: 10, FetchBytes: fetch, ZeroCopy: true})
	for part := range int32(parts) {
		if err := c.Assign(Assignment{Topic: "s", Partition: part}); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	next := map[int32]int{}
	maxKept := 0
	for total := 0; total < parts*n; {
		recs, err := c.Poll(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			if want := next[r.Partition]; r.Offset != int64(want) || !bytes.Equal(r.Value, padded(want)) {
				t.Fatalf("partition %d: offset %d %q, want %d", r.Partition, r.Offset, r.Value, want)
			}
			next[r.Partition]++
			total++
		}
		if c.keptBytes > keptBytesMax*fetch {
			t.Fatalf("kept batches hold %d bytes, over %d", c.keptBytes, keptBytesMax*fetch)
		}
		maxKept = max(maxKept, len(c.curs))
	}
	if maxKept == 0 || maxKept == parts {
		t.Fatalf("at most %d of %d partitions kept a batch; want some, not all (the cap)", maxKept, parts)
	}
	_ = c.Close()
	if c.keptBytes != 0 {
		t.Fatalf("Close left %d kept bytes", c.keptBytes)
	}
}

// padded is value("v", i) made 110 bytes long.
func padded(i int) []byte {
	return append(value("v", i), bytes.Repeat([]byte{'x'}, 100)...)
}

// A batch whose CRC holds but whose records section has bytes after its
// last record is damage, also when a Poll's MaxPollRecords ends exactly
// at that last record.
func TestPollTrailingBytesAtMaxPollRecords(t *testing.T) {
	b := openT(t, t.TempDir(), nil)
	createTopicT(t, b, "t", TopicConfig{Flush: FlushNone})
	bld, err := record.NewBuilder(nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := bld.Append(record.Record{Value: value("v", i), Timestamp: 1}); err != nil {
			t.Fatal(err)
		}
	}
	bt, err := bld.Build(nil)
	if err != nil {
		t.Fatal(err)
	}
	bad := append(append([]byte(nil), bt...), 1, 2, 3, 4, 5)
	binary.BigEndian.PutUint32(bad[8:], uint32(len(bad)-12)) // batchLength
	binary.BigEndian.PutUint32(bad[17:], record.Batch(bad).ComputeCRC())
	bp, err := b.lookup("t", 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := bp.Log().Append(record.Batch(bad)); err != nil {
		t.Fatal(err)
	}
	c := consumerT(t, b, &ConsumerOptions{MaxPollRecords: 3})
	if err := c.Assign(Assignment{Topic: "t"}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	recs, err := c.Poll(ctx)
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Poll: %d records, %v; want an error matching ErrCorrupt", len(recs), err)
	}
}

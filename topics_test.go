package folio

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/foliolog/folio/log"
	"github.com/foliolog/folio/record"
	"github.com/foliolog/folio/topic"
)

func TestTopicLifecycle(t *testing.T) {
	dir := t.TempDir()
	b := openT(t, dir, nil)
	cfg := TopicConfig{
		Partitions:      3,
		RetentionBytes:  1 << 20,
		RetentionAge:    time.Hour,
		SegmentBytes:    64 << 10,
		Flush:           FlushNone,
		ReadPath:        ReadSendfile,
		Cleanup:         topic.CleanupCompactDelete,
		TimestampType:   topic.LogAppendTime,
		MaxMessageBytes: 4096,
		Compression:     topic.CompressionLZ4,
	}
	ti := createTopicT(t, b, "orders", cfg)
	if ti.Name != "orders" || len(ti.Partitions) != 3 || ti.Config != cfg.WithDefaults() || ti.Internal {
		t.Fatalf("CreateTopic returned %+v", ti)
	}
	createTopicT(t, b, "audit", TopicConfig{})
	if _, err := b.CreateTopic("orders", TopicConfig{}); !errors.Is(err, ErrTopicExists) {
		t.Fatalf("duplicate create: %v, want ErrTopicExists", err)
	}
	list, err := b.Topics()
	if err != nil || len(list) != 2 || list[0].Name != "audit" || list[1].Name != "orders" {
		t.Fatalf("Topics: %+v, %v", list, err)
	}
	if list[0].Config.Partitions != 1 || list[0].Config.Flush != FlushSync {
		t.Fatalf("defaults not applied: %+v", list[0].Config)
	}

	grown, err := b.AddPartitions("orders", 5)
	if err != nil || len(grown.Partitions) != 5 || grown.Config.Partitions != 5 {
		t.Fatalf("AddPartitions: %+v, %v", grown, err)
	}
	if _, err := b.AddPartitions("orders", 4); !errors.Is(err, topic.ErrInvalidPartitions) {
		t.Fatalf("shrinking: %v, want topic.ErrInvalidPartitions", err)
	}
	if _, err := b.AddPartitions("nope", 4); !errors.Is(err, ErrUnknownTopic) {
		t.Fatalf("AddPartitions on unknown topic: %v", err)
	}
	// A new partition takes records at once. The topic compacts, so a
	// record needs a key.
	p := producerT(t, b, &ProducerOptions{ManualPartitioning: true})
	if part, off, err := p.Produce(context.Background(), &Record{Topic: "orders", Partition: 4, Key: []byte("k"), Value: []byte("x")}); err != nil || part != 4 || off != 0 {
		t.Fatalf("produce to a new partition: %d %d %v", part, off, err)
	}
	if _, _, err := p.Produce(context.Background(), &Record{Topic: "orders", Partition: 4, Value: []byte("x")}); !errors.Is(err, ErrNoKey) {
		t.Fatalf("a record without a key on a compacted topic: %v, want ErrNoKey", err)
	}
	// The producer refused it before it joined a batch: keyed records sent
	// with it asynchronously are written, and the keyless one is not.
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i, key := range [][]byte{[]byte("a"), nil, []byte("b")} {
		wg.Add(1)
		p.ProduceAsync(context.Background(), &Record{Topic: "orders", Partition: 4, Key: key, Value: []byte("y")}, func(_ *Record, err error) {
			errs[i] = err
			wg.Done()
		})
	}
	wg.Wait()
	if errs[0] != nil || !errors.Is(errs[1], ErrNoKey) || errs[2] != nil {
		t.Fatalf("async keyed, keyless, keyed on a compacted topic: %v, want nil, ErrNoKey, nil", errs)
	}
	if l, err := partLog(b, "orders", 4); err != nil || l.LogEndOffset() != 3 {
		t.Fatalf("log end of orders-4 after one keyed, two keyed async and two keyless records: %v", err)
	}
	// A batch from outside holding a keyless record fails whole, as Kafka's
	// broker refuses it.
	if _, err := b.AppendBatch(context.Background(), "orders", 4, keylessBatchT(t)); !errors.Is(err, ErrInvalidBatch) || !errors.Is(err, log.ErrNoKey) {
		t.Fatalf("AppendBatch of a keyless record to a compacted topic: %v, want ErrInvalidBatch (log.ErrNoKey)", err)
	}

	// Everything survives a restart.
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b = openT(t, dir, nil)
	got, err := b.DescribeTopic("orders")
	if err != nil {
		t.Fatal(err)
	}
	want := cfg.WithDefaults()
	want.Partitions = 5
	if got.Config != want || got.ID != ti.ID || got.Partitions[4].LogEndOffset != 3 {
		t.Fatalf("after reopen: %+v, want config %+v and id %v", got, want, ti.ID)
	}

	if err := b.DeleteTopic("orders"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.DescribeTopic("orders"); !errors.Is(err, ErrUnknownTopic) {
		t.Fatalf("describe deleted: %v", err)
	}
	if err := b.DeleteTopic("orders"); !errors.Is(err, ErrUnknownTopic) {
		t.Fatalf("delete twice: %v", err)
	}
	for part := range 5 {
		if _, err := os.Stat(filepath.Join(dir, topic.DirName("orders", int32(part)))); !os.IsNotExist(err) {
			t.Fatalf("partition directory %d still there: %v", part, err)
		}
	}
	// The name is free again, and the new topic is a new incarnation with
	// no records of the old one.
	again := createTopicT(t, b, "orders", TopicConfig{Partitions: 5})
	if again.ID == ti.ID || again.Partitions[4].LogEndOffset != 0 {
		t.Fatalf("re-created topic: %+v", again)
	}
}

func TestTopicNames(t *testing.T) {
	b := openT(t, t.TempDir(), nil)
	for _, name := range []string{"", ".", "..", "a/b", `a\b`, "a b", "ü", strings.Repeat("x", 250), "a\x00"} {
		if _, err := b.CreateTopic(name, TopicConfig{}); !errors.Is(err, ErrInvalidName) {
			t.Errorf("CreateTopic(%q): %v, want ErrInvalidName", name, err)
		}
	}
	if _, err := b.CreateTopic("__consumer_offsets", TopicConfig{}); !errors.Is(err, ErrReservedName) {
		t.Errorf("reserved name: %v, want ErrReservedName", err)
	}
	if err := b.DeleteTopic("__consumer_offsets"); !errors.Is(err, ErrReservedName) {
		t.Errorf("deleting an internal name: %v, want ErrReservedName", err)
	}
	for _, name := range []string{"a", "A.b-c_d", strings.Repeat("x", 249)} {
		if _, err := b.CreateTopic(name, TopicConfig{}); err != nil {
			t.Errorf("CreateTopic(%q): %v", name, err)
		}
	}
	// Folio's own topics are created through the internal path.
	if ti, err := b.createTopic("__folio_test", TopicConfig{}, true); err != nil || !ti.Internal {
		t.Fatalf("internal topic: %+v, %v", ti, err)
	}
	ents, _ := os.ReadDir(b.Dir())
	for _, e := range ents {
		if strings.ContainsAny(e.Name(), `/\`) || strings.HasPrefix(e.Name(), "..") {
			t.Fatalf("unexpected entry %q", e.Name())
		}
	}
}

func TestTopicConfigRefused(t *testing.T) {
	b := openT(t, t.TempDir(), nil)
	cases := map[string]TopicConfig{
		"partitions":     {Partitions: -1},
		"segment bytes":  {SegmentBytes: 100}, // valid for the catalog, too small for a log
		"max message":    {MaxMessageBytes: 10},
		"flush interval": {Flush: FlushInterval(0)},
	}
	for name, cfg := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := b.CreateTopic("t", cfg); !errors.Is(err, ErrInvalidConfig) && !errors.Is(err, topic.ErrInvalidConfig) {
				t.Fatalf("CreateTopic: %v, want an invalid-config error", err)
			}
			if _, err := b.DescribeTopic("t"); !errors.Is(err, ErrUnknownTopic) {
				t.Fatalf("a refused topic exists: %v", err)
			}
		})
	}
}

func TestClosedBroker(t *testing.T) {
	b, err := Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	createTopicT(t, b, "t", TopicConfig{})
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); !errors.Is(err, ErrClosed) {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := b.CreateTopic("u", TopicConfig{}); !errors.Is(err, ErrClosed) {
		t.Fatalf("CreateTopic after Close: %v", err)
	}
	if _, err := b.Topics(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Topics after Close: %v", err)
	}
	if _, err := b.NewProducer(nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("NewProducer after Close: %v", err)
	}
	if _, err := b.NewConsumer(nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("NewConsumer after Close: %v", err)
	}
	if err := b.Checkpoint(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Checkpoint after Close: %v", err)
	}
	ctx := context.Background()
	for name, call := range map[string]func() error{
		"AppendBatch": func() error { _, err := b.AppendBatch(ctx, "t", 0, keylessBatchT(t)); return err },
		"Sync":        func() error { return b.Sync("t", 0) },
		"Compact":     func() error { _, err := b.Compact(ctx, "t", 0); return err },
		"Partition":   func() error { _, err := b.Partition("t", 0); return err },
		"OffsetForTime": func() error {
			_, _, err := b.OffsetForTime("t", 0, time.Now())
			return err
		},
	} {
		if err := call(); !errors.Is(err, ErrClosed) {
			t.Errorf("%s after Close: %v", name, err)
		}
	}
}

// TestPartitionCalls: what Broker.Log served before it left the API has
// its own Broker method (Sync, Compact, OffsetForTime), and Partition
// hands out the broker-side partition, whose appends keep the Broker's
// rules; a deleted topic's partition is closed.
func TestPartitionCalls(t *testing.T) {
	ctx := context.Background()
	b := openT(t, t.TempDir(), nil)
	createTopicT(t, b, "t", TopicConfig{Flush: FlushNone, Partitions: 2})
	createTopicT(t, b, "c", TopicConfig{Flush: FlushNone, Cleanup: topic.CleanupCompact, SegmentBytes: 200})
	p := producerT(t, b, &ProducerOptions{ManualPartitioning: true})
	start := time.Now()
	for i := range 4 {
		if _, _, err := p.Produce(ctx, &Record{Topic: "t", Partition: 1, Key: []byte("k"), Value: value("v", i),
			Timestamp: start.Add(time.Duration(i) * time.Minute)}); err != nil {
			t.Fatal(err)
		}
	}
	if off, ok, err := b.OffsetForTime("t", 1, start.Add(90*time.Second)); err != nil || !ok || off != 2 {
		t.Fatalf("OffsetForTime: %d %v %v, want 2", off, ok, err)
	}
	if _, ok, err := b.OffsetForTime("t", 1, start.Add(time.Hour)); err != nil || ok {
		t.Fatalf("OffsetForTime past the last record: %v %v", ok, err)
	}
	if err := b.Sync("t", 1); err != nil {
		t.Fatal(err)
	}
	if st := b.Stats(); st.Partitions[2].DurableEndOffset != 4 {
		t.Fatalf("durable end %d after Sync, want 4", st.Partitions[2].DurableEndOffset)
	}
	if err := b.Sync("t", 2); !errors.Is(err, ErrUnknownPartition) {
		t.Fatalf("Sync of a partition outside the topic: %v", err)
	}
	if _, err := b.Compact(ctx, "t", 0); !errors.Is(err, log.ErrNotCompacted) {
		t.Fatalf("Compact of a delete topic: %v, want log.ErrNotCompacted", err)
	}
	for i := range 20 {
		if _, _, err := p.Produce(ctx, &Record{Topic: "c", Key: []byte{byte('a' + i%2)}, Value: value("c", i)}); err != nil {
			t.Fatal(err)
		}
	}
	// Sync seals the rolled segments (FlushNone leaves that to the
	// background), which makes them cleanable.
	if err := b.Sync("c", 0); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Compact(ctx, "c", 0); err != nil {
		t.Fatalf("Compact: %v", err)
	}
	// This pass or the cleaner's own, which may have come first, dropped
	// superseded records.
	cl, _ := partLog(b, "c", 0)
	if n := len(logRecords(t, cl)); n >= 20 {
		t.Fatalf("%d of 20 records left after Compact of two keys", n)
	}

	// Through the partition: the topic's rules, and what a Produce
	// response carries.
	part, err := b.Partition("t", 0)
	if err != nil || part.Topic() != "t" || part.Index() != 0 {
		t.Fatalf("Partition: %v, %v", part, err)
	}
	res, err := b.AppendBatch(ctx, "t", 0, idemBatch(t, 40, 0, 0, 3))
	if err != nil || res != (AppendResult{BaseOffset: 0, LastOffset: 2, LogAppendTime: -1, LogStartOffset: 0}) {
		t.Fatalf("AppendBatch: %+v, %v", res, err)
	}
	if res, err := part.AppendBatch(ctx, idemBatch(t, 40, 0, 0, 3)); err != nil || !res.Duplicate {
		t.Fatalf("retry through the partition: %+v, %v", res, err)
	}
	ended, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := b.AppendBatch(ended, "t", 0, idemBatch(t, 40, 0, 3, 1)); !errors.Is(err, context.Canceled) || errors.Is(err, ErrUnknownOutcome) {
		t.Fatalf("AppendBatch with an ended ctx: %v, want context.Canceled", err)
	}
	if err := b.DeleteTopic("t"); err != nil {
		t.Fatal(err)
	}
	if _, err := part.AppendBatch(ctx, idemBatch(t, 41, 0, 0, 1)); !errors.Is(err, ErrUnknownTopic) || !part.Deleted() {
		t.Fatalf("append to a deleted topic's partition: %v", err)
	}
	if _, err := b.Partition("t", 0); !errors.Is(err, ErrUnknownTopic) {
		t.Fatalf("Partition of a deleted topic: %v", err)
	}
}

func TestOptionsValidate(t *testing.T) {
	if _, err := Open(t.TempDir(), &Options{MaxOpenSegments: -1}); !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "MaxOpenSegments") {
		t.Fatalf("Open with a bad option: %v", err)
	}
	b := openT(t, t.TempDir(), nil)
	bad := map[string]any{
		"BatchBytes":       &ProducerOptions{BatchBytes: 10},
		"MaxBufferedBytes": &ProducerOptions{MaxBufferedBytes: -1},
		"Compression":      &ProducerOptions{Compression: 7},
		"Reset":            &ConsumerOptions{Reset: 9},
		"MaxPollRecords":   &ConsumerOptions{MaxPollRecords: -1},
		"FetchBytes":       &ConsumerOptions{FetchBytes: -5},
	}
	for field, o := range bad {
		var err error
		switch o := o.(type) {
		case *ProducerOptions:
			_, err = b.NewProducer(o)
		case *ConsumerOptions:
			_, err = b.NewConsumer(o)
		}
		if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), field) {
			t.Errorf("%s: %v, want ErrInvalidConfig naming the field", field, err)
		}
	}
}

// keylessBatchT encodes one record without a key as a RecordBatch v2.
func keylessBatchT(t *testing.T) []byte {
	t.Helper()
	bld, err := record.NewBuilder(nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := bld.Append(record.Record{Value: []byte("v"), Timestamp: time.Now().UnixMilli()}); err != nil {
		t.Fatal(err)
	}
	b, err := bld.Build(nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestTopicIndexIntervalBytes: a topic's index.interval.bytes reaches its
// segments: with a small interval (and Kafka's 0, every batch) the
// segments' offset and time indexes get entries where the default 4096
// gives a 4 KiB segment none, the setting survives a restart, and reads
// by offset land on the right records through the entries.
func TestTopicIndexIntervalBytes(t *testing.T) {
	dir := t.TempDir()
	b, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	every := TopicConfig{SegmentBytes: 4096, Flush: FlushNone}
	if err := every.Set(topic.KeyIndexInterval, "0"); err != nil {
		t.Fatal(err)
	}
	cfgs := map[string]TopicConfig{
		"small":   {SegmentBytes: 4096, Flush: FlushNone, IndexIntervalBytes: 128},
		"every":   every,
		"default": {SegmentBytes: 4096, Flush: FlushNone},
	}
	for name, cfg := range cfgs {
		createTopicT(t, b, name, cfg)
	}
	p, err := b.NewProducer(nil)
	if err != nil {
		t.Fatal(err)
	}
	// One batch each (a synchronous Produce), about 4 segments; rising
	// timestamps, so that each batch's maximum is a new time-index point.
	const n = 200
	start := time.Now().Add(-time.Hour)
	for name := range cfgs {
		for i := range n {
			r := &Record{Topic: name, Value: value(name, i), Timestamp: start.Add(time.Duration(i) * time.Millisecond)}
			if _, _, err := p.Produce(context.Background(), r); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil { // seals the indexes to their entries
		t.Fatal(err)
	}
	// entries returns the offset- and time-index entries of a topic's
	// segments, and the number of segments.
	entries := func(name string) (off, tm int64, segs int) {
		t.Helper()
		des, err := os.ReadDir(filepath.Join(dir, topic.DirName(name, 0)))
		if err != nil {
			t.Fatal(err)
		}
		for _, de := range des {
			fi, err := de.Info()
			if err != nil {
				t.Fatal(err)
			}
			switch filepath.Ext(de.Name()) {
			case ".index":
				off += fi.Size() / 8
			case ".timeindex":
				tm += fi.Size() / 12
			case ".log":
				segs++
			}
		}
		return off, tm, segs
	}
	off, _, segs := entries("default")
	if segs < 3 || off != 0 {
		t.Fatalf("default interval: %d segments, %d offset-index entries; want several and none", segs, off)
	}
	off, tm, segs := entries("every")
	// Every batch after a segment's first gets an entry.
	if want := int64(n - segs); off != want || tm < want {
		t.Errorf("index.interval.bytes=0: %d offset and %d time entries in %d segments of %d batches, want %d", off, tm, segs, n, want)
	}
	if offSmall, tmSmall, _ := entries("small"); offSmall == 0 || offSmall >= off || tmSmall == 0 {
		t.Errorf("index.interval.bytes=128: %d offset and %d time entries, want some, fewer than every batch's %d", offSmall, tmSmall, off)
	}

	b = openT(t, dir, nil)
	for name, cfg := range cfgs {
		in, err := b.DescribeTopic(name)
		if err != nil {
			t.Fatal(err)
		}
		if want := cfg.WithDefaults().IndexIntervalBytes; in.Config.IndexIntervalBytes != want {
			t.Errorf("%s reopened with IndexIntervalBytes %d, want %d", name, in.Config.IndexIntervalBytes, want)
		}
		c := consumerT(t, b, &ConsumerOptions{MaxPollRecords: 1})
		for _, at := range []int64{137, 3, n - 1} {
			if err := c.Assign(Assignment{Topic: name, Start: AtOffset(at)}); err != nil {
				t.Fatal(err)
			}
			r := pollN(t, c, 1)[0]
			if r.Offset != at || !bytes.Equal(r.Value, value(name, int(at))) {
				t.Errorf("%s read at %d: offset %d %q, want %q", name, at, r.Offset, r.Value, value(name, int(at)))
			}
		}
	}
}

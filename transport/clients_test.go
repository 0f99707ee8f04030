package transport

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/foliolog/folio/topic"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// consumeN reads n records with a kgo consumer built from opts.
func consumeN(t *testing.T, ctx context.Context, addr string, n int, opts ...kgo.Opt) []*kgo.Record {
	t.Helper()
	cl := newClient(t, addr, opts...)
	defer cl.Close() // no fetches of its own left parked
	var out []*kgo.Record
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("after %d of %d records: %v", len(out), n, err)
		}
		out = append(out, fs.Records()...)
	}
	return out
}

func TestKgoEveryCodecIdempotent(t *testing.T) {
	ts := startServer(t, nil, nil)
	ctx := testCtx(t)
	codecs := map[string]kgo.CompressionCodec{
		"none": kgo.NoCompression(), "gzip": kgo.GzipCompression(), "snappy": kgo.SnappyCompression(),
		"lz4": kgo.Lz4Compression(), "zstd": kgo.ZstdCompression(),
	}
	for name, codec := range codecs {
		t.Run(name, func(t *testing.T) {
			ts.b.mustCreate(t, "c-"+name, topic.Config{Partitions: 2})
			cl := newClient(t, ts.addr, kgo.DefaultProduceTopic("c-"+name), kgo.ProducerBatchCompression(codec), kgo.RequiredAcks(kgo.AllISRAcks()))
			const n = 200
			for i := range n {
				cl.Produce(ctx, &kgo.Record{Key: fmt.Appendf(nil, "k%d", i%7), Value: fmt.Appendf(nil, "value %d of %s", i, name), Headers: []kgo.RecordHeader{{Key: "h", Value: []byte(name)}}}, func(_ *kgo.Record, err error) {
					if err != nil {
						t.Error(err)
					}
				})
			}
			if err := cl.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			if id, _, err := cl.ProducerID(ctx); err != nil || id < 0 {
				t.Fatalf("producer id %d: the client did not produce idempotently", id)
			}
			recs := consumeN(t, ctx, ts.addr, n, kgo.ConsumeTopics("c-"+name), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
			seen := map[string]bool{}
			for _, r := range recs {
				if len(r.Headers) != 1 || string(r.Headers[0].Value) != name {
					t.Fatalf("headers %v", r.Headers)
				}
				seen[string(r.Value)] = true
			}
			if len(seen) != n || len(recs) != n {
				t.Fatalf("%d records, %d distinct, want %d", len(recs), len(seen), n)
			}
		})
	}
}

func TestKgoConsumeFromEndAndByTimestamp(t *testing.T) {
	ts := startServer(t, nil, nil)
	ts.b.mustCreate(t, "t", topic.Config{Partitions: 1})
	ctx := testCtx(t)
	cl := newClient(t, ts.addr, kgo.DefaultProduceTopic("t"))
	base := time.UnixMilli(1_700_000_000_000)
	for i := range 10 {
		r := &kgo.Record{Value: fmt.Appendf(nil, "%d", i), Timestamp: base.Add(time.Duration(i) * time.Second)}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	// By timestamp: the first record at or after base+4.5s is offset 5.
	recs := consumeN(t, ctx, ts.addr, 1, kgo.ConsumeTopics("t"), kgo.ConsumeResetOffset(kgo.NewOffset().AfterMilli(base.Add(4500*time.Millisecond).UnixMilli())))
	if recs[0].Offset != 5 {
		t.Fatalf("by timestamp: first record at offset %d, want 5", recs[0].Offset)
	}
	// From the end: only what is produced after the consumer started.
	// The consumer (which fetches in the background from its creation)
	// has its position once a fetch parks at the end.
	parked := make(chan struct{}, 1)
	onPark := func() {
		select {
		case parked <- struct{}{}:
		default:
		}
	}
	ts.onPark.Store(&onPark)
	end := newClient(t, ts.addr, kgo.ConsumeTopics("t"), kgo.ConsumeResetOffset(kgo.NewOffset().AtEnd()))
	select {
	case <-parked:
	case <-ctx.Done():
		t.Fatal("the end consumer never parked")
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("late")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	got := end.PollFetches(ctx)
	if err := got.Err0(); err != nil {
		t.Fatal(err)
	}
	rs := got.Records()
	if len(rs) == 0 || string(rs[0].Value) != "late" || rs[0].Offset != 10 {
		t.Fatalf("from the end got %v", rs)
	}
}

func TestListOffsetsAndDeleteRecords(t *testing.T) {
	ts := startServer(t, nil, nil)
	ts.b.mustCreate(t, "t", topic.Config{Partitions: 1})
	ctx := testCtx(t)
	cl := newClient(t, ts.addr, kgo.DefaultProduceTopic("t"))
	adm := kadm.NewClient(cl)
	base := time.UnixMilli(1_700_000_000_000)
	for i, sec := range []int{3, 9, 1, 9, 2} {
		r := &kgo.Record{Value: fmt.Appendf(nil, "%d", i), Timestamp: base.Add(time.Duration(sec) * time.Second)}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	ends, err := adm.ListEndOffsets(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := ends.Lookup("t", 0); o.Offset != 5 || o.Err != nil {
		t.Fatalf("end offset %+v, want 5", o)
	}
	after, err := adm.ListOffsetsAfterMilli(ctx, base.Add(5*time.Second).UnixMilli(), "t")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := after.Lookup("t", 0); o.Offset != 1 || o.Timestamp != base.Add(9*time.Second).UnixMilli() {
		t.Fatalf("after +5s: %+v, want offset 1 at +9s", o)
	}
	// MAX_TIMESTAMP: the first record with the largest timestamp.
	lo := kmsg.NewPtrListOffsetsRequest()
	lt := kmsg.NewListOffsetsRequestTopic()
	lt.Topic = "t"
	lp := kmsg.NewListOffsetsRequestTopicPartition()
	lp.Timestamp = -3
	lt.Partitions = append(lt.Partitions, lp)
	lo.Topics = append(lo.Topics, lt)
	resp, err := lo.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if p := resp.Topics[0].Partitions[0]; p.ErrorCode != 0 || p.Offset != 1 || p.Timestamp != base.Add(9*time.Second).UnixMilli() {
		t.Fatalf("max timestamp: %+v, want offset 1 at +9s", p)
	}

	// DeleteRecords, then a fetch below the new start.
	del := kadm.Offsets{}
	del.AddOffset("t", 0, 3, -1)
	dr, err := adm.DeleteRecords(ctx, del)
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := dr.Lookup("t", 0); r.Err != nil || r.LowWatermark != 3 {
		t.Fatalf("DeleteRecords: %+v", r)
	}
	starts, err := adm.ListStartOffsets(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := starts.Lookup("t", 0); o.Offset != 3 {
		t.Fatalf("start offset %d after DeleteRecords to 3", o.Offset)
	}
	fetch := kmsg.NewPtrFetchRequest()
	fetch.MaxBytes = 1 << 20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = "t"
	in, _ := ts.b.TopicInfo("t")
	ft.TopicID = in.ID // the client picks the version: v13+ names topics by id
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.FetchOffset, fp.PartitionMaxBytes = 1, 1<<20
	ft.Partitions = append(ft.Partitions, fp)
	fetch.Topics = append(fetch.Topics, ft)
	fr, err := fetch.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if p := fr.Topics[0].Partitions[0]; p.ErrorCode != kerr.OffsetOutOfRange.Code || p.LogStartOffset != 3 {
		t.Fatalf("fetch below the start: %+v", p)
	}
	// A consumer asked for offset 1 resets to the start.
	recs := consumeN(t, ctx, ts.addr, 2, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"t": {0: kgo.NewOffset().At(1)}}), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if recs[0].Offset != 3 {
		t.Fatalf("after the reset the first record is at %d, want 3", recs[0].Offset)
	}
}

func TestMetadataAutoCreateAndUnknown(t *testing.T) {
	ts := startServer(t, nil, &Options{AutoCreatePartitions: 3})
	ctx := testCtx(t)
	cl := newClient(t, ts.addr, kgo.AllowAutoTopicCreation(), kgo.DefaultProduceTopic("auto"))
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	in, err := ts.b.TopicInfo("auto")
	if err != nil || in.Config.Partitions != 3 {
		t.Fatalf("auto-created topic: %+v, %v", in, err)
	}
	noAuto := startServer(t, nil, &Options{DisableAutoCreate: true})
	adm := kadm.NewClient(newClient(t, noAuto.addr))
	md, err := adm.Metadata(ctx, "missing")
	if err != nil {
		t.Fatal(err)
	}
	if d := md.Topics["missing"]; d.Err != kerr.UnknownTopicOrPartition {
		t.Fatalf("unknown topic: %v", d.Err)
	}
	if len(md.Brokers) != 1 || md.Cluster != DefaultClusterID {
		t.Fatalf("brokers %v cluster %q", md.Brokers, md.Cluster)
	}
}

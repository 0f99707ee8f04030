package transport

import (
	"bytes"
	"context"
	"errors"
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/foliolog/folio/log"
	"github.com/foliolog/folio/record"
	"github.com/foliolog/folio/topic"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestProduceLogAppendTimeAndMaxMessageBytes(t *testing.T) {
	ts := startServer(t, nil, nil)
	var cfg topic.Config
	if err := cfg.Set("message.timestamp.type", "LogAppendTime"); err != nil {
		t.Fatal(err)
	}
	cfg.Partitions, cfg.MaxMessageBytes = 1, 2000
	ts.b.mustCreate(t, "lat", cfg)
	ctx := testCtx(t)
	cl := newClient(t, ts.addr, kgo.DefaultProduceTopic("lat"), kgo.ProducerBatchCompression(kgo.NoCompression()))
	before := time.Now().Add(-time.Second)
	old := time.UnixMilli(1_000_000)
	r := &kgo.Record{Value: []byte("stamped by the broker"), Timestamp: old}
	if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// A consumer sees the broker's append time, not the producer's.
	recs := consumeN(t, ctx, ts.addr, 1, kgo.ConsumeTopics("lat"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if got := recs[0].Timestamp; got.Before(before) || got.After(time.Now().Add(time.Second)) || recs[0].Attrs.TimestampType() != 1 {
		t.Fatalf("consumed timestamp %v (type %d), want the broker's append time", got, recs[0].Attrs.TimestampType())
	}
	p, _ := ts.b.Partition("lat", 0)
	if p.HighWatermark() != 1 {
		t.Fatalf("high watermark %d", p.HighWatermark())
	}
	// A batch above max.message.bytes is MESSAGE_TOO_LARGE, and nothing is written.
	err := cl.ProduceSync(ctx, &kgo.Record{Value: bytes.Repeat([]byte("x"), 5000)}).FirstErr()
	if !errors.Is(err, kerr.MessageTooLarge) {
		t.Fatalf("a 5000-byte record on max.message.bytes 2000: %v", err)
	}
	if p.LogEndOffset() != 1 {
		t.Fatalf("log end %d after a refused batch", p.LogEndOffset())
	}
}

func TestProduceAcksZeroAndResponseFields(t *testing.T) {
	ts := startServer(t, nil, nil)
	ts.b.mustCreate(t, "a0", topic.Config{Partitions: 1})
	ctx := testCtx(t)
	cl := newClient(t, ts.addr, kgo.DefaultProduceTopic("a0"), kgo.RequiredAcks(kgo.NoAck()), kgo.DisableIdempotentWrite())
	for range 5 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("fire and forget")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	p, _ := ts.b.Partition("a0", 0)
	// acks=0 has no answer to wait on: wait on the partition itself.
	if err := p.Wait(ctx, 4); err != nil {
		t.Fatal(err)
	}
	// acks=1 answers the base offset, -1 as the append time under
	// CreateTime, and the log start offset.
	if err := p.DeleteRecordsBefore(2); err != nil {
		t.Fatal(err)
	}
	ack := newClient(t, ts.addr, kgo.DefaultProduceTopic("a0"))
	var rec *kgo.Record
	res := ack.ProduceSync(ctx, &kgo.Record{Value: []byte("acked")})
	if rec, _ = res.First(); rec == nil || rec.Offset != 5 {
		t.Fatalf("acked record at %v", rec)
	}
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = 1, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "a0"
	in, _ := ts.b.TopicInfo("a0")
	rt.TopicID = in.ID // the client picks the version: v13 names topics by id
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = oneBatch(t)
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, ack)
	if err != nil {
		t.Fatal(err)
	}
	got := resp.Topics[0].Partitions[0]
	if got.ErrorCode != 0 || got.BaseOffset != 6 || got.LogAppendTime != -1 || got.LogStartOffset != 2 {
		t.Fatalf("produce response %+v", got)
	}
}

// oneBatch is a valid one-record batch.
func oneBatch(t *testing.T) []byte {
	t.Helper()
	bld, err := record.NewBuilder(nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := bld.Append(record.Record{Value: []byte("raw"), Timestamp: 1}); err != nil {
		t.Fatal(err)
	}
	b, err := bld.Build(nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestManyParkedFetches(t *testing.T) {
	// 1,000 connections, each with a fetch parked on an idle topic: no
	// goroutine per partition, memory bounded, all woken by one append,
	// and shutdown prompt.
	if testing.Short() {
		t.Skip("1,000 connections")
	}
	ts := startServer(t, nil, nil)
	ts.b.mustCreate(t, "idle", topic.Config{Partitions: 4, Flush: log.FlushNone})
	parked := make(chan struct{}, 2000)
	onPark := func() { parked <- struct{}{} }
	ts.onPark.Store(&onPark)
	fetch := kmsg.NewPtrFetchRequest()
	fetch.Version, fetch.MaxWaitMillis, fetch.MinBytes, fetch.MaxBytes = 12, 30000, 1, 1<<20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = "idle"
	for p := range int32(4) {
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.Partition, fp.PartitionMaxBytes = p, 1<<20
		ft.Partitions = append(ft.Partitions, fp)
	}
	fetch.Topics = append(fetch.Topics, ft)
	frame := kmsgFrame(fetch, 9)
	var ms0 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms0)
	g0 := runtime.NumGoroutine()
	const n = 1000
	conns := make([]net.Conn, 0, n)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range n {
		nc, err := net.Dial("tcp", ts.addr)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, nc)
		if _, err := nc.Write(frame); err != nil {
			t.Fatal(err)
		}
	}
	for range n {
		select {
		case <-parked:
		case <-time.After(30 * time.Second):
			t.Fatal("fetches did not park")
		}
	}
	var ms1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms1)
	perConn := float64(int64(ms1.HeapInuse)-int64(ms0.HeapInuse)) / n
	goroutines := runtime.NumGoroutine() - g0
	t.Logf("%d parked fetches: %.1f KiB heap and %.1f goroutines per connection", n, perConn/1024, float64(goroutines)/n)
	if goroutines > 4*n { // reader, writer and the request's handler; not one per partition
		t.Fatalf("%d goroutines for %d parked fetches of 4 partitions", goroutines, n)
	}
	if perConn > 128<<10 {
		t.Fatalf("%.0f bytes of heap per parked connection", perConn)
	}
	// One append wakes the fetches parked on its partition.
	p, _ := ts.b.Partition("idle", 2)
	if _, err := p.AppendBatch(context.Background(), oneBatch(t)); err != nil {
		t.Fatal(err)
	}
	for i, nc := range conns[:50] {
		body := readResponse(t, nc, 9, true)
		fr := kmsg.NewPtrFetchResponse()
		fr.Version = 12
		if err := fr.ReadFrom(body); err != nil {
			t.Fatal(err)
		}
		if got := fr.Topics[0].Partitions[2]; len(got.RecordBatches) == 0 || got.HighWatermark != 1 {
			t.Fatalf("connection %d woke without the record: %+v", i, got)
		}
	}
}

// TestPipelinedIdempotentProduceInOrder: kgo pipelines an idempotent
// producer's requests on one connection; they must be appended in order,
// or the partitions see sequence gaps (OUT_OF_ORDER_SEQUENCE_NUMBER), the
// client bumps its epoch and waits out its request timeout.
func TestPipelinedIdempotentProduceInOrder(t *testing.T) {
	ts := startServer(t, nil, nil)
	ts.b.mustCreate(t, "w", topic.Config{Partitions: 4, Flush: log.FlushNone})
	ctx := testCtx(t)
	cl := newClient(t, ts.addr, kgo.DefaultProduceTopic("w"), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(0))
	v := make([]byte, 100)
	const n = 100000
	errc := make(chan error, 1)
	for range n {
		cl.Produce(ctx, &kgo.Record{Value: v}, func(_ *kgo.Record, err error) {
			if err != nil {
				select {
				case errc <- err:
				default:
				}
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errc:
		t.Fatal(err)
	default:
	}
	if _, epoch, err := cl.ProducerID(ctx); err != nil || epoch != 0 {
		t.Fatalf("producer epoch %d (%v): the client had to recover from a produce error", epoch, err)
	}
	var total int64
	for p := range int32(4) {
		part, _ := ts.b.Partition("w", p)
		total += part.HighWatermark()
	}
	if total != n {
		t.Fatalf("%d records in the topic, want %d", total, n)
	}
}

// TestTransactionalProducerGetsAClearError: transactions are not served;
// a transactional producer fails at once with a fatal error, not a hang.
func TestTransactionalProducerGetsAClearError(t *testing.T) {
	ts := startServer(t, nil, nil)
	ts.b.mustCreate(t, "tx", topic.Config{Partitions: 1})
	ctx := testCtx(t)
	cl := newClient(t, ts.addr, kgo.TransactionalID("tx-1"), kgo.DefaultProduceTopic("tx"))
	short, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	err := cl.BeginTransaction()
	if err == nil {
		err = cl.ProduceSync(short, &kgo.Record{Value: []byte("x")}).FirstErr()
	}
	if !errors.Is(err, kerr.TransactionalIDAuthorizationFailed) {
		t.Fatalf("transactional produce: %v, want TRANSACTIONAL_ID_AUTHORIZATION_FAILED", err)
	}
	if short.Err() != nil {
		t.Fatal("the transactional producer hung until the deadline")
	}
	p, _ := ts.b.Partition("tx", 0)
	if p.LogEndOffset() != 0 {
		t.Fatalf("a transactional record was written (log end %d)", p.LogEndOffset())
	}
}

func TestClosedPartitionIsNotLeader(t *testing.T) {
	ts := startServer(t, nil, nil)
	ts.b.mustCreate(t, "c", topic.Config{Partitions: 1})
	p, _ := ts.b.Partition("c", 0)
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if got := partitionCode(func() error { _, err := p.AppendBatch(context.Background(), oneBatch(t)); return err }()); got != kerr.NotLeaderForPartition.Code {
		t.Fatalf("append to a closed partition answers %d, want NOT_LEADER_OR_FOLLOWER", got)
	}
	ctx := testCtx(t)
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = 1, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "c"
	in, _ := ts.b.TopicInfo("c")
	rt.TopicID = in.ID
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = oneBatch(t)
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	cl := newClient(t, ts.addr)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Topics[0].Partitions[0].ErrorCode; got != kerr.NotLeaderForPartition.Code {
		t.Fatalf("produce to a closed partition: code %d", got)
	}
}

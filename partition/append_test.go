package partition

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/foliolog/folio/log"
	"github.com/foliolog/folio/record"
	"github.com/foliolog/folio/topic"
)

var flushNone = log.FlushNone

func TestIdempotentAppendBatch(t *testing.T) {
	ctx := context.Background()
	p := openT(t, nil, t.TempDir(), topic.Config{Flush: flushNone}, log.State{}, nil)
	var offs []AppendResult
	for i := range 7 {
		res, err := p.AppendBatch(ctx, batchOf(t, record.CodecNone, 500, 0, int32(i*3), 3))
		if err != nil || res.Duplicate || res.BaseOffset != int64(i*3) || res.LastOffset != int64(i*3+2) {
			t.Fatalf("batch %d: %+v, %v", i, res, err)
		}
		offs = append(offs, res)
	}
	// A retry of any of the last 5 batches returns its original offsets and
	// writes nothing.
	for i := 2; i < 7; i++ {
		res, err := p.AppendBatch(ctx, batchOf(t, record.CodecNone, 500, 0, int32(i*3), 3))
		if err != nil || !res.Duplicate || res.BaseOffset != offs[i].BaseOffset || res.LastOffset != offs[i].LastOffset || res.LogAppendTime != -1 {
			t.Fatalf("retry of batch %d: %+v, %v; want duplicate of %+v", i, res, err, offs[i])
		}
	}
	if _, err := p.AppendBatch(ctx, batchOf(t, record.CodecNone, 500, 0, 0, 3)); !errors.Is(err, topic.ErrDuplicateSequence) {
		t.Fatalf("retry of a forgotten batch: %v, want ErrDuplicateSequence", err)
	}
	if _, err := p.AppendBatch(ctx, batchOf(t, record.CodecNone, 500, 0, 25, 1)); !errors.Is(err, topic.ErrOutOfOrderSequence) {
		t.Fatalf("sequence gap: %v, want ErrOutOfOrderSequence", err)
	}
	if _, err := p.AppendBatch(ctx, batchOf(t, record.CodecNone, 500, 1, 0, 1)); err != nil {
		t.Fatalf("new epoch from 0: %v", err)
	}
	if _, err := p.AppendBatch(ctx, batchOf(t, record.CodecNone, 500, 0, 21, 1)); !errors.Is(err, topic.ErrProducerFenced) {
		t.Fatalf("old epoch: %v, want ErrProducerFenced", err)
	}
	if p.LogEndOffset() != 22 {
		t.Fatalf("log end %d, want 22: refused and duplicate batches must write nothing", p.LogEndOffset())
	}
	if p.Producers() != 1 {
		t.Fatalf("%d producers, want 1", p.Producers())
	}
	// Control batches come only from Folio itself.
	bld, _ := record.NewBuilder(nil)
	bld.Control = true
	_ = bld.Append(record.Record{Key: []byte{0, 0, 0, 0}, Value: []byte{0, 0, 0, 0, 0, 0}})
	ctl, _ := bld.Build(nil)
	if _, err := p.AppendBatch(ctx, ctl); !errors.Is(err, ErrInvalidBatch) {
		t.Fatalf("control batch: %v, want ErrInvalidBatch", err)
	}
	garbage := batchOf(t, record.CodecNone, 1, 0, 0, 1)
	garbage[len(garbage)-1] ^= 0xff
	if _, err := p.AppendBatch(ctx, garbage); !errors.Is(err, ErrInvalidBatch) {
		t.Fatalf("bad CRC: %v, want ErrInvalidBatch", err)
	}
}

// TestAppendBatchResult: the result carries what a Produce response does:
// offsets, the log append time under LogAppendTime (-1 under CreateTime),
// and the log start offset.
func TestAppendBatchResult(t *testing.T) {
	ctx := context.Background()
	now := time.UnixMilli(1_700_000_000_123)
	p := openT(t, nil, t.TempDir(), topic.Config{Flush: flushNone, TimestampType: topic.LogAppendTime}, log.State{},
		&Options{Now: func() time.Time { return now }, RetentionCheckInterval: -1})
	res, err := p.AppendBatch(ctx, batchOf(t, record.CodecNone, -1, 0, 0, 4))
	if err != nil || res != (AppendResult{BaseOffset: 0, LastOffset: 3, LogAppendTime: now.UnixMilli(), LogStartOffset: 0}) {
		t.Fatalf("append under LogAppendTime: %+v, %v", res, err)
	}
	if bs := stored(t, p, log.BoundHighWatermark); len(bs) != 1 || !bs[0].LogAppendTime() || bs[0].MaxTimestamp() != now.UnixMilli() {
		t.Fatalf("stored batch does not carry the append time")
	}
	if err := p.DeleteRecordsBefore(2); err != nil {
		t.Fatal(err)
	}
	res, err = p.AppendBatch(ctx, batchOf(t, record.CodecNone, 8, 0, 0, 1))
	if err != nil || res.BaseOffset != 4 || res.LogStartOffset != 2 || res.LogAppendTime != now.UnixMilli() {
		t.Fatalf("idempotent append after DeleteRecordsBefore(2): %+v, %v", res, err)
	}

	c := openT(t, nil, t.TempDir(), topic.Config{Flush: flushNone}, log.State{}, nil)
	if res, err := c.AppendBatch(ctx, batchOf(t, record.CodecNone, -1, 0, 0, 2)); err != nil || res.LogAppendTime != -1 {
		t.Fatalf("append under CreateTime: %+v, %v", res, err)
	}
}

// TestAppendBatchRecompresses: a batch in another codec than the topic's
// is stored in the topic's, with its records, producer fields and offset
// gaps intact; a topic that keeps the producer's codec stores it as sent.
func TestAppendBatchRecompresses(t *testing.T) {
	ctx := context.Background()
	p := openT(t, nil, t.TempDir(), topic.Config{Flush: flushNone, Compression: topic.CompressionZstd}, log.State{}, nil)
	bld, _ := record.NewBuilder(nil)
	bld.ProducerID, bld.ProducerEpoch, bld.BaseSequence = 77, 0, 0
	_ = bld.AppendAt(0, record.Record{Key: []byte("a"), Value: []byte("1"), Timestamp: 1000})
	_ = bld.AppendAt(3, record.Record{Key: []byte("b"), Value: []byte("2"), Timestamp: 2000,
		Headers: []record.Header{{Key: "h", Value: []byte("hv")}}})
	raw, _ := bld.Build(nil)
	res, err := p.AppendBatch(ctx, raw)
	if err != nil || res.BaseOffset != 0 || res.LastOffset != 3 {
		t.Fatalf("AppendBatch: %+v, %v", res, err)
	}
	bs := stored(t, p, log.BoundHighWatermark)
	if len(bs) != 1 || bs[0].Codec() != record.CodecZstd || bs[0].ProducerID() != 77 || bs[0].LastOffsetDelta() != 3 {
		t.Fatalf("stored batch: codec %v pid %d lastDelta %d", bs[0].Codec(), bs[0].ProducerID(), bs[0].LastOffsetDelta())
	}
	it := bs[0].Records(nil)
	defer it.Close()
	var offs []int64
	for it.Next() {
		r := it.Record()
		offs = append(offs, r.Offset())
		if r.Offset() == 3 && (string(r.Value()) != "2" || r.Timestamp() != 2000 || r.NumHeaders() != 1) {
			t.Fatalf("record 3 after recompression: %q at %d, %d headers", r.Value(), r.Timestamp(), r.NumHeaders())
		}
	}
	if it.Err() != nil || len(offs) != 2 || offs[0] != 0 || offs[1] != 3 {
		t.Fatalf("offsets %v, %v", offs, it.Err())
	}

	keep := openT(t, nil, t.TempDir(), topic.Config{Flush: flushNone}, log.State{}, nil)
	if _, err := keep.AppendBatch(ctx, batchOf(t, record.CodecLZ4, -1, 0, 0, 3)); err != nil {
		t.Fatal(err)
	}
	if bs := stored(t, keep, log.BoundHighWatermark); len(bs) != 1 || bs[0].Codec() != record.CodecLZ4 {
		t.Fatal("a CompressionProducer topic recompressed a batch")
	}
}

// TestAppendBatchLimits: a batch above max.message.bytes, and a keyless
// one for a compacted topic, are refused as Kafka's broker refuses them,
// writing nothing.
func TestAppendBatchLimits(t *testing.T) {
	ctx := context.Background()
	p := openT(t, nil, t.TempDir(), topic.Config{Flush: flushNone, MaxMessageBytes: 1024}, log.State{}, nil)
	if p.MaxBatchBytes() != 1024 {
		t.Fatalf("MaxBatchBytes %d", p.MaxBatchBytes())
	}
	bld, _ := record.NewBuilder(nil)
	_ = bld.Append(record.Record{Value: make([]byte, 2000)})
	big, _ := bld.Build(nil)
	if _, err := p.AppendBatch(ctx, big); !errors.Is(err, ErrMessageTooLarge) {
		t.Fatalf("AppendBatch of a large batch: %v, want ErrMessageTooLarge", err)
	}
	c := openT(t, nil, t.TempDir(), topic.Config{Flush: flushNone, Cleanup: topic.CleanupCompact}, log.State{}, nil)
	bld.Reset()
	_ = bld.Append(record.Record{Value: []byte("no key")})
	keyless, _ := bld.Build(nil)
	if _, err := c.AppendBatch(ctx, keyless); !errors.Is(err, ErrInvalidBatch) || !errors.Is(err, log.ErrNoKey) {
		t.Fatalf("keyless batch to a compacted topic: %v, want ErrInvalidBatch (log.ErrNoKey)", err)
	}
	if p.LogEndOffset() != 0 || c.LogEndOffset() != 0 {
		t.Fatal("a refused batch was written")
	}
}

// TestAppendBatchContext: a ctx that has ended writes nothing and reports
// ctx's error, definitely (not ErrUnknownOutcome).
func TestAppendBatchContext(t *testing.T) {
	p := openT(t, nil, t.TempDir(), topic.Config{Flush: flushNone}, log.State{}, nil)
	ctx, cancel := context.WithCancelCause(context.Background())
	stop := errors.New("stop")
	cancel(stop)
	for _, pid := range []int64{-1, 5} {
		if _, err := p.AppendBatch(ctx, batchOf(t, record.CodecNone, pid, 0, 0, 1)); !errors.Is(err, stop) || errors.Is(err, ErrUnknownOutcome) {
			t.Fatalf("pid %d: AppendBatch with an ended ctx: %v, want its cause", pid, err)
		}
		bt := record.Batch(batchOf(t, record.CodecNone, pid, 0, 0, 1))
		if n, err := p.AppendProduced(ctx, pid, []record.Batch{bt}); n != 0 || !errors.Is(err, stop) {
			t.Fatalf("pid %d: AppendProduced with an ended ctx: %d, %v", pid, n, err)
		}
	}
	if p.LogEndOffset() != 0 {
		t.Fatalf("log end %d: an ended ctx wrote", p.LogEndOffset())
	}
}

// TestAppendProduced: batches of an in-process producer go in together,
// sequences checked against the producer's state; a resent first
// sequence is refused.
func TestAppendProduced(t *testing.T) {
	ctx := context.Background()
	p := openT(t, nil, t.TempDir(), topic.Config{Flush: flushNone}, log.State{}, nil)
	bs := []record.Batch{batchOf(t, record.CodecNone, 3, 0, 0, 2), batchOf(t, record.CodecNone, 3, 0, 2, 3)}
	if n, err := p.AppendProduced(ctx, 3, bs); n != 2 || err != nil {
		t.Fatalf("AppendProduced: %d, %v", n, err)
	}
	if bs[0].BaseOffset() != 0 || bs[1].BaseOffset() != 2 || p.LogEndOffset() != 5 {
		t.Fatalf("offsets %d, %d; log end %d", bs[0].BaseOffset(), bs[1].BaseOffset(), p.LogEndOffset())
	}
	again := []record.Batch{batchOf(t, record.CodecNone, 3, 0, 2, 3)}
	if n, err := p.AppendProduced(ctx, 3, again); n != 0 || !errors.Is(err, topic.ErrDuplicateSequence) {
		t.Fatalf("resent sequence: %d, %v", n, err)
	}
	plain := []record.Batch{batchOf(t, record.CodecNone, -1, 0, 0, 1)}
	if n, err := p.AppendProduced(ctx, -1, plain); n != 1 || err != nil || plain[0].BaseOffset() != 5 {
		t.Fatalf("without a producer id: %d, %v", n, err)
	}
}

// TestAppendedCount: after a failed multi-batch append, the batches the
// log gave offsets to count as written, the rest not.
func TestAppendedCount(t *testing.T) {
	bs := []record.Batch{batchOf(t, record.CodecNone, -1, 0, 0, 2), batchOf(t, record.CodecNone, -1, 0, 0, 3), batchOf(t, record.CodecNone, -1, 0, 0, 1)}
	other := errors.New("refused")
	for _, tc := range []struct {
		err  error
		want int
	}{
		{nil, 3},
		{other, 0},
		{&appendError{first: -1, last: -1, err: other}, 0},
		{&appendError{first: 10, last: 11, err: other}, 1},
		{&appendError{first: 10, last: 14, err: other}, 2},
		{&appendError{first: 10, last: 15, err: other}, 3},
		{&appendError{first: 10, last: 13, err: other}, 1}, // the second batch ends at 14
	} {
		if got := appendedCount(bs, tc.err); got != tc.want {
			t.Errorf("appendedCount(%v) = %d, want %d", tc.err, got, tc.want)
		}
	}
}

// TestAppendAfterClose: a closed partition refuses appends with ErrClosed,
// a deleted one with ErrDeleted.
func TestAppendAfterClose(t *testing.T) {
	ctx := context.Background()
	p := openT(t, nil, t.TempDir(), topic.Config{Flush: flushNone}, log.State{}, nil)
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := p.AppendBatch(ctx, batchOf(t, record.CodecNone, -1, 0, 0, 1)); !errors.Is(err, ErrClosed) {
		t.Fatalf("append after Close: %v, want ErrClosed", err)
	}
	if _, err := p.Read(0, 100, log.BoundHighWatermark); !errors.Is(err, ErrClosed) {
		t.Fatalf("read after Close: %v", err)
	}
	d := openT(t, nil, t.TempDir(), topic.Config{Flush: flushNone}, log.State{}, nil)
	if err := d.CloseDeleted(); err != nil {
		t.Fatal(err)
	}
	if _, err := d.AppendBatch(ctx, batchOf(t, record.CodecNone, 4, 0, 0, 1)); !errors.Is(err, ErrDeleted) || !d.Deleted() {
		t.Fatalf("append after CloseDeleted: %v, want ErrDeleted", err)
	}
}

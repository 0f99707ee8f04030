package folio

import (
	"context"
	"encoding/binary"
	"testing"
	"time"

	"github.com/foliolog/folio/log"
	"github.com/foliolog/folio/record"
)

// BenchmarkPeerDurableAppend is peerbench's W2 through the public API: 1 KiB
// records, ProduceAsync per record and a Flush per batch of 100 on a
// FlushSync topic (every acknowledgement fsynced). One op is one batch.
// BenchmarkPeerDurableAppendLog is the same one layer down (a Builder and
// one log.Append per batch under FlushSync), as peerbench's folio-log
// adapter does it. Both report the process's CPU per batch.
func BenchmarkPeerDurableAppend(b *testing.B) {
	br := openT(b, b.TempDir(), &Options{CheckpointInterval: -1})
	createTopicT(b, br, "durable", TopicConfig{Partitions: 1, Flush: FlushSync})
	p := producerT(b, br, nil)
	ctx := context.Background()
	recs := make([]Record, peerBatch)
	vals := make([][]byte, peerBatch)
	for i := range vals {
		vals[i] = make([]byte, 1024)
	}
	var failed failures
	cb := failed.callback
	next := 0
	batch := func() {
		for i := range peerBatch {
			binary.LittleEndian.PutUint64(vals[i], uint64(next+i))
			recs[i] = Record{Topic: "durable", Value: vals[i]}
			p.ProduceAsync(ctx, &recs[i], cb)
		}
		if err := p.Flush(ctx); err != nil || failed.get() != nil {
			b.Fatal(err, failed.get())
		}
		next += peerBatch
	}
	runDurable(b, batch)
}

func BenchmarkPeerDurableAppendLog(b *testing.B) {
	l, err := log.Open(nil, b.TempDir(), &log.Options{FlushPolicy: log.FlushSync}, log.State{})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	bld, err := record.NewBuilder(nil)
	if err != nil {
		b.Fatal(err)
	}
	val := make([]byte, 1024)
	var buf []byte
	next := 0
	batch := func() {
		ts := time.Now().UnixMilli()
		bld.Reset()
		for i := range peerBatch {
			binary.LittleEndian.PutUint64(val, uint64(next+i))
			if err := bld.Append(record.Record{Value: val, Timestamp: ts}); err != nil {
				b.Fatal(err)
			}
		}
		bt, err := bld.Build(buf)
		if err != nil {
			b.Fatal(err)
		}
		buf = bt[:0]
		if _, _, err := l.Append(bt); err != nil {
			b.Fatal(err)
		}
		next += peerBatch
	}
	runDurable(b, batch)
}

// runDurable runs batch once untimed (the first segment, the producer id),
// then b.N times, reporting bytes and the process's CPU per batch.
func runDurable(b *testing.B, batch func()) {
	batch()
	b.SetBytes(peerBatch * 1024)
	b.ResetTimer()
	u := startUsage()
	for range b.N {
		batch()
	}
	b.StopTimer()
	u.report(b, b.N)
}

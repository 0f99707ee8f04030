package partition

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/foliolog/folio/log"
	"github.com/foliolog/folio/record"
	"github.com/foliolog/folio/topic"
)

// acksAll is a Replication that holds every acknowledgement until the high
// watermark, which it owns and the test moves, passes the append (Kafka's
// acks=all with the test as the followers).
type acksAll struct {
	refuse atomic.Pointer[error] // BeforeAppend's answer
	// held receives the last offset of every append AfterAppend holds,
	// once the log has it: the event the test waits for.
	held chan int64
}

func (r *acksAll) ExternalHighWatermark() bool { return true }

func (r *acksAll) BeforeAppend(context.Context, *Partition) error {
	if err := r.refuse.Load(); err != nil {
		return *err
	}
	return nil
}

func (r *acksAll) AfterAppend(ctx context.Context, p *Partition, first, last int64) error {
	r.held <- last
	return p.Wait(ctx, last)
}

// TestReplicationHoldsAcknowledgements: with a Replication that owns the
// high watermark, an append is in the log (a read bounded by the log end
// sees it, consumers do not) but unacknowledged until the high watermark
// passes it; a ctx that ends meanwhile reports ErrUnknownOutcome with the
// offsets; BeforeAppend refuses definitely.
func TestReplicationHoldsAcknowledgements(t *testing.T) {
	repl := &acksAll{held: make(chan int64, 4)}
	p := openT(t, nil, t.TempDir(), topic.Config{Flush: flushNone}, log.State{}, &Options{Replication: repl, RetentionCheckInterval: -1})
	type outcome struct {
		res AppendResult
		err error
	}
	done := make(chan outcome, 1)
	first := batchOf(t, record.CodecNone, 7, 0, 0, 3)
	go func() {
		res, err := p.AppendBatch(context.Background(), first)
		done <- outcome{res, err}
	}()
	// The batch reaches the log, then waits for the high watermark.
	if last := <-repl.held; last != 2 {
		t.Fatalf("held up to %d, want 2", last)
	}
	if got := stored(t, p, log.BoundHighWatermark); len(got) != 0 {
		t.Fatalf("consumers see %d batches above the high watermark", len(got))
	}
	if got := stored(t, p, log.BoundLogEnd); len(got) != 1 || got[0].LastOffset() != 2 {
		t.Fatalf("a read bounded by the log end sees %d batches", len(got))
	}
	select {
	case o := <-done:
		t.Fatalf("acknowledged before the high watermark moved: %+v, %v", o.res, o.err)
	default:
	}
	if err := p.SetHighWatermark(3); err != nil {
		t.Fatal(err)
	}
	if o := <-done; o.err != nil || o.res.BaseOffset != 0 || o.res.LastOffset != 2 || o.res.LogStartOffset != 0 {
		t.Fatalf("after the high watermark passed: %+v, %v", o.res, o.err)
	}
	if got := stored(t, p, log.BoundHighWatermark); len(got) != 1 {
		t.Fatalf("consumers see %d batches below the high watermark 3", len(got))
	}

	// The appender gives up: the records are in the log, the outcome
	// unknown, the offsets reported. Its retry is a duplicate, and is held
	// too: the original may not be replicated yet.
	giveUp := func(what string) (AppendResult, error) {
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			<-repl.held
			cancel()
		}()
		res, err := p.AppendBatch(ctx, batchOf(t, record.CodecNone, 7, 0, 3, 2))
		cancel()
		if !errors.Is(err, ErrUnknownOutcome) || !errors.Is(err, context.Canceled) || res.BaseOffset != 3 || res.LastOffset != 4 {
			t.Fatalf("%s: ctx ended while held: %+v, %v; want ErrUnknownOutcome with offsets 3-4", what, res, err)
		}
		return res, err
	}
	if res, _ := giveUp("append"); res.Duplicate {
		t.Fatal("the first append is a duplicate")
	}
	if res, _ := giveUp("retry"); !res.Duplicate {
		t.Fatal("the retry is not a duplicate")
	}
	if err := p.SetHighWatermark(5); err != nil {
		t.Fatal(err)
	}
	if res, err := p.AppendBatch(context.Background(), batchOf(t, record.CodecNone, 7, 0, 3, 2)); !res.Duplicate || err != nil {
		t.Fatalf("retry after replication: %+v, %v", res, err)
	}
	<-repl.held

	// The in-process producer's appends are held alike.
	bs := []record.Batch{batchOf(t, record.CodecNone, -1, 0, 0, 1)}
	n := make(chan int, 1)
	go func() {
		k, _ := p.AppendProduced(context.Background(), -1, bs)
		n <- k
	}()
	if last := <-repl.held; last != 5 || p.LogEndOffset() != 6 {
		t.Fatalf("held up to %d, log end %d", last, p.LogEndOffset())
	}
	select {
	case k := <-n:
		t.Fatalf("AppendProduced returned %d before replication", k)
	default:
	}
	if err := p.SetHighWatermark(6); err != nil {
		t.Fatal(err)
	}
	if k := <-n; k != 1 {
		t.Fatalf("AppendProduced appended %d batches", k)
	}

	// Refused before the append: definite, nothing written.
	notLeader := errors.New("not the leader")
	repl.refuse.Store(&notLeader)
	if _, err := p.AppendBatch(context.Background(), batchOf(t, record.CodecNone, -1, 0, 0, 1)); !errors.Is(err, notLeader) || errors.Is(err, ErrUnknownOutcome) {
		t.Fatalf("refused by BeforeAppend: %v", err)
	}
	if k, err := p.AppendProduced(context.Background(), -1, bs); k != 0 || !errors.Is(err, notLeader) {
		t.Fatalf("AppendProduced refused by BeforeAppend: %d, %v", k, err)
	}
	if p.LogEndOffset() != 6 {
		t.Fatalf("log end %d: a refused append was written", p.LogEndOffset())
	}
}

// TestSingleNode: without a Replication (or with SingleNode) the log keeps
// its own high watermark and SetHighWatermark is refused.
func TestSingleNode(t *testing.T) {
	for _, repl := range []Replication{nil, SingleNode{}} {
		p := openT(t, nil, t.TempDir(), topic.Config{Flush: flushNone}, log.State{}, &Options{Replication: repl})
		if _, err := p.AppendBatch(context.Background(), batchOf(t, record.CodecNone, -1, 0, 0, 2)); err != nil {
			t.Fatal(err)
		}
		if p.HighWatermark() != 2 {
			t.Fatalf("%T: high watermark %d after an acknowledged append", repl, p.HighWatermark())
		}
		if err := p.SetHighWatermark(1); !errors.Is(err, log.ErrBadHighWatermark) {
			t.Fatalf("%T: SetHighWatermark: %v", repl, err)
		}
	}
}

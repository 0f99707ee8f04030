package folio

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/foliolog/folio/vfs/faultfs"
)

// Under FlushSync the sender writes a partition's next records while the
// last ones wait for their fsync, so that their fsync starts beside it
// rather than after it (group commits overlap): with the first fsync held,
// the second record is written, fsynced and acknowledged, in offset order
// after the first, whose acknowledgement waits for its own fsync.
func TestProducerWritesBesideAWaitingFsync(t *testing.T) {
	fs := faultfs.New()
	var (
		armed    atomic.Bool
		syncs    atomic.Int64
		writes   = make(chan struct{}, 16)
		blocked  = make(chan struct{})
		release  = make(chan struct{})
		releaser = sync.OnceFunc(func() { close(release) })
	)
	fs.SetHook(func(op faultfs.Op) error {
		if !armed.Load() || !strings.HasSuffix(op.Path, ".log") {
			return nil
		}
		switch op.Kind {
		case faultfs.OpWrite:
			writes <- struct{}{}
		case faultfs.OpSync:
			if syncs.Add(1) == 1 {
				close(blocked)
				<-release
			}
		}
		return nil
	})
	b := openT(t, t.TempDir(), faultOpts(fs))
	createTopicT(t, b, "t", TopicConfig{Flush: FlushSync})
	p := producerT(t, b, &ProducerOptions{Linger: -1})
	t.Cleanup(releaser) // first: Close waits for the held fsync
	ctx := context.Background()
	if _, _, err := p.Produce(ctx, &Record{Topic: "t", Value: []byte("before")}); err != nil {
		t.Fatal(err)
	}
	armed.Store(true)

	type ack struct {
		name   string
		offset int64
		err    error
	}
	acks := make(chan ack, 2)
	cb := func(r *Record, err error) { acks <- ack{string(r.Value), r.Offset, err} }
	p.ProduceAsync(ctx, &Record{Topic: "t", Value: []byte("first")}, cb)
	recvWithin(t, blocked, "the first record's fsync")
	p.ProduceAsync(ctx, &Record{Topic: "t", Value: []byte("second")}, cb)
	// Its write, while the first record's fsync is held.
	recvWithin(t, writes, "the first record's write")
	recvWithin(t, writes, "the second record's write, beside the held fsync")
	select {
	case a := <-acks:
		t.Fatalf("%s acknowledged before the first record's fsync ended", a.name)
	default:
	}
	releaser()
	for i, want := range []string{"first", "second"} {
		a := recvWithin(t, acks, "the acknowledgements")
		if a.err != nil || a.name != want || a.offset != int64(i+1) {
			t.Fatalf("acknowledgement %d: %s at %d (%v), want %s at %d", i, a.name, a.offset, a.err, want, i+1)
		}
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
}

// recvWithin receives from ch, failing the test after 30 seconds.
func recvWithin[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(30 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

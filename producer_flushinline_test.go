package folio

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
)

// TestFlushAppendsInline: a Flush whose ctx can never end appends a
// partition's buffered records on its own goroutine, in one batch, and
// runs their callbacks there before it returns; with a cancellable ctx the
// sender appends them. Over several partitions one is appended inline and
// the others by their senders, and every record is settled once, at rising
// offsets.
func TestFlushAppendsInline(t *testing.T) {
	b := openT(t, t.TempDir(), nil)
	createTopicT(t, b, "one", TopicConfig{Partitions: 1, Flush: FlushNone})
	p := producerT(t, b, nil) // the default Linger: records wait for Flush

	produce := func(topicName string, n int) (ran *sync.Map, offs []int64) {
		ran = &sync.Map{}
		offs = make([]int64, n)
		for i := range n {
			r := &Record{Topic: topicName, Key: fmt.Appendf(nil, "k%d", i), Value: fmt.Appendf(nil, "v%d", i)}
			p.ProduceAsync(context.Background(), r, func(r *Record, err error) {
				if err != nil {
					t.Error(err)
				}
				ran.Store(goid(), true)
				offs[i] = r.Offset
			})
		}
		return ran, offs
	}
	goroutines := func(m *sync.Map) (ids []uint64) {
		m.Range(func(k, _ any) bool { ids = append(ids, k.(uint64)); return true })
		return ids
	}

	ran, offs := produce("one", 100)
	before := p.inline.Load()
	if err := p.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if ids := goroutines(ran); len(ids) != 1 || ids[0] != goid() || p.inline.Load() != before+1 {
		t.Fatalf("callbacks ran on goroutines %v, the Flush caller is %d; %d inline appends", ids, goid(), p.inline.Load()-before)
	}
	for i, off := range offs {
		if off != int64(i) {
			t.Fatalf("record %d at offset %d", i, off)
		}
	}
	if bs := rawBatches(t, b, "one", 0); len(bs) != 1 {
		t.Fatalf("%d batches, want the 100 records in 1", len(bs))
	}

	// A ctx that can end: Flush may return before the append does, so the
	// sender appends.
	ran, _ = produce("one", 10)
	before = p.inline.Load()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if ids := goroutines(ran); len(ids) != 1 || ids[0] == goid() || p.inline.Load() != before {
		t.Fatalf("with a cancellable ctx, callbacks ran on goroutines %v (the Flush caller is %d); %d inline appends",
			ids, goid(), p.inline.Load()-before)
	}

	// Several partitions: one inline, the rest by senders.
	createTopicT(t, b, "four", TopicConfig{Partitions: 4, Flush: FlushNone})
	ran, _ = produce("four", 400)
	before = p.inline.Load()
	if err := p.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if ids := goroutines(ran); len(ids) < 2 || p.inline.Load() != before+1 {
		t.Fatalf("four partitions: callbacks ran on goroutines %v; %d inline appends, want 1", ids, p.inline.Load()-before)
	}
	total := int64(0)
	for i := range int32(4) {
		part, err := b.Partition("four", i)
		if err != nil {
			t.Fatal(err)
		}
		total += part.LogEndOffset()
	}
	if total != 400 {
		t.Fatalf("four partitions hold %d records, want 400", total)
	}
}

// TestFlushInlineCallbackProduces: a callback run by an inline Flush may
// produce again, to a topic the producer has not met yet (which takes the
// producer's topic lock, free while Flush appends) and to the partition
// whose append it runs in (whose sending role Flush holds): nothing
// deadlocks, and the next Flush settles what they produced.
func TestFlushInlineCallbackProduces(t *testing.T) {
	b := openT(t, t.TempDir(), nil)
	createTopicT(t, b, "a", TopicConfig{Partitions: 1, Flush: FlushNone})
	createTopicT(t, b, "b", TopicConfig{Partitions: 1, Flush: FlushNone})
	p := producerT(t, b, nil)
	var (
		mu      sync.Mutex
		settled = map[string]int{}
	)
	note := func(topicName string) func(*Record, error) {
		return func(_ *Record, err error) {
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			settled[topicName]++
			mu.Unlock()
		}
	}
	for i := range 5 {
		p.ProduceAsync(context.Background(), &Record{Topic: "a", Value: value("a", i)}, func(r *Record, err error) {
			note("a")(r, err)
			p.ProduceAsync(context.Background(), &Record{Topic: "b", Value: r.Value}, note("b"))
			p.ProduceAsync(context.Background(), &Record{Topic: "a", Value: r.Value}, note("a again"))
		})
	}
	before := p.inline.Load()
	if err := p.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := p.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if settled["a"] != 5 || settled["b"] != 5 || settled["a again"] != 5 || p.inline.Load() == before {
		t.Fatalf("settled %v, want 5 of each; %d inline appends", settled, p.inline.Load()-before)
	}
}

// TestLingerDefaults: Linger 0 is DefaultLinger, a negative Linger is
// none; a synchronous Produce never lingers, whatever Linger says (with
// an hour's linger it returns), with a ctx that can end or not.
func TestLingerDefaults(t *testing.T) {
	if got := (&ProducerOptions{}).withDefaults().Linger; got != DefaultLinger {
		t.Fatalf("default Linger %v, want %v", got, DefaultLinger)
	}
	if got := (&ProducerOptions{Linger: -1}).withDefaults().Linger; got != 0 {
		t.Fatalf("a negative Linger is %v inside, want 0 (none)", got)
	}
	b := openT(t, t.TempDir(), nil)
	createTopicT(t, b, "t", TopicConfig{Partitions: 1, Flush: FlushNone})
	p := producerT(t, b, &ProducerOptions{Linger: time.Hour})
	// A record lingers in the open batch; a Produce joins it and takes the
	// batch out with it.
	acked := make(chan error, 1)
	p.ProduceAsync(context.Background(), &Record{Topic: "t", Value: []byte("lingering")}, func(_ *Record, err error) { acked <- err })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, off, err := p.Produce(ctx, &Record{Topic: "t", Value: []byte("sync")}); err != nil || off != 1 {
		t.Fatalf("Produce with a cancellable ctx under an hour's linger: %d, %v", off, err)
	}
	if err := <-acked; err != nil {
		t.Fatal(err)
	}
	if _, off, err := p.Produce(context.Background(), &Record{Topic: "t", Value: []byte("sync")}); err != nil || off != 2 {
		t.Fatalf("Produce under an hour's linger: %d, %v", off, err)
	}
	// A negative Linger appends a ProduceAsync record with no Flush.
	q := producerT(t, b, &ProducerOptions{Linger: -1})
	q.ProduceAsync(context.Background(), &Record{Topic: "t", Value: []byte("at once")}, func(_ *Record, err error) { acked <- err })
	if err := <-acked; err != nil {
		t.Fatal(err)
	}
}

// TestCloseSettlesRecreatedTopicsRecords: a record lingering for a topic
// that is then deleted and created again under its name (the Producer's
// view moves to the new partitions at its next record for the name) is
// still settled by Close, which waits for it: with an error, since its
// partition was deleted. The record for the new topic is acknowledged.
func TestCloseSettlesRecreatedTopicsRecords(t *testing.T) {
	b := openT(t, t.TempDir(), nil)
	createTopicT(t, b, "t", TopicConfig{Partitions: 1, Flush: FlushNone})
	p := producerT(t, b, &ProducerOptions{Linger: time.Hour})
	var old, fresh error
	var oldDone, freshDone bool
	p.ProduceAsync(context.Background(), &Record{Topic: "t", Value: []byte("old")}, func(_ *Record, err error) { old, oldDone = err, true })
	if err := b.DeleteTopic("t"); err != nil {
		t.Fatal(err)
	}
	createTopicT(t, b, "t", TopicConfig{Partitions: 1, Flush: FlushNone})
	p.ProduceAsync(context.Background(), &Record{Topic: "t", Value: []byte("new")}, func(_ *Record, err error) { fresh, freshDone = err, true })
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if !oldDone || old == nil {
		t.Fatalf("the deleted topic's lingering record after Close: settled %v, err %v; want settled with an error", oldDone, old)
	}
	if !freshDone || fresh != nil {
		t.Fatalf("the new topic's record after Close: settled %v, err %v", freshDone, fresh)
	}
}

package folio

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"
)

// goid returns the running goroutine's id, read from its stack header
// ("goroutine 123 [running]:"), for tests that check where code ran.
func goid() uint64 {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	b = bytes.TrimPrefix(b, []byte("goroutine "))
	id, _ := strconv.ParseUint(string(b[:bytes.IndexByte(b, ' ')]), 10, 64)
	return id
}

// TestProduceAppendsInline: a synchronous Produce whose ctx can never end
// may append its record on its own goroutine. Mixed with ProduceAsync
// callers and Produce callers with a cancellable ctx on one partition, it
// keeps every promise of the sender's path: every record is acknowledged
// once, each caller's records at rising offsets in the order produced, the
// partition's offsets without a gap, and no ProduceAsync callback ever
// runs on a Produce caller's goroutine. It also checks that the inline
// path was taken at all (a Produce with nothing else pending appended on
// its own goroutine).
func TestProduceAppendsInline(t *testing.T) {
	b := openT(t, t.TempDir(), nil)
	createTopicT(t, b, "inline", TopicConfig{Partitions: 1, Flush: FlushNone})
	p := producerT(t, b, &ProducerOptions{Linger: -1}) // no linger: a sender at work for every record

	// Alone, with a ctx that cannot end: the append runs on the caller's
	// goroutine. With a cancellable ctx it goes to the sender, whose wait
	// the ctx may abandon.
	rec := Record{Topic: "inline", Value: []byte("alone")}
	if _, off, err := p.Produce(context.Background(), &rec); err != nil || off != 0 || p.inline.Load() != 1 {
		t.Fatalf("Produce = %d, %v; %d inline appends, want 1", off, err, p.inline.Load())
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, off, err := p.Produce(ctx, &rec); err != nil || off != 1 || p.inline.Load() != 1 {
		t.Fatalf("Produce with a cancellable ctx = %d, %v; %d inline appends, want 1", off, err, p.inline.Load())
	}

	// A Flush between counting itself and making the open batch due: a
	// ProduceAsync record lingers in it when a Produce comes. The batch is
	// due (flushing), but holds another caller's record: the Produce must
	// leave it to the sender, whose goroutine runs that record's callback.
	hp := producerT(t, b, &ProducerOptions{Linger: time.Hour})
	ranOn := make(chan uint64, 1)
	lingering := Record{Topic: "inline", Value: []byte("lingering")}
	hp.ProduceAsync(context.Background(), &lingering, func(_ *Record, err error) {
		if err != nil {
			t.Error(err)
		}
		ranOn <- goid()
	})
	hp.flushing.Add(1)
	before := hp.inline.Load()
	if _, _, err := hp.Produce(context.Background(), &rec); err != nil {
		t.Fatal(err)
	}
	hp.flushing.Add(-1)
	if id := <-ranOn; id == goid() || hp.inline.Load() != before {
		t.Fatalf("a Produce took a batch holding another caller's record (its callback ran on goroutine %d, the caller's is %d)", id, goid())
	}

	// Mixed callers, with Linger 0 (a sender at work for every record)
	// and with Linger and a caller flushing over and over (records wait in
	// the open batch, which a flush makes due: a Produce must not take a
	// batch that holds others' records).
	mixed(t, p, "inline")
	createTopicT(t, b, "inline-linger", TopicConfig{Partitions: 1, Flush: FlushNone})
	lp := producerT(t, b, &ProducerOptions{Linger: 2 * time.Millisecond})
	stop := make(chan struct{})
	var flusher sync.WaitGroup
	flusher.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if err := lp.Flush(context.Background()); err != nil {
				t.Error(err)
				return
			}
		}
	})
	mixed(t, lp, "inline-linger")
	close(stop)
	flusher.Wait()
}

// mixed runs synchronous Produce callers (ctx that cannot end, and
// cancellable), and ProduceAsync callers on topic's one partition, and
// checks the promises TestProduceAppendsInline lists.
func mixed(t *testing.T, p *Producer, topicName string) {
	t.Helper()
	start, err := p.b.Partition(topicName, 0)
	if err != nil {
		t.Fatal(err)
	}
	first := start.LogEndOffset()
	const (
		syncers  = 4
		cancels  = 2
		asyncers = 4
		each     = 300
	)
	var (
		mu       sync.Mutex
		produced = map[uint64]bool{} // goroutines that call Produce
		bad      []string
		offsets  = map[string][]int64{} // per caller, in produce order
	)
	note := func(format string, args ...any) {
		mu.Lock()
		bad = append(bad, fmt.Sprintf(format, args...))
		mu.Unlock()
	}
	var wg sync.WaitGroup
	for g := range syncers + cancels {
		wg.Go(func() {
			mu.Lock()
			produced[goid()] = true
			mu.Unlock()
			name := fmt.Sprintf("sync%d", g)
			var ctx context.Context = context.Background()
			if g >= syncers {
				c, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				ctx = c
			}
			for i := range each {
				r := Record{Topic: topicName, Value: fmt.Appendf(nil, "%s-%d", name, i)}
				_, off, err := p.Produce(ctx, &r)
				if err != nil {
					note("%s record %d: %v", name, i, err)
					return
				}
				mu.Lock()
				offsets[name] = append(offsets[name], off)
				mu.Unlock()
			}
		})
	}
	for g := range asyncers {
		wg.Go(func() {
			name := fmt.Sprintf("async%d", g)
			recs := make([]Record, each)
			got := make([]int64, each)
			// Its own WaitGroup: one shared by the callers would take an
			// Add from 0 while another caller's Wait ran (a misuse the race
			// detector reports as a race on the WaitGroup).
			var acked sync.WaitGroup
			acked.Add(each)
			for i := range recs {
				recs[i] = Record{Topic: topicName, Value: fmt.Appendf(nil, "%s-%d", name, i)}
				p.ProduceAsync(context.Background(), &recs[i], func(r *Record, err error) {
					defer acked.Done()
					id := goid()
					mu.Lock()
					onProducer := produced[id]
					mu.Unlock()
					if onProducer {
						note("%s record %d: its callback ran on a Produce caller's goroutine %d", name, i, id)
					}
					if err != nil {
						note("%s record %d: %v", name, i, err)
					}
					got[i] = r.Offset
				})
			}
			acked.Wait()
			mu.Lock()
			offsets[name] = got
			mu.Unlock()
		})
	}
	wg.Wait()
	if err := p.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, s := range bad {
		t.Error(s)
	}
	seen := map[int64]string{}
	for name, offs := range offsets {
		for i, off := range offs {
			if i > 0 && off <= offs[i-1] {
				t.Errorf("%s: record %d at offset %d after %d", name, i, off, offs[i-1])
			}
			if other, dup := seen[off]; dup {
				t.Errorf("offset %d acknowledged to %s and %s", off, other, name)
			}
			seen[off] = name
		}
	}
	if want := (syncers + cancels + asyncers) * each; len(seen) != want {
		t.Errorf("%d offsets acknowledged, want %d", len(seen), want)
	}
	for off := first; off < first+int64(len(seen)); off++ {
		if _, ok := seen[off]; !ok {
			t.Errorf("offset %d acknowledged to no one", off)
			break
		}
	}
}

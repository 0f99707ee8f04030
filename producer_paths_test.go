package folio

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/foliolog/folio/topic"
)

// TestVarintLen checks the branch-free varintLen against the encoder's
// length, at every boundary of a byte and at the extremes.
func TestVarintLen(t *testing.T) {
	vals := []int64{0, 1, -1, math.MaxInt64, math.MinInt64, math.MaxInt32, math.MinInt32}
	for shift := range 64 {
		v := int64(1) << shift
		vals = append(vals, v, v-1, v+1, -v, -v-1, -v+1)
	}
	var buf [binary.MaxVarintLen64]byte
	for _, v := range vals {
		if got, want := varintLen(v), binary.PutVarint(buf[:], v); got != want {
			t.Errorf("varintLen(%d) = %d, want %d", v, got, want)
		}
	}
}

// TestProducerRecordAboveMemoryCap: a record larger than MaxBufferedBytes
// counts as the cap. It is produced at once when nothing else is buffered
// (no wait, not counted as blocked), holds the whole cap while buffered, so
// that the next record waits, and gives it all back once settled.
func TestProducerRecordAboveMemoryCap(t *testing.T) {
	b := openT(t, t.TempDir(), nil)
	createTopicT(t, b, "t", TopicConfig{Flush: FlushNone})
	const limit = 1024
	p := producerT(t, b, &ProducerOptions{MaxBufferedBytes: limit, Linger: time.Hour})
	errc := make(chan error, 1)
	big := &Record{Topic: "t", Value: make([]byte, 4*limit)}
	p.ProduceAsync(context.Background(), big, func(_ *Record, err error) { errc <- err })
	if used := p.mem.used.Load(); used != limit {
		t.Fatalf("a record above the cap holds %d bytes, want the cap (%d)", used, limit)
	}
	if st := b.Stats(); st.ProduceBlocked != 0 {
		t.Fatalf("Stats.ProduceBlocked %d: the record above the cap waited with nothing buffered", st.ProduceBlocked)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	small := make(chan error, 1)
	p.ProduceAsync(ctx, &Record{Topic: "t", Value: []byte("x")}, func(_ *Record, err error) { small <- err })
	if err := <-small; !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a record behind one holding the cap: %v, want DeadlineExceeded", err)
	}
	if err := p.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatalf("the record above the cap: %v", err)
	}
	if used := p.mem.used.Load(); used != 0 {
		t.Fatalf("%d bytes still held after Flush", used)
	}
	if _, _, err := p.Produce(context.Background(), &Record{Topic: "t", Value: []byte("y")}); err != nil {
		t.Fatal(err)
	}
}

// TestCompressionSplitKeepsTimestamps: the halves of a batch split after
// compression are rebuilt with each record's timestamp as first encoded,
// its own or, for a record produced without one, its batch's opening time.
func TestCompressionSplitKeepsTimestamps(t *testing.T) {
	clock := newTestClock(time.UnixMilli(1_700_000_000_000))
	b := openT(t, t.TempDir(), &Options{Now: clock.Now, CheckpointInterval: -1, RetentionCheckInterval: -1})
	createTopicT(t, b, "t", TopicConfig{Flush: FlushNone, MaxMessageBytes: 1024, Compression: topic.CompressionSnappy})
	p := producerT(t, b, &ProducerOptions{Linger: time.Hour}) // fill whole batches
	rng := rand.New(rand.NewPCG(testSeed(t), 5))
	opened := clock.Now()
	var failed failures
	cb := failed.callback
	const n = 40
	own := func(i int) time.Time { return time.UnixMilli(1_600_000_000_000 + int64(i)) }
	for i := range n {
		v := make([]byte, 180) // random bytes grow under compression
		for j := range v {
			v[j] = byte(rng.Uint32())
		}
		v[0] = byte(i)
		rec := &Record{Topic: "t", Value: v}
		if i%2 == 1 {
			rec.Timestamp = own(i)
		}
		p.ProduceAsync(context.Background(), rec, cb)
		clock.Advance(time.Millisecond) // the batches' opening time is read when each opens
	}
	if err := p.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := failed.get(); err != nil {
		t.Fatal(err)
	}
	// A record produced without a timestamp carries the time its pending
	// batch opened: the produce time of the batch's first record, opened
	// plus j ms for record j, the same for the whole batch. A pending
	// batch split after compression is stored as several batches, each
	// rebuilt: records produced without a timestamp in two stored batches
	// then carry the same time, which happens only after a split (each
	// pending batch opened at its own millisecond).
	bts := rawBatches(t, b, "t", 0)
	batchOf := func(off int64) int {
		for k, bt := range bts {
			if off >= bt.BaseOffset() && off <= bt.LastOffset() {
				return k
			}
		}
		t.Fatalf("offset %d in no batch", off)
		return -1
	}
	c := consumerT(t, b, nil)
	if err := c.Assign(Assignment{Topic: "t"}); err != nil {
		t.Fatal(err)
	}
	stored := map[int64]map[int]bool{} // a batch-opening time -> the stored batches holding it
	last := opened
	for i, r := range pollN(t, c, n) {
		if int(r.Value[0]) != i {
			t.Fatalf("record %d holds %d", i, r.Value[0])
		}
		if i%2 == 1 {
			if !r.Timestamp.Equal(own(i)) {
				t.Errorf("record %d: timestamp %v, want its own %v", i, r.Timestamp, own(i))
			}
			continue
		}
		at := r.Timestamp
		if at.Before(last) || at.After(opened.Add(time.Duration(i)*time.Millisecond)) || at.Sub(opened)%time.Millisecond != 0 {
			t.Fatalf("record %d: timestamp %v is no opening time of its batch (from %v to %v)", i, at, last, opened.Add(time.Duration(i)*time.Millisecond))
		}
		last = at
		if stored[at.UnixMilli()] == nil {
			stored[at.UnixMilli()] = map[int]bool{}
		}
		stored[at.UnixMilli()][batchOf(r.Offset)] = true
	}
	split := false
	for _, in := range stored {
		split = split || len(in) > 1
	}
	if !split {
		t.Fatalf("no pending batch was split after compression (%d batches stored): nothing was rebuilt", len(bts))
	}
}

// TestMemGateNoLostWakeup: producers contending for a gate with room for
// one of them at a time never all sleep with nothing held. With a failed
// fast path that added its bytes and took them back, every contender
// could see the gate full of such transient adds, fail, and wait for a
// release nobody holding anything would make.
func TestMemGateNoLostWakeup(t *testing.T) {
	b := openT(t, t.TempDir(), nil)
	var g memGate
	g.init(10)
	var closed atomic.Bool
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const workers, rounds = 8, 3000
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range rounds {
				if err := g.acquire(ctx, 6, &closed, b); err != nil {
					errs <- err
					return
				}
				if u := g.used.Load(); u > g.limit {
					errs <- fmt.Errorf("used %d over the limit %d", u, g.limit)
					return
				}
				g.release(6)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if u := g.used.Load(); u != 0 {
		t.Fatalf("used %d after every release", u)
	}
}

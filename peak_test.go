package folio

import (
	"context"
	"encoding/binary"
	"fmt"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestPeakShaving: producers write records as fast as they can while one
// consumer is throttled. The backlog must live on disk: the producers never
// block on their memory cap, the process's heap stays under a fixed bound
// far below the backlog's size, and the consumer eventually reads every
// record, in order per partition. Producer throughput with and without the
// slow consumer is reported, not asserted.
func TestPeakShaving(t *testing.T) {
	records := 1_000_000
	if testing.Short() {
		records = 200_000
	}
	const (
		producers  = 2
		partitions = 4
		valueSize  = 100
		memCap     = 8 << 20
		// heapBound is fixed, whatever the record count: the producers' cap,
		// the consumer's fetch buffers, and room for the collector's slack.
		heapBound = 32 << 20
	)
	b := openT(t, t.TempDir(), &Options{CheckpointInterval: -1})
	createTopicT(t, b, "peak", TopicConfig{Partitions: partitions, Flush: FlushNone, SegmentBytes: 16 << 20})

	defer debug.SetGCPercent(debug.SetGCPercent(50))
	runtime.GC()
	var peakHeap atomic.Uint64
	stopSampler := make(chan struct{})
	samplerDone := make(chan struct{})
	go func() {
		defer close(samplerDone)
		var ms runtime.MemStats
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapAlloc > peakHeap.Load() {
				peakHeap.Store(ms.HeapAlloc)
			}
			select {
			case <-stopSampler:
				return
			case <-tick.C:
			}
		}
	}()

	// produce writes n records per producer goroutine (tagged with round)
	// and returns the records per second.
	produce := func(round byte, n int) float64 {
		p := producerT(t, b, &ProducerOptions{MaxBufferedBytes: memCap})
		start := time.Now()
		var wg sync.WaitGroup
		var failed atomic.Value
		for g := range producers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				cb := func(_ *Record, err error) {
					if err != nil {
						failed.Store(err)
					}
				}
				for i := range n {
					v := make([]byte, valueSize)
					v[0], v[1] = round, byte(g)
					binary.BigEndian.PutUint64(v[2:], uint64(i))
					// The key spreads records over the partitions; one
					// goroutine's records to one partition keep their order.
					p.ProduceAsync(context.Background(), &Record{Topic: "peak", Key: v[:10], Value: v}, cb)
				}
			}()
		}
		wg.Wait()
		if err := p.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err, _ := failed.Load().(error); err != nil {
			t.Fatalf("round %d: produce failed: %v", round, err)
		}
		rate := float64(n*producers) / time.Since(start).Seconds()
		_ = p.Close()
		return rate
	}

	blockedBefore := b.Stats().ProduceBlocked
	alone := produce(0, records/producers/2)

	// The slow consumer reads from the start while the second round is
	// produced; it sleeps between polls until the producers are done.
	c := consumerT(t, b, &ConsumerOptions{MaxPollRecords: 200})
	for part := range int32(partitions) {
		_ = c.Assign(Assignment{Topic: "peak", Partition: part})
	}
	var throttled atomic.Bool
	throttled.Store(true)
	total := records / producers / 2 * producers * 2
	type key struct {
		round, producer byte
		partition       int32
	}
	consumed := make(chan error, 1)
	go func() {
		last := map[key]int64{}
		seen := 0
		lastOffset := map[int32]int64{}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		for seen < total {
			recs, err := c.Poll(ctx)
			if err != nil {
				consumed <- fmt.Errorf("after %d records: %w", seen, err)
				return
			}
			for _, r := range recs {
				k := key{r.Value[0], r.Value[1], r.Partition}
				seq := int64(binary.BigEndian.Uint64(r.Value[2:]))
				if prev, ok := last[k]; ok && seq <= prev {
					consumed <- fmt.Errorf("partition %d: producer %d round %d sequence %d after %d", r.Partition, k.producer, k.round, seq, prev)
					return
				}
				if prev, ok := lastOffset[r.Partition]; ok && r.Offset <= prev {
					consumed <- fmt.Errorf("partition %d: offset %d after %d", r.Partition, r.Offset, prev)
					return
				}
				last[k], lastOffset[r.Partition] = seq, r.Offset
				seen++
			}
			if throttled.Load() {
				time.Sleep(10 * time.Millisecond)
			}
		}
		consumed <- nil
	}()
	withSlow := produce(1, records/producers/2)
	backlog := b.Stats()
	var lagAtEnd int64
	for _, ps := range backlog.Partitions {
		for _, cl := range ps.Consumers {
			lagAtEnd += cl.Lag
		}
	}
	throttled.Store(false)
	if err := <-consumed; err != nil {
		t.Fatal(err)
	}
	close(stopSampler)
	<-samplerDone

	blocked := b.Stats().ProduceBlocked - blockedBefore
	t.Logf("%d records of %d bytes; producer throughput alone %.0f records/s, with a throttled consumer %.0f records/s",
		total, valueSize, alone, withSlow)
	t.Logf("consumer backlog when the producers finished: %d records (~%d MiB on disk); peak heap %d MiB (bound %d MiB); produce calls blocked on the memory cap: %d",
		lagAtEnd, lagAtEnd*int64(valueSize+20)>>20, peakHeap.Load()>>20, heapBound>>20, blocked)
	if lagAtEnd*int64(valueSize) < 2*memCap {
		t.Fatalf("the consumer kept up (backlog %d records): the backlog could have fit the producers' memory; the test shows nothing", lagAtEnd)
	}
	if blocked != 0 {
		t.Fatalf("producers blocked %d times on the memory cap", blocked)
	}
	if peak := peakHeap.Load(); peak > heapBound {
		t.Fatalf("peak heap %d MiB above the bound %d MiB", peak>>20, heapBound>>20)
	}
}

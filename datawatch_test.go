package folio

import (
	"context"
	"runtime"
	"testing"
	"time"
)

func awaitWake(t *testing.T, w *dataWaiter, want bool, what string) {
	t.Helper()
	select {
	case <-w.ch:
		if !want {
			t.Fatalf("%s: woke too early", what)
		}
	case <-time.After(50 * time.Millisecond):
		if want {
			t.Fatalf("%s: not woken", what)
		}
	}
}

func TestDataWatch(t *testing.T) {
	b := openT(t, t.TempDir(), nil)
	createTopicT(t, b, "t", TopicConfig{Flush: FlushNone})
	p, _ := b.lookup("t", 0)
	pr := producerT(t, b, nil)

	high, low, now := newDataWaiter(), newDataWaiter(), newDataWaiter()
	p.watch.register(high, 5)
	p.watch.register(low, 2) // lower than what the goroutine waits for: it replans
	produceN(t, pr, "t", "w", 3)
	awaitWake(t, low, true, "waiter at 2 after 3 records")
	awaitWake(t, high, false, "waiter at 5 after 3 records")
	p.watch.register(now, 1) // already there
	awaitWake(t, now, true, "waiter at 1")
	produceN(t, pr, "t", "w", 3)
	awaitWake(t, high, true, "waiter at 5 after 6 records")

	// Unregistered waiters are not woken; the goroutine stops when no one waits.
	gone := newDataWaiter()
	p.watch.register(gone, 100)
	p.watch.unregister(gone)
	produceN(t, pr, "t", "w", 1)
	awaitWake(t, gone, false, "unregistered waiter")

	// Closing the partition wakes waiters and joins the goroutine.
	last := newDataWaiter()
	p.watch.register(last, 1000)
	if err := b.DeleteTopic("t"); err != nil {
		t.Fatal(err)
	}
	awaitWake(t, last, true, "waiter at close")
	p.watch.mu.Lock()
	running := p.watch.running
	p.watch.mu.Unlock()
	if running {
		t.Fatal("watch goroutine still running after close")
	}
	late := newDataWaiter()
	p.watch.register(late, 1000)
	awaitWake(t, late, true, "waiter registered after close")
}

// TestWaitManyPartitions: consumers waiting on many partitions park one
// goroutine per partition in all, not one per consumer and partition, and
// a record in any partition wakes every one of them.
func TestWaitManyPartitions(t *testing.T) {
	const parts, consumers = 64, 4
	b := openT(t, t.TempDir(), nil)
	createTopicT(t, b, "t", TopicConfig{Partitions: parts, Flush: FlushNone})
	pr := producerT(t, b, &ProducerOptions{ManualPartitioning: true})
	base := runtime.NumGoroutine()
	results := make(chan Record, consumers)
	errs := make(chan error, consumers)
	for range consumers {
		c := consumerT(t, b, nil)
		for p := range int32(parts) {
			_ = c.Assign(Assignment{Topic: "t", Partition: p})
		}
		go func() {
			recs, err := c.Poll(context.Background())
			if err != nil {
				errs <- err
				return
			}
			results <- recs[0]
		}()
	}
	// Let them all park, then count.
	deadline := time.Now().Add(5 * time.Second)
	for {
		ready := true
		for p := range int32(parts) {
			pp, _ := b.lookup("t", p)
			pp.watch.mu.Lock()
			if len(pp.watch.waiters) != consumers {
				ready = false
			}
			pp.watch.mu.Unlock()
		}
		if ready {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("consumers did not all register")
		}
		time.Sleep(time.Millisecond)
	}
	if extra := runtime.NumGoroutine() - base; extra > parts+consumers+8 {
		t.Fatalf("%d goroutines for %d consumers waiting on %d partitions", extra, consumers, parts)
	}
	if _, _, err := pr.Produce(context.Background(), &Record{Topic: "t", Partition: 37, Value: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	for range consumers {
		select {
		case r := <-results:
			if r.Partition != 37 {
				t.Fatalf("woke with partition %d", r.Partition)
			}
		case err := <-errs:
			t.Fatal(err)
		case <-time.After(10 * time.Second):
			t.Fatal("a consumer was not woken")
		}
	}
}

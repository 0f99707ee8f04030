package folio

import (
	"context"
	"runtime"
	"testing"
	"time"
)

// TestWaitManyPartitions: consumers waiting on many partitions park no
// goroutine per partition (each log closes the channel it gave them), and
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
	for p := range int32(parts) {
		waitParked(t, b, "t", p, consumers)
	}
	if extra := runtime.NumGoroutine() - base; extra > consumers+4 {
		t.Fatalf("%d goroutines for %d consumers waiting on %d partitions", extra, consumers, parts)
	}
	select {
	case r := <-results:
		t.Fatalf("a Poll returned %+v with no record produced", r)
	case err := <-errs:
		t.Fatal(err)
	default:
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

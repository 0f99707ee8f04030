package folio

import (
	"errors"
	"runtime"
	"testing"
	"time"
)

// TestClosedBrokerIsCollected: nothing outside a Broker keeps it alive once
// it is closed and dropped, not even group calls made after Close (the
// consumer-group state used to sit in a package-level map keyed by
// *Broker, which such a call refilled for ever).
func TestClosedBrokerIsCollected(t *testing.T) {
	collected := make(chan struct{})
	func() {
		b, err := Open(t.TempDir(), &Options{CheckpointInterval: -1})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.GroupCoordinator(); err != nil {
			t.Fatal(err)
		}
		createTopicT(t, b, "t", TopicConfig{Flush: FlushNone})
		p, err := b.NewProducer(nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := p.Produce(t.Context(), &Record{Topic: "t", Value: []byte("v")}); err != nil {
			t.Fatal(err)
		}
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := b.GroupCoordinator(); !errors.Is(err, ErrClosed) {
			t.Fatalf("GroupCoordinator after Close: %v, want ErrClosed", err)
		}
		_ = b.GroupStats()
		if _, err := b.GroupLag("g"); !errors.Is(err, ErrClosed) {
			t.Fatalf("GroupLag after Close: %v, want ErrClosed", err)
		}
		runtime.AddCleanup(b, func(ch chan struct{}) { close(ch) }, collected)
	}()
	for range 100 {
		runtime.GC()
		select {
		case <-collected:
			return
		case <-time.After(10 * time.Millisecond): // the cleanup runs on its own goroutine after a cycle
		}
	}
	t.Fatal("a closed, unreachable Broker was not collected after 100 collections")
}

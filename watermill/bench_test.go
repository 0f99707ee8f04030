package foliowatermill_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/foliolog/folio"
	foliowatermill "github.com/foliolog/folio/watermill"
)

// BenchmarkRoundTrip publishes b.N messages (in calls of 100) and receives
// and acks them all, without a group (nothing committed) and with one (a
// durable commit after every Ack, or per CommitInterval), on a FlushSync
// topic.
func BenchmarkRoundTrip(b *testing.B) {
	for _, bc := range []struct {
		name     string
		group    string
		interval time.Duration
	}{
		{"no-group", "", 0},
		{"group-commit-per-ack", "g", 0},
		{"group-commit-interval-100ms", "g", 100 * time.Millisecond},
	} {
		b.Run(bc.name, func(b *testing.B) {
			br, err := folio.Open(b.TempDir(), nil)
			if err != nil {
				b.Fatal(err)
			}
			defer br.Close()
			pub, err := foliowatermill.NewPublisher(br, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer pub.Close()
			sub, err := foliowatermill.NewSubscriber(br, &foliowatermill.SubscriberOptions{ConsumerGroup: bc.group, CommitInterval: bc.interval})
			if err != nil {
				b.Fatal(err)
			}
			defer sub.Close()
			ch, err := sub.Subscribe(context.Background(), "bench")
			if err != nil {
				b.Fatal(err)
			}
			payload := make([]byte, 100)
			b.ResetTimer()
			done := make(chan struct{})
			go func() {
				defer close(done)
				for range b.N {
					(<-ch).Ack()
				}
			}()
			for i := 0; i < b.N; i += 100 {
				var msgs []*message.Message
				for j := i; j < min(i+100, b.N); j++ {
					msgs = append(msgs, message.NewMessage(fmt.Sprint(j), payload))
				}
				if err := pub.Publish("bench", msgs...); err != nil {
					b.Fatal(err)
				}
			}
			<-done
		})
	}
}

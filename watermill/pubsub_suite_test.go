package foliowatermill_test

import (
	"errors"
	"testing"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/pubsub/tests"
	"github.com/foliolog/folio"
	foliowatermill "github.com/foliolog/folio/watermill"
)

// TestPubSub runs Watermill's universal Pub/Sub suite against one Broker
// that every Publisher and Subscriber of the suite shares, as the
// instances of a service share its data directory. Topics are created on
// first use with one partition, so the order the suite checks is the
// partition's; ExactlyOnceDelivery is false: delivery is at least once.
// CI runs it with -short (go test -short); without -short it runs the
// suite's full message counts.
func TestPubSub(t *testing.T) {
	runSuite(t, folio.TopicConfig{}, true)
}

// TestPubSubPartitioned runs the suite again on topics of four partitions,
// where order holds per partition only (by key, and the default key is the
// UUID): GuaranteedOrder is false, the rest as in TestPubSub.
func TestPubSubPartitioned(t *testing.T) {
	runSuite(t, folio.TopicConfig{Partitions: 4}, false)
}

func runSuite(t *testing.T, cfg folio.TopicConfig, ordered bool) {
	b, err := folio.Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Error(err)
		}
	})
	constructor := func(t *testing.T, group string) (message.Publisher, message.Subscriber) {
		pub, err := foliowatermill.NewPublisher(b, &foliowatermill.PublisherOptions{TopicConfig: cfg})
		if err != nil {
			t.Fatal(err)
		}
		sub, err := foliowatermill.NewSubscriber(b, &foliowatermill.SubscriberOptions{ConsumerGroup: group, TopicConfig: cfg})
		if err != nil {
			t.Fatal(err)
		}
		// The suite does not close every subscriber it makes (its in-order
		// test closes its multiplied subscriber before subscribing): close
		// them all at the end of the test that made them. Close is
		// idempotent.
		t.Cleanup(func() {
			if err := errors.Join(pub.Close(), sub.Close()); err != nil {
				t.Error(err)
			}
		})
		return pub, sub
	}
	tests.TestPubSub(t, tests.Features{
		ConsumerGroups:                   true,
		ExactlyOnceDelivery:              false,
		GuaranteedOrder:                  ordered,
		Persistent:                       true,
		NewSubscriberReceivesOldMessages: true,
	},
		func(t *testing.T) (message.Publisher, message.Subscriber) { return constructor(t, "") },
		constructor,
	)
}

package foliowatermill_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"sync"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/foliolog/folio"
	foliowatermill "github.com/foliolog/folio/watermill"
)

// handleOrder is a service's handler: it knows Watermill's message type and
// nothing of the back end.
func handleOrder(msg *message.Message) error {
	fmt.Printf("order %s: %s\n", msg.Metadata.Get("order"), msg.Payload)
	return nil
}

// The handler wired to Folio through a Watermill router. Moving the service
// to an Apache Kafka cluster replaces only the two constructors; the
// handler, the router and the topic stay. The program
// examples/watermillkafka (a module of its own, so that this one does not
// require watermill-kafka) runs one service both ways: on Folio by
// default, on a Kafka cluster through watermill-kafka with -kafka.
func Example_router() {
	dir, err := os.MkdirTemp("", "folio-watermill-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	b, err := folio.Open(dir, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer b.Close()
	logger := watermill.NopLogger{}

	// The back end: Folio.
	sub, err := foliowatermill.NewSubscriber(b, &foliowatermill.SubscriberOptions{ConsumerGroup: "billing", Logger: logger})
	if err != nil {
		log.Fatal(err)
	}
	defer sub.Close() // the router closes it too; Close is idempotent
	pub, err := foliowatermill.NewPublisher(b, &foliowatermill.PublisherOptions{Logger: logger})
	if err != nil {
		log.Fatal(err)
	}
	defer pub.Close()

	router, err := message.NewRouter(message.RouterConfig{}, logger)
	if err != nil {
		log.Fatal(err)
	}
	var handled sync.WaitGroup
	handled.Add(3)
	router.AddConsumerHandler("billing", "orders", sub, func(msg *message.Message) error {
		defer handled.Done()
		return handleOrder(msg)
	})
	ctx, stop := context.WithCancel(context.Background())
	running := make(chan error, 1)
	go func() { running <- router.Run(ctx) }()
	<-router.Running()

	for i, item := range []string{"book", "lamp", "chair"} {
		msg := message.NewMessage(watermill.NewUUID(), []byte(item))
		msg.Metadata.Set("order", fmt.Sprint(i+1))
		if err := pub.Publish("orders", msg); err != nil {
			log.Fatal(err)
		}
	}
	handled.Wait()
	stop() // the router closes its subscriber
	if err := <-running; err != nil {
		log.Fatal(err)
	}
	// Output:
	// order 1: book
	// order 2: lamp
	// order 3: chair
}

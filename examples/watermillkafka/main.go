// Command watermillkafka runs one Watermill service twice over: its
// handler, router and topics are the same whether the messages go through
// an embedded Folio queue or through an Apache Kafka cluster, and only the
// two constructors of newBackend differ. That is how a service moves from
// an embedded queue to Kafka without touching its handlers.
//
//	go run .                           # embedded Folio in a temporary data directory
//	go run . -dir ./folio-data -n 100  # embedded Folio, a data directory that stays
//	go run . -kafka localhost:9092     # the same service on a Kafka cluster (watermill-kafka)
//
// The service bills orders: billOrder reads each order from "orders" and
// publishes a receipt to "receipts"; main publishes -n orders and prints
// the receipts as they arrive. The Kafka wiring is compiled in every build
// (so go vet checks it) but runs only with -kafka, which CI never passes: CI
// has no Kafka cluster. Folio's own Kafka endpoint serves it too:
//
//	folio serve -dir /tmp/kdata -listen 127.0.0.1:19092 &
//	go run . -kafka 127.0.0.1:19092 -n 5
//
// prints the five receipts (watermill-kafka v3.0.6 over Sarama v1.43.3).
// This is a module of its own so that neither the
// root module nor github.com/foliolog/folio/watermill requires
// watermill-kafka or Sarama.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/IBM/sarama"
	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill-kafka/v3/pkg/kafka"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/foliolog/folio"
	foliowatermill "github.com/foliolog/folio/watermill"
)

// The service's topics and consumer group.
const (
	ordersTopic   = "orders"
	receiptsTopic = "receipts"
	billingGroup  = "billing"
)

// billOrder is the service's handler: it knows Watermill's message type and
// nothing of the back end. It answers each order with a receipt.
func billOrder(msg *message.Message) ([]*message.Message, error) {
	order := msg.Metadata.Get("order")
	if order == "" {
		return nil, fmt.Errorf("message %s has no order id", msg.UUID)
	}
	receipt := message.NewMessage(watermill.NewUUID(), fmt.Appendf(nil, "billed %s", msg.Payload))
	receipt.Metadata.Set("order", order)
	return []*message.Message{receipt}, nil
}

// backend is what the service needs of a Pub/Sub: a publisher, the
// billing group's subscriber, and a subscriber that sees every receipt.
type backend struct {
	pub      message.Publisher
	billing  message.Subscriber
	receipts message.Subscriber
	close    func() error
}

// newBackend wires the back end: Folio in dir, or the Kafka cluster at
// brokers (comma-separated) when brokers is not empty.
func newBackend(dir, brokers string, logger watermill.LoggerAdapter) (*backend, error) {
	if brokers != "" {
		return newKafkaBackend(strings.Split(brokers, ","), logger)
	}
	b, err := folio.Open(dir, nil)
	if err != nil {
		return nil, err
	}
	pub, err := foliowatermill.NewPublisher(b, &foliowatermill.PublisherOptions{Logger: logger})
	if err != nil {
		return nil, errors.Join(err, b.Close())
	}
	billing, err := foliowatermill.NewSubscriber(b, &foliowatermill.SubscriberOptions{ConsumerGroup: billingGroup, Logger: logger})
	if err != nil {
		return nil, errors.Join(err, pub.Close(), b.Close())
	}
	receipts, err := foliowatermill.NewSubscriber(b, &foliowatermill.SubscriberOptions{Logger: logger})
	if err != nil {
		return nil, errors.Join(err, billing.Close(), pub.Close(), b.Close())
	}
	return &backend{pub: pub, billing: billing, receipts: receipts, close: func() error {
		return errors.Join(receipts.Close(), billing.Close(), pub.Close(), b.Close())
	}}, nil
}

// newKafkaBackend is the same back end on a Kafka cluster, through
// watermill-kafka: the subscribers start at the oldest offset, as Folio's
// do when a group has no committed offset.
func newKafkaBackend(brokers []string, logger watermill.LoggerAdapter) (*backend, error) {
	pub, err := kafka.NewPublisher(kafka.PublisherConfig{
		Brokers:   brokers,
		Marshaler: kafka.DefaultMarshaler{},
	}, logger)
	if err != nil {
		return nil, err
	}
	subscriber := func(group string) (message.Subscriber, error) {
		cfg := kafka.DefaultSaramaSubscriberConfig()
		cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
		return kafka.NewSubscriber(kafka.SubscriberConfig{
			Brokers:               brokers,
			Unmarshaler:           kafka.DefaultMarshaler{},
			ConsumerGroup:         group,
			OverwriteSaramaConfig: cfg,
		}, logger)
	}
	billing, err := subscriber(billingGroup)
	if err != nil {
		return nil, errors.Join(err, pub.Close())
	}
	receipts, err := subscriber("")
	if err != nil {
		return nil, errors.Join(err, billing.Close(), pub.Close())
	}
	return &backend{pub: pub, billing: billing, receipts: receipts, close: func() error {
		return errors.Join(receipts.Close(), billing.Close(), pub.Close())
	}}, nil
}

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout, os.Stderr); err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(os.Stderr, "watermillkafka:", err)
		os.Exit(1)
	}
}

// run is main with its arguments and outputs: it starts the service on the
// chosen back end, publishes the orders and prints one line per receipt.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	fs := flag.NewFlagSet("watermillkafka", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("dir", "", "Folio data directory (default: a temporary one, removed at exit)")
	brokers := fs.String("kafka", "", "Kafka bootstrap brokers, comma-separated: run on that cluster through watermill-kafka instead of Folio")
	n := fs.Int("n", 10, "orders to publish")
	timeout := fs.Duration("timeout", time.Minute, "how long to wait for the receipts")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 || *n < 1 {
		fs.Usage()
		return fmt.Errorf("usage: watermillkafka [-dir DIR | -kafka HOST:PORT,...] [-n N]")
	}
	if *dir == "" && *brokers == "" {
		tmp, err := os.MkdirTemp("", "folio-watermillkafka")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		*dir = tmp
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()

	logger := watermill.NopLogger{}
	be, err := newBackend(*dir, *brokers, logger)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, be.close()) }()

	router, err := message.NewRouter(message.RouterConfig{}, logger)
	if err != nil {
		return err
	}
	router.AddHandler("bill-orders", ordersTopic, be.billing, receiptsTopic, be.pub, billOrder)
	running := make(chan error, 1)
	routerCtx, stopRouter := context.WithCancel(ctx)
	defer func() {
		stopRouter()
		err = errors.Join(err, <-running)
	}()
	go func() { running <- router.Run(routerCtx) }()
	select {
	case <-router.Running():
	case err := <-running:
		running <- err
		return fmt.Errorf("router: %w", err)
	}

	receipts, err := be.receipts.Subscribe(ctx, receiptsTopic)
	if err != nil {
		return err
	}
	for i := range *n {
		msg := message.NewMessage(watermill.NewUUID(), fmt.Appendf(nil, "order %d", i))
		msg.Metadata.Set("order", fmt.Sprint(i))
		if err := be.pub.Publish(ordersTopic, msg); err != nil {
			return err
		}
	}
	for got := 0; got < *n; got++ {
		select {
		case msg, ok := <-receipts:
			if !ok {
				return fmt.Errorf("the receipts subscription closed after %d of %d", got, *n)
			}
			fmt.Fprintf(stdout, "receipt for order %s: %s\n", msg.Metadata.Get("order"), msg.Payload)
			msg.Ack()
		case <-ctx.Done():
			return fmt.Errorf("%d of %d receipts: %w", got, *n, ctx.Err())
		}
	}
	return nil
}

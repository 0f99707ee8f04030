package folio_test

import (
	"context"
	"fmt"
	"os"

	"github.com/foliolog/folio"
)

func Example() {
	dir, err := os.MkdirTemp("", "folio-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)

	b, err := folio.Open(dir, nil)
	if err != nil {
		panic(err)
	}
	defer b.Close()
	if _, err := b.CreateTopic("orders", folio.TopicConfig{Partitions: 1}); err != nil {
		panic(err)
	}

	ctx := context.Background()
	p, err := b.NewProducer(nil)
	if err != nil {
		panic(err)
	}
	for _, v := range []string{"apple", "pear", "plum"} {
		part, off, err := p.Produce(ctx, &folio.Record{Topic: "orders", Key: []byte("fruit"), Value: []byte(v)})
		if err != nil {
			panic(err)
		}
		fmt.Printf("produced %s to partition %d at offset %d\n", v, part, off)
	}

	c, err := b.NewConsumer(nil)
	if err != nil {
		panic(err)
	}
	if err := c.Assign(folio.Assignment{Topic: "orders", Partition: 0, Start: folio.AtEarliest()}); err != nil {
		panic(err)
	}
	n := 0
	for r, err := range c.Records(ctx) {
		if err != nil {
			panic(err)
		}
		fmt.Printf("consumed %s=%s at offset %d\n", r.Key, r.Value, r.Offset)
		if n++; n == 3 {
			break
		}
	}
	lag, _ := c.Lag("orders", 0)
	fmt.Println("lag:", lag)
	// Output:
	// produced apple to partition 0 at offset 0
	// produced pear to partition 0 at offset 1
	// produced plum to partition 0 at offset 2
	// consumed fruit=apple at offset 0
	// consumed fruit=pear at offset 1
	// consumed fruit=plum at offset 2
	// lag: 0
}

func ExampleProducer_ProduceAsync() {
	dir, _ := os.MkdirTemp("", "folio-example")
	defer os.RemoveAll(dir)
	b, err := folio.Open(dir, nil)
	if err != nil {
		panic(err)
	}
	defer b.Close()
	// FlushNone: acknowledged once in the page cache.
	if _, err := b.CreateTopic("events", folio.TopicConfig{Partitions: 4, Flush: folio.FlushNone}); err != nil {
		panic(err)
	}
	p, err := b.NewProducer(&folio.ProducerOptions{ManualPartitioning: true})
	if err != nil {
		panic(err)
	}
	done := make(chan struct{})
	p.ProduceAsync(context.Background(), &folio.Record{Topic: "events", Partition: 3, Value: []byte("hello")},
		func(r *folio.Record, err error) {
			fmt.Println(r.Partition, r.Offset, err)
			close(done)
		})
	<-done
	// Output: 3 0 <nil>
}

func ExampleConsumer_Poll() {
	dir, _ := os.MkdirTemp("", "folio-example")
	defer os.RemoveAll(dir)
	b, err := folio.Open(dir, nil)
	if err != nil {
		panic(err)
	}
	defer b.Close()
	if _, err := b.CreateTopic("logs", folio.TopicConfig{}); err != nil {
		panic(err)
	}
	c, _ := b.NewConsumer(&folio.ConsumerOptions{Reset: folio.ResetEarliest})
	_ = c.Assign(folio.Assignment{Topic: "logs", Start: folio.AtLatest()})

	go func() {
		p, _ := b.NewProducer(nil)
		_, _, _ = p.Produce(context.Background(), &folio.Record{Topic: "logs", Value: []byte("late arrival")})
	}()
	// Poll blocks until the record arrives.
	recs, err := c.Poll(context.Background())
	fmt.Println(len(recs), string(recs[0].Value), err)
	// Output: 1 late arrival <nil>
}

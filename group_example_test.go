package folio_test

import (
	"context"
	"fmt"
	"os"

	"github.com/foliolog/folio"
)

// ExampleBroker_JoinGroup consumes a topic as a consumer group: the
// member gets the topic's partitions, reads what was produced, commits it,
// and the group's lag drops to zero.
func ExampleBroker_JoinGroup() {
	dir, _ := os.MkdirTemp("", "folio-group-example")
	defer os.RemoveAll(dir)
	b, err := folio.Open(dir, nil)
	if err != nil {
		panic(err)
	}
	defer b.Close()
	if _, err := b.CreateTopic("orders", folio.TopicConfig{Partitions: 2}); err != nil {
		panic(err)
	}
	p, _ := b.NewProducer(nil)
	ctx := context.Background()
	for i := range 10 {
		if _, _, err := p.Produce(ctx, &folio.Record{Topic: "orders", Key: []byte(fmt.Sprint("k", i)), Value: []byte("order")}); err != nil {
			panic(err)
		}
	}
	_ = p.Close()

	// A new group has no committed offset: it starts at the earliest
	// offset (the default Reset), so it reads what was produced before.
	gc, err := b.JoinGroup(ctx, "billing", []string{"orders"}, &folio.GroupOptions{
		OnAssigned: func(_ context.Context, tps []folio.TopicPartition) {
			fmt.Println("assigned", tps)
		},
	})
	if err != nil {
		panic(err)
	}
	n := 0
	for _, err := range gc.Records(ctx) {
		if err != nil {
			panic(err)
		}
		if n++; n == 10 {
			break
		}
	}
	if err := gc.Commit(ctx); err != nil {
		panic(err)
	}
	lag, _ := b.GroupLag("billing")
	var total int64
	for _, l := range lag {
		total += l.Lag
	}
	fmt.Println("consumed", n, "lag", total)
	_ = gc.Close()
	// Output:
	// assigned [orders-0 orders-1]
	// consumed 10 lag 0
}

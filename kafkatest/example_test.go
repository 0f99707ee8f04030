package kafkatest_test

import (
	"context"
	"fmt"
	"os"

	"github.com/foliolog/folio/kafkatest"
	"github.com/twmb/franz-go/pkg/kgo"
)

// A test produces to and consumes from a real, persistent Folio broker
// with the Kafka client it uses in production. In a test, kafkatest.New(t,
// opts) does what Start and Close do here, on t.TempDir().
func Example() {
	dir, err := os.MkdirTemp("", "kafkatest-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	c, err := kafkatest.Start(dir, &kafkatest.Options{Topics: []string{"orders"}})
	if err != nil {
		panic(err)
	}
	defer c.Close()
	ctx := context.Background()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addr()), kgo.DefaultProduceTopic("orders"),
		kgo.ConsumeTopics("orders"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		panic(err)
	}
	defer cl.Close()
	if err := cl.ProduceSync(ctx, &kgo.Record{Key: []byte("id-1"), Value: []byte("apple")}).FirstErr(); err != nil {
		panic(err)
	}
	fs := cl.PollFetches(ctx)
	fs.EachRecord(func(r *kgo.Record) { fmt.Printf("%s=%s at offset %d\n", r.Key, r.Value, r.Offset) })
	// Output: id-1=apple at offset 0
}

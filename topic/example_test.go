package topic_test

import (
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/foliolog/folio/topic"
)

func ExampleOpenCatalog() {
	dir, err := os.MkdirTemp("", "folio-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	cat, err := topic.OpenCatalog(dir, nil)
	if err != nil {
		log.Fatal(err)
	}
	var cfg topic.Config
	for _, kv := range [][2]string{{"partitions", "3"}, {"retention", "7d"}, {"flush", "interval:100ms"}} {
		if err := cfg.Set(kv[0], kv[1]); err != nil {
			log.Fatal(err)
		}
	}
	if _, err := cat.Create("orders", cfg); err != nil {
		log.Fatal(err)
	}
	_, err = cat.Create("Orders", topic.Config{})
	fmt.Println("second create:", errors.Is(err, topic.ErrNameCollision))
	if err := cat.Close(); err != nil {
		log.Fatal(err)
	}

	// The catalog survives a restart.
	cat, err = topic.OpenCatalog(dir, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer cat.Close()
	info, err := cat.Describe("orders")
	if err != nil {
		log.Fatal(err)
	}
	for _, s := range info.Config.Settings()[:7] {
		fmt.Printf("%s=%s\n", s.Key, s.Value)
	}
	fmt.Println(topic.DirName("orders", 2))
	// Output:
	// second create: true
	// partitions=3
	// retention.bytes=unlimited
	// retention.ms=7d
	// segment.bytes=1GiB
	// segment.ms=7d
	// index.interval.bytes=4KiB
	// flush=interval:100ms
	// orders-2
}

// A read-only catalog beside the process that owns the directory: it
// reads the catalog as the writer last committed it and changes nothing.
func ExampleOpenCatalog_readOnly() {
	dir, err := os.MkdirTemp("", "folio-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	_, err = topic.OpenCatalog(filepath.Join(dir, "data"), &topic.Options{ReadOnly: true})
	fmt.Println("no data dir:", errors.Is(err, topic.ErrNoCatalog))

	writer, err := topic.OpenCatalog(filepath.Join(dir, "data"), nil)
	if err != nil {
		log.Fatal(err)
	}
	defer writer.Close()
	if _, err := writer.Create("orders", topic.Config{Partitions: 2}); err != nil {
		log.Fatal(err)
	}

	reader, err := topic.OpenCatalog(filepath.Join(dir, "data"), &topic.Options{ReadOnly: true})
	if err != nil {
		log.Fatal(err)
	}
	defer reader.Close()
	topics, err := reader.List()
	if err != nil {
		log.Fatal(err)
	}
	for _, in := range topics {
		fmt.Println(in.Name, in.Config.Partitions)
	}
	_, err = reader.Create("payments", topic.Config{})
	fmt.Println("create:", errors.Is(err, topic.ErrReadOnly))
	// Output:
	// no data dir: true
	// orders 2
	// create: true
}

func ExampleKeyPartition() {
	for _, key := range []string{"customer-17", "customer-42", ""} {
		p, err := topic.KeyPartition([]byte(key), 12)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%q -> %d\n", key, p)
	}
	// Output:
	// "customer-17" -> 4
	// "customer-42" -> 9
	// "" -> 9
}

func ExampleProducerState() {
	ps, err := topic.NewProducerState(nil)
	if err != nil {
		log.Fatal(err)
	}
	// A batch header from producer 7, epoch 0, sequences 0..2.
	batch := exampleBatch(7, 0, 0, 3)
	if dup, err := ps.Check(batch); err != nil || dup != nil {
		log.Fatal(dup, err)
	}
	// ... the log appends it at offsets 100..102 ...
	if err := ps.Update(batch, 100, 102); err != nil {
		log.Fatal(err)
	}
	// The producer retries: the partition answers with the first append.
	dup, _ := ps.Check(batch)
	fmt.Println("retry at offsets", dup.FirstOffset, "to", dup.LastOffset)
	// A batch that skips sequences 3 and 4 is refused.
	_, err = ps.Check(exampleBatch(7, 0, 5, 1))
	fmt.Println(errors.Is(err, topic.ErrOutOfOrderSequence))
	// So is a zombie with an older epoch, once epoch 1 has written.
	if err := ps.Update(exampleBatch(7, 1, 0, 1), 103, 103); err != nil {
		log.Fatal(err)
	}
	_, err = ps.Check(exampleBatch(7, 0, 3, 1))
	fmt.Println(errors.Is(err, topic.ErrProducerFenced))
	// Output:
	// retry at offsets 100 to 102
	// true
	// true
}

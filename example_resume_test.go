package folio_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync/atomic"

	"github.com/foliolog/folio"
)

// A newcomer's first program, written from go doc alone: produce 10,000
// records to a topic of 3 partitions, consume part of them in a consumer
// group and commit, restart (close the Broker and open the directory
// again), and resume where the group's commit left off, so that every
// record is read exactly once across the two runs.
func Example_resumeAfterRestart() {
	dir, err := os.MkdirTemp("", "folio-resume")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)

	seen := map[string]int{} // value -> times read, across both runs
	// consume reads up to limit records as a member of the group "app",
	// commits them, and closes the Broker: one run of the program.
	consume := func(limit int) (read int, err error) {
		b, err := folio.Open(dir, nil)
		if err != nil {
			return 0, err
		}
		defer func() { err = errors.Join(err, b.Close()) }()
		ctx := context.Background()
		// A new group starts at the earliest offset, a known one after
		// its last commit. Auto-commit is on; Commit makes it durable now.
		gc, err := b.JoinGroup(ctx, "app", []string{"events"}, nil)
		if err != nil {
			return 0, err
		}
		defer func() { err = errors.Join(err, gc.Close()) }()
		for rec, err := range gc.Records(ctx) {
			if err != nil {
				return read, err
			}
			seen[string(rec.Value)]++
			if read++; read == limit {
				break
			}
		}
		return read, gc.Commit(ctx)
	}

	// Produce with the fast path: ProduceAsync batches, Flush waits for
	// every acknowledgement (an fsync under the default FlushSync).
	produce := func() (err error) {
		b, err := folio.Open(dir, nil)
		if err != nil {
			return err
		}
		defer func() { err = errors.Join(err, b.Close()) }()
		if _, err := b.CreateTopic("events", folio.TopicConfig{Partitions: 3}); err != nil {
			return err
		}
		p, err := b.NewProducer(nil)
		if err != nil {
			return err
		}
		defer func() { err = errors.Join(err, p.Close()) }()
		var failed atomic.Int64
		ctx := context.Background()
		for i := range 10_000 {
			rec := &folio.Record{Topic: "events", Key: fmt.Appendf(nil, "user-%d", i%97), Value: fmt.Appendf(nil, "event-%05d", i)}
			p.ProduceAsync(ctx, rec, func(_ *folio.Record, err error) {
				if err != nil {
					failed.Add(1)
				}
			})
		}
		if err := p.Flush(ctx); err != nil {
			return err
		}
		if n := failed.Load(); n > 0 {
			return fmt.Errorf("%d records not produced", n)
		}
		return nil
	}

	if err := produce(); err != nil {
		panic(err)
	}
	first, err := consume(6_000)
	if err != nil {
		panic(err)
	}
	fmt.Println("first run read", first)

	// Between the runs: the group's lag, as a monitoring program beside a
	// running application would read it (a read-only Broker takes no lock).
	lagOf := func() (total int64, err error) {
		b, err := folio.OpenReadOnly(dir, nil)
		if err != nil {
			return 0, err
		}
		defer func() { err = errors.Join(err, b.Close()) }()
		lag, err := b.GroupLag("app")
		for _, l := range lag {
			total += l.Lag
		}
		return total, err
	}
	left, err := lagOf()
	if err != nil {
		panic(err)
	}
	fmt.Println("lag after the restart", left)

	second, err := consume(4_000)
	if err != nil {
		panic(err)
	}
	fmt.Println("second run read", second)

	if left, err = lagOf(); err != nil {
		panic(err)
	}
	twice := 0
	for _, n := range seen {
		if n > 1 {
			twice++
		}
	}
	fmt.Println("distinct records read", len(seen), "read twice", twice, "lag", left)
	// Output:
	// first run read 6000
	// lag after the restart 4000
	// second run read 4000
	// distinct records read 10000 read twice 0 lag 0
}

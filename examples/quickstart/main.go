// Command quickstart shows Folio's main job end to end: it opens a data
// directory, makes sure the topic "orders" exists, produces keyed records,
// reads back exactly the records it produced in this run, and prints what
// it did and how fast.
//
//	go run ./examples/quickstart            # ./folio-data, 100,000 records
//	go run ./examples/quickstart -n 1000000 -dir /tmp/folio
//
// Running it again appends another batch of records to the same topic and
// reads back only those: it starts reading at the end offsets it found.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/foliolog/folio"
)

const topicName = "orders"

func main() {
	err := run(os.Args[1:], os.Stdout, os.Stderr)
	var u usageError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
	case errors.As(err, &u):
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(2)
	default:
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

// usageError is a command line that cannot run (exit status 2).
type usageError struct{ error }

// run is the program, with its arguments and output as parameters so that
// it reads as a unit. -h prints the flags on errOut.
func run(args []string, out, errOut io.Writer) error {
	fl := flag.NewFlagSet("quickstart", flag.ContinueOnError)
	fl.SetOutput(io.Discard)
	fl.Usage = func() {} // the flag package calls it on errors too; -h is below
	dir := fl.String("dir", "./folio-data", "data directory")
	n := fl.Int("n", 100_000, "records to produce and consume")
	partitions := fl.Int("partitions", 4, "partitions of the topic when it is created")
	switch err := fl.Parse(args); {
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprintln(errOut, "usage: go run ./examples/quickstart [flags]\n\nFlags:")
		fl.SetOutput(errOut)
		fl.PrintDefaults()
		return err
	case err != nil:
		return usageError{fmt.Errorf("%v (run with -h for the flags)", err)}
	case fl.NArg() > 0:
		return usageError{fmt.Errorf("unexpected argument %q", fl.Arg(0))}
	case *n < 0 || *partitions < 1:
		return usageError{fmt.Errorf("-n must be >= 0 and -partitions >= 1")}
	}

	b, err := folio.Open(*dir, nil)
	if err != nil {
		return err
	}
	defer b.Close()
	fmt.Fprintf(out, "data directory %s\n", *dir)

	info, err := b.CreateTopic(topicName, folio.TopicConfig{Partitions: int32(*partitions)})
	switch {
	case errors.Is(err, folio.ErrTopicExists):
		if info, err = b.DescribeTopic(topicName); err != nil {
			return err
		}
		fmt.Fprintf(out, "topic %q exists with %d partitions\n", topicName, len(info.Partitions))
	case err != nil:
		return err
	default:
		fmt.Fprintf(out, "created topic %q with %d partitions (flush policy %s)\n", topicName, len(info.Partitions), info.Config.Flush)
	}
	// Where this run's records will start: the end of each partition now.
	start := make([]int64, len(info.Partitions))
	for i, p := range info.Partitions {
		start[i] = p.LogEndOffset
	}
	fmt.Fprintf(out, "end offsets at start: %v\n", start)

	run := make([]byte, 4)
	if _, err := rand.Read(run); err != nil {
		return err
	}
	runID := hex.EncodeToString(run)

	ctx := context.Background()
	produced, elapsed, err := produce(ctx, b, runID, *n)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "produced %d records in %v: %s\n", *n, elapsed.Round(time.Millisecond), rate(*n, produced, elapsed))

	consumed, elapsed, err := consume(ctx, b, runID, *n, start)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "consumed %d records in %v: %s\n", *n, elapsed.Round(time.Millisecond), rate(*n, consumed, elapsed))
	fmt.Fprintf(out, "every record of this run (id %s) was read back once, in order within its partition\n", runID)
	return b.Close()
}

// produce sends n keyed records asynchronously and waits for every
// acknowledgement. It returns the bytes of keys and values sent.
func produce(ctx context.Context, b *folio.Broker, runID string, n int) (int64, time.Duration, error) {
	p, err := b.NewProducer(nil)
	if err != nil {
		return 0, 0, err
	}
	defer p.Close()
	var (
		errMu    sync.Mutex // guards firstErr
		firstErr error
		bytes    int64
	)
	begin := time.Now()
	for i := range n {
		rec := &folio.Record{
			Topic: topicName,
			Key:   []byte("customer-" + strconv.Itoa(i%1000)),
			Value: []byte(runID + ":" + strconv.Itoa(i) + ":" + strings.Repeat("x", 64)),
		}
		bytes += int64(len(rec.Key) + len(rec.Value))
		p.ProduceAsync(ctx, rec, func(_ *folio.Record, err error) {
			if err != nil {
				errMu.Lock()
				if firstErr == nil {
					firstErr = err
				}
				errMu.Unlock()
			}
		})
	}
	if err := p.Flush(ctx); err != nil {
		return 0, 0, err
	}
	elapsed := time.Since(begin)
	errMu.Lock()
	defer errMu.Unlock()
	return bytes, elapsed, firstErr
}

// consume reads every partition from its start offset until n records of
// this run arrived, and checks them: each index once, each partition's
// records in the order they were produced.
func consume(ctx context.Context, b *folio.Broker, runID string, n int, start []int64) (int64, time.Duration, error) {
	c, err := b.NewConsumer(&folio.ConsumerOptions{Name: "quickstart"})
	if err != nil {
		return 0, 0, err
	}
	defer c.Close()
	for p, off := range start {
		if err := c.Assign(folio.Assignment{Topic: topicName, Partition: int32(p), Start: folio.AtOffset(off)}); err != nil {
			return 0, 0, err
		}
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	seen := make([]bool, n)
	last := make([]int, len(start))
	for i := range last {
		last[i] = -1
	}
	var bytes int64
	got := 0
	begin := time.Now()
	for got < n {
		recs, err := c.Poll(ctx)
		if err != nil {
			return 0, 0, fmt.Errorf("after %d of %d records: %w", got, n, err)
		}
		for _, r := range recs {
			id, rest, ok := strings.Cut(string(r.Value), ":")
			idx, _, _ := strings.Cut(rest, ":")
			i, err := strconv.Atoi(idx)
			if !ok || id != runID || err != nil || i < 0 || i >= n {
				return 0, 0, fmt.Errorf("partition %d offset %d: record %q is not from this run", r.Partition, r.Offset, r.Value)
			}
			if seen[i] {
				return 0, 0, fmt.Errorf("record %d read twice", i)
			}
			if i < last[r.Partition] {
				return 0, 0, fmt.Errorf("partition %d: record %d after %d", r.Partition, i, last[r.Partition])
			}
			seen[i], last[r.Partition] = true, i
			bytes += int64(len(r.Key) + len(r.Value))
			got++
		}
	}
	return bytes, time.Since(begin), nil
}

func rate(n int, bytes int64, d time.Duration) string {
	s := d.Seconds()
	if s <= 0 {
		return "too fast to time"
	}
	return fmt.Sprintf("%.0f records/s, %.1f MB/s", float64(n)/s, float64(bytes)/s/1e6)
}

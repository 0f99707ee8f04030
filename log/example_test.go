package log_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/foliolog/folio/log"
	"github.com/foliolog/folio/readpath"
	"github.com/foliolog/folio/record"
)

// Example appends two batches under FlushSync, reads them back, closes the
// log cleanly and reopens it from its checkpoint.
func Example() {
	dir, err := os.MkdirTemp("", "folio-log-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "orders-0")

	l, err := log.Open(nil, path, &log.Options{FlushPolicy: log.FlushSync}, log.State{})
	if err != nil {
		panic(err)
	}
	for _, fruit := range [][]string{{"apple", "banana"}, {"cherry"}} {
		b, err := record.NewBuilder(nil)
		if err != nil {
			panic(err)
		}
		for _, v := range fruit {
			if err := b.Append(record.Record{Value: []byte(v), Timestamp: 1700000000000}); err != nil {
				panic(err)
			}
		}
		batch, err := b.Build(nil)
		if err != nil {
			panic(err)
		}
		// Under FlushSync the records are durable once Append returns.
		first, last, err := l.Append(batch)
		if err != nil {
			panic(err)
		}
		fmt.Printf("appended offsets %d..%d\n", first, last)
	}

	// A consumer waits for offset 0 to be visible, then reads from it.
	if err := l.Wait(context.Background(), 0); err != nil {
		panic(err)
	}
	v, err := l.Read(0, 1<<20)
	if err != nil {
		panic(err)
	}
	err = readpath.Guard(func() error {
		buf, err := v.Bytes()
		if err != nil {
			return err
		}
		for len(buf) > 0 {
			batch, rest, err := record.Parse(buf)
			if err != nil {
				return err
			}
			it := batch.Records(nil)
			for it.Next() {
				fmt.Printf("offset %d: %s\n", it.Record().Offset(), it.Record().Value())
			}
			it.Close()
			buf = rest
		}
		return nil
	})
	v.Release()
	if err != nil {
		panic(err)
	}

	if err := l.Close(); err != nil {
		panic(err)
	}
	st := l.Checkpoint()
	fmt.Printf("checkpoint: recovery point %d, clean %v\n", st.RecoveryPoint, st.Clean)

	l, err = log.Open(nil, path, nil, st)
	if err != nil {
		panic(err)
	}
	defer l.Close()
	fmt.Printf("reopened: log end %d, high watermark %d\n", l.LogEndOffset(), l.HighWatermark())
	// Output:
	// appended offsets 0..1
	// appended offsets 2..2
	// offset 0: apple
	// offset 1: banana
	// offset 2: cherry
	// checkpoint: recovery point 3, clean true
	// reopened: log end 3, high watermark 3
}

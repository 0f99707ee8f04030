package log_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/foliolog/folio/log"
	"github.com/foliolog/folio/readpath"
	"github.com/foliolog/folio/record"
)

// ExampleLog_Compact keeps the latest value of each key: three updates of
// two users and a delete (a tombstone, whose retention has not run out)
// compact to the last record of each, at their original offsets. The
// active segment (here the last update) is never cleaned.
func ExampleLog_Compact() {
	dir, err := os.MkdirTemp("", "folio-log-compact-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)

	// Small segments, so that the updates land in sealed segments.
	l, err := log.Open(nil, filepath.Join(dir, "users-0"), &log.Options{SegmentBytes: 128, Compact: true}, log.State{})
	if err != nil {
		panic(err)
	}
	defer l.Close()
	for _, kv := range [][2]string{{"ann", "v1"}, {"bob", "v1"}, {"ann", "v2"}, {"bob", ""}, {"ann", "v3"}, {"cid", "v1"}} {
		b, err := record.NewBuilder(nil)
		if err != nil {
			panic(err)
		}
		rec := record.Record{Key: []byte(kv[0]), Timestamp: 1700000000000}
		if kv[1] != "" {
			rec.Value = []byte(kv[1]) // an empty value here stands for a delete: a nil Value
		}
		if err := b.Append(rec); err != nil {
			panic(err)
		}
		batch, err := b.Build(nil)
		if err != nil {
			panic(err)
		}
		if _, _, err := l.Append(batch); err != nil {
			panic(err)
		}
	}
	if _, err := l.Compact(context.Background()); err != nil {
		panic(err)
	}
	if _, _, err := l.Append(keyless()); errors.Is(err, log.ErrNoKey) {
		fmt.Println("a record without a key is refused")
	}

	for off := l.LogStartOffset(); off < l.HighWatermark(); {
		v, err := l.Read(off, 1<<20)
		if err != nil {
			panic(err)
		}
		err = readpath.Guard(func() error {
			buf, err := v.Bytes()
			if err != nil {
				return err
			}
			for len(buf) > 0 {
				b, rest, err := record.Parse(buf)
				if err != nil {
					return err
				}
				it := b.Records(nil)
				for it.Next() {
					r := it.Record()
					if r.ValueIsNull() {
						fmt.Printf("%d %s deleted\n", r.Offset(), r.Key())
					} else {
						fmt.Printf("%d %s=%s\n", r.Offset(), r.Key(), r.Value())
					}
				}
				it.Close()
				off = b.LastOffset() + 1 // past compacted gaps and empty batches
				buf = rest
			}
			return nil
		})
		v.Release()
		if err != nil {
			panic(err)
		}
	}
	fmt.Println("clean below", l.Checkpoint().FirstDirtyOffset)
	// Output:
	// a record without a key is refused
	// 3 bob deleted
	// 4 ann=v3
	// 5 cid=v1
	// clean below 5
}

func keyless() record.Batch {
	b, err := record.NewBuilder(nil)
	if err != nil {
		panic(err)
	}
	if err := b.Append(record.Record{Value: []byte("no key")}); err != nil {
		panic(err)
	}
	batch, err := b.Build(nil)
	if err != nil {
		panic(err)
	}
	return batch
}

package partition

import (
	"context"
	"errors"
	"testing"

	"github.com/foliolog/folio/log"
	"github.com/foliolog/folio/readpath"
	"github.com/foliolog/folio/record"
	"github.com/foliolog/folio/topic"
)

// FuzzAppendBatch: AppendBatch takes bytes off the wire. Whatever they are
// it never panics and never fails the partition; what it accepts is stored
// as one batch at the offsets it reports, which parses again with the same
// records, recompressed or not.
func FuzzAppendBatch(f *testing.F) {
	f.Add([]byte(batchOf(f, record.CodecNone, -1, 0, 0, 2)))
	f.Add([]byte(batchOf(f, record.CodecGzip, 3, 0, 0, 3)))
	f.Add([]byte(batchOf(f, record.CodecSnappy, 4, 1, 7, 1)))
	f.Add([]byte{})
	ctx := context.Background()
	keep := openT(f, nil, f.TempDir(), topic.Config{Flush: flushNone}, log.State{}, nil)
	zstd := openT(f, nil, f.TempDir(), topic.Config{Flush: flushNone, Compression: topic.CompressionZstd}, log.State{}, nil)
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, p := range []*Partition{keep, zstd} {
			in := append([]byte(nil), data...)
			res, err := p.AppendBatch(ctx, in)
			if p.Failed() {
				t.Fatalf("%s failed after AppendBatch: %v", p, err)
			}
			if err != nil || res.Duplicate {
				continue
			}
			v, err := p.Read(res.BaseOffset, 1, log.BoundHighWatermark)
			if err != nil {
				t.Fatalf("%s: reading back the batch at %d: %v", p, res.BaseOffset, err)
			}
			err = readpath.Guard(func() error {
				buf, err := v.Bytes()
				if err != nil {
					return err
				}
				bt, _, err := record.Parse(buf)
				if err != nil {
					return err
				}
				if bt.BaseOffset() != res.BaseOffset || bt.LastOffset() != res.LastOffset {
					return errors.New("stored at other offsets than reported")
				}
				if bt.NumRecords() != record.Batch(data).NumRecords() {
					return errors.New("stored with another record count")
				}
				return nil
			})
			v.Release()
			if err != nil {
				t.Fatalf("%s: %v", p, err)
			}
		}
	})
}

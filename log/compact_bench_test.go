package log

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/foliolog/folio/record"
)

// BenchmarkCompact measures the cleaner's throughput (MB/s of segments
// cleaned) on its first pass over a log of about 16 MiB: 100-byte records in
// batches of 100, over 2,000 keys (so most records are superseded), in 1 MiB
// segments, uncompressed and zstd. Each iteration cleans a fresh copy of
// the log; the copy is not timed. The page cache is warm (the copy was just
// written). FOLIO_BENCH_DIR puts the logs elsewhere (e.g. /dev/shm for the
// CPU cost alone).
func BenchmarkCompact(b *testing.B) {
	for _, codec := range []record.Codec{record.CodecNone, record.CodecZstd} {
		b.Run(codec.String(), func(b *testing.B) {
			tmpl := filepath.Join(benchDir(b), "tmpl")
			opts := &Options{SegmentBytes: 1 << 20, Compact: true, FlushPolicy: FlushNone, RetentionCheckInterval: -1, noBackground: true}
			l, err := Open(nil, tmpl, opts, State{})
			if err != nil {
				b.Fatal(err)
			}
			rng := newRand(1)
			value := make([]byte, 100)
			for l.LogEndOffset() < 16<<20/120 {
				bld, err := record.NewBuilder(&record.BuilderOptions{Codec: codec})
				if err != nil {
					b.Fatal(err)
				}
				for range 100 {
					for i := range value {
						value[i] = byte('a' + rng.IntN(26))
					}
					if err := bld.Append(record.Record{Key: []byte(fmt.Sprintf("key-%05d", rng.IntN(2000))), Value: value, Timestamp: 1}); err != nil {
						b.Fatal(err)
					}
				}
				batch, err := bld.Build(nil)
				if err != nil {
					b.Fatal(err)
				}
				if _, _, err := l.Append(batch); err != nil {
					b.Fatal(err)
				}
			}
			if err := l.Close(); err != nil {
				b.Fatal(err)
			}
			st := l.Checkpoint()
			var total int64
			ents, err := os.ReadDir(tmpl)
			if err != nil {
				b.Fatal(err)
			}
			for _, e := range ents {
				if filepath.Ext(e.Name()) == ".log" {
					fi, err := e.Info()
					if err != nil {
						b.Fatal(err)
					}
					total += fi.Size()
				}
			}
			b.ResetTimer()
			var removed, read int64
			for i := range b.N {
				b.StopTimer()
				dir := filepath.Join(filepath.Dir(tmpl), fmt.Sprint("run", i))
				copyDir(b, tmpl, dir)
				l, err := Open(nil, dir, opts, st)
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				res, err := l.Compact(context.Background())
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				removed += res.RecordsRemoved
				read += res.BytesRead
				if err := l.Close(); err != nil {
					b.Fatal(err)
				}
				if err := os.RemoveAll(dir); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
			b.SetBytes(read / int64(b.N))
			b.ReportMetric(float64(removed)/float64(b.N), "removed/op")
			b.ReportMetric(float64(total)/(1<<20), "logMiB")
		})
	}
}

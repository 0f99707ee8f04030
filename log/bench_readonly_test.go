package log

import (
	"testing"

	"github.com/foliolog/folio/readpath"
	"github.com/foliolog/folio/record"
)

// BenchmarkReadOnly compares a read-only log with a writable one over the
// same closed log (100-byte records in batches of 100, 64 MiB segments,
// mmap, warm cache): a sequential scan of every batch (1 MiB reads),
// locating a random offset, and a Refresh that finds nothing new.
func BenchmarkReadOnly(b *testing.B) {
	size := benchLogBytes() / 4
	dir := b.TempDir()
	st := buildBenchLog(b, dir, size, 64<<20)
	for _, ro := range []bool{false, true} {
		name := "writable"
		if ro {
			name = "read-only"
		}
		l, err := Open(nil, dir, &Options{ReadOnly: ro, SegmentBytes: 64 << 20, RetentionCheckInterval: -1}, st)
		if err != nil {
			b.Fatal(err)
		}
		end := l.HighWatermark()
		b.Run(name+"/scan", func(b *testing.B) {
			b.SetBytes(size)
			for i := 0; i < b.N; i++ {
				for off := int64(0); off < end; {
					v, err := l.Read(off, 1<<20)
					if err != nil {
						b.Fatal(err)
					}
					err = readpath.Guard(func() error {
						buf, err := v.Bytes()
						if err != nil {
							return err
						}
						for len(buf) > 0 {
							n, err := record.CheckHeader(buf)
							if err != nil {
								return err
							}
							off = record.Batch(buf[:n]).LastOffset() + 1
							buf = buf[n:]
						}
						return nil
					})
					v.Release()
					if err != nil {
						b.Fatal(err)
					}
				}
			}
		})
		b.Run(name+"/random-locate", func(b *testing.B) {
			rng := newRand(1)
			for i := 0; i < b.N; i++ {
				v, err := l.Read(rng.Int64N(end), 1)
				if err != nil {
					b.Fatal(err)
				}
				v.Release()
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "reads/s")
		})
		if ro {
			b.Run(name+"/refresh", func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					if err := l.Refresh(); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
		if err := l.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

package record

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// benchRecords is a typical produce batch: 1,000 JSON-ish records of about
// 100 bytes with a short key and one header.
func benchRecords() []Record {
	rng := rand.New(rand.NewPCG(7, 7))
	recs := make([]Record, 1000)
	for i := range recs {
		recs[i] = Record{
			Key:       fmt.Appendf(nil, "user-%d", rng.IntN(10_000)),
			Value:     fmt.Appendf(nil, `{"id":%d,"item":"sku-%d","qty":%d,"price":%d.%02d,"note":"%s"}`, i, rng.IntN(5000), rng.IntN(9)+1, rng.IntN(500), rng.IntN(100), randBytes(rng, 20)),
			Headers:   []Header{{Key: "source", Value: []byte("bench")}},
			Timestamp: 1_700_000_000_000 + int64(i),
		}
	}
	return recs
}

// BenchmarkBuild reports encode throughput over the uncompressed records
// section, and the compression ratio.
func BenchmarkBuild(b *testing.B) {
	recs := benchRecords()
	for _, c := range allCodecs {
		b.Run(c.String(), func(b *testing.B) {
			bld := mustBuilder(b, c)
			var buf []byte
			var raw int
			for b.Loop() {
				bld.Reset()
				for _, r := range recs {
					if err := bld.Append(r); err != nil {
						b.Fatal(err)
					}
				}
				raw = bld.Size() - HeaderSize
				batch, err := bld.Build(buf)
				if err != nil {
					b.Fatal(err)
				}
				buf = batch
			}
			b.SetBytes(int64(raw))
			b.ReportMetric(float64(len(buf)-HeaderSize)/float64(raw), "ratio")
		})
	}
}

// BenchmarkDecode reports decode throughput (decompression, CRC and record
// iteration) over the uncompressed records section.
func BenchmarkDecode(b *testing.B) {
	recs := benchRecords()
	raw := len(mustBuild(b, CodecNone, recs, nil)) - HeaderSize
	for _, c := range allCodecs {
		b.Run(c.String(), func(b *testing.B) {
			batch := mustBuild(b, c, recs, nil)
			b.SetBytes(int64(raw))
			n := 0
			for b.Loop() {
				it := batch.Records(nil)
				for it.Next() {
					r := it.Record()
					n += len(r.Value())
				}
				if err := it.Err(); err != nil {
					b.Fatal(err)
				}
				it.Close()
			}
			b.ReportMetric(float64(len(recs))*float64(b.N)/b.Elapsed().Seconds(), "records/s")
			sink += n
		})
	}
}

// BenchmarkIterate is record iteration alone over an uncompressed batch
// whose CRC was already checked, as a reader of validated segment bytes
// runs it.
func BenchmarkIterate(b *testing.B) {
	recs := benchRecords()
	batch := mustBuild(b, CodecNone, recs, nil)
	opts := &DecodeOptions{SkipCRC: true}
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		it := batch.Records(opts)
		for it.Next() {
			r := it.Record()
			n += len(r.Key()) + len(r.Value())
		}
		it.Close()
	}
	b.ReportMetric(float64(len(recs))*float64(b.N)/b.Elapsed().Seconds(), "records/s")
	sink += n
}

// BenchmarkParse splits and CRC-checks a stream of batches, what segment
// recovery does per batch.
func BenchmarkParse(b *testing.B) {
	recs := benchRecords()
	var stream []byte
	for range 16 {
		stream = append(stream, mustBuild(b, CodecNone, recs, nil)...)
	}
	b.SetBytes(int64(len(stream)))
	for b.Loop() {
		rest := stream
		for len(rest) > 0 {
			var err error
			if _, rest, err = Parse(rest); err != nil {
				b.Fatal(err)
			}
		}
	}
}

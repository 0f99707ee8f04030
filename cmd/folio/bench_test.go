package main

import (
	"bufio"
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/foliolog/folio"
	"github.com/foliolog/folio/record"
	"github.com/foliolog/folio/segment"
	"github.com/foliolog/folio/topic"
)

// benchDir writes n records of valueSize bytes to one partition, batched
// as the producer batches them, and returns the directory and the size of
// the partition's .log files.
func benchDir(b *testing.B, n, valueSize int) (string, int64) {
	b.Helper()
	dir := b.TempDir()
	br, err := folio.Open(dir, nil)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := br.CreateTopic("bench", folio.TopicConfig{Flush: folio.FlushNone, SegmentBytes: 64 << 20}); err != nil {
		b.Fatal(err)
	}
	p, err := br.NewProducer(&folio.ProducerOptions{Linger: time.Millisecond})
	if err != nil {
		b.Fatal(err)
	}
	value := make([]byte, valueSize)
	for i := 0; i < n; i++ {
		p.ProduceAsync(context.Background(), &folio.Record{Topic: "bench", Value: value}, nil)
	}
	if err := p.Close(); err != nil {
		b.Fatal(err)
	}
	if err := br.Close(); err != nil {
		b.Fatal(err)
	}
	var size int64
	pdir := filepath.Join(dir, topic.DirName("bench", 0))
	bases, err := segmentBases(pdir)
	if err != nil {
		b.Fatal(err)
	}
	for _, base := range bases {
		fi, err := os.Stat(filepath.Join(pdir, segment.FileName(base, segment.LogSuffix)))
		if err != nil {
			b.Fatal(err)
		}
		size += fi.Size()
	}
	return dir, size
}

// BenchmarkConsume is `folio consume -e` minus the process: read a
// partition from its files and format every record with the default
// format, to io.Discard. The files are in the page cache (just written).
func BenchmarkConsume(b *testing.B) {
	const n = 200_000
	dir, size := benchDir(b, n, 100)
	d, err := openDataDir(dir)
	if err != nil {
		b.Fatal(err)
	}
	in, _ := d.topic("bench")
	f, _ := parseFormat(defaultFormat)
	b.SetBytes(size)
	b.ResetTimer()
	for b.Loop() {
		pr := &partReader{pv: d.partView(in, 0)}
		if err := pr.positionAt(0); err != nil {
			b.Fatal(err)
		}
		c := &printer{w: bufio.NewWriterSize(io.Discard, 64<<10), format: f, topic: in.Name}
		for !pr.atEnd {
			if err := pr.poll(pollBytes, func(bt record.Batch, from int64) (int64, bool, error) { return c.batch(0, bt, from) }); err != nil {
				b.Fatal(err)
			}
		}
		pr.close()
		if c.printed != n {
			b.Fatalf("printed %d records, want %d", c.printed, n)
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
}

// BenchmarkVerify checks the same partition: CRCs, record decoding and
// index entries.
func BenchmarkVerify(b *testing.B) {
	const n = 200_000
	dir, size := benchDir(b, n, 100)
	b.SetBytes(size)
	b.ResetTimer()
	for b.Loop() {
		v := &verifier{w: bufio.NewWriter(io.Discard)}
		if err := v.dataDir(dir, ""); err != nil {
			b.Fatal(err)
		}
		if v.problems != 0 || v.records != n {
			b.Fatalf("%d problems, %d records", v.problems, v.records)
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
}

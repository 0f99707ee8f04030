package transport

import (
	"context"
	"io"
	"net"
	"testing"

	"github.com/foliolog/folio/log"
	"github.com/foliolog/folio/record"
	"github.com/foliolog/folio/topic"
)

// BenchmarkDeliveredRecords: the cost a fetch pays to count its records
// on a 1 MiB view of 64 batches of 100 records (framing: from the view's
// Framing, as countDelivered does; walk: one header read per batch, what
// it did before), against sending that view once to a loopback TCP
// connection (sendfile, or one write of the mapping), as a fetch does.
func BenchmarkDeliveredRecords(b *testing.B) {
	for _, path := range []string{"mmap", "sendfile"} {
		be := newTestBackend(b)
		var cfg topic.Config
		if err := cfg.Set("read.path", path); err != nil {
			b.Fatal(err)
		}
		cfg.Partitions = 1
		be.mustCreate(b, "bench-"+path, cfg)
		p, err := be.Partition("bench-"+path, 0)
		if err != nil {
			b.Fatal(err)
		}
		bld, err := record.NewBuilder(nil)
		if err != nil {
			b.Fatal(err)
		}
		val := make([]byte, 150)
		for range 64 {
			bld.Reset()
			for range 100 {
				if err := bld.Append(record.Record{Value: val, Timestamp: 1}); err != nil {
					b.Fatal(err)
				}
			}
			batch, err := bld.Build(nil)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := p.AppendBatch(context.Background(), batch); err != nil {
				b.Fatal(err)
			}
		}
		if err := p.Sync(); err != nil {
			b.Fatal(err)
		}
		v, err := p.Read(0, 1<<21, log.BoundHighWatermark)
		if err != nil {
			b.Fatal(err)
		}
		// walk: the second walk over the headers the count used to take;
		// framing: the count from what the framing walk recorded.
		b.Run(path+"/walk", func(b *testing.B) {
			b.SetBytes(int64(v.Len()))
			for b.Loop() {
				if _, n, _ := walkHeaders(v, 0); n != 6400 {
					b.Fatalf("%d records, want 6400", n)
				}
			}
		})
		b.Run(path+"/framing", func(b *testing.B) {
			b.SetBytes(int64(v.Len()))
			for b.Loop() {
				fr, _ := v.Framing()
				if n := deliveredRecords(v, fr, 0); n != 6400 {
					b.Fatalf("%d records, want 6400", n)
				}
			}
		})
		b.Run(path+"/send", func(b *testing.B) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			defer ln.Close()
			drained := make(chan struct{})
			go func() {
				defer close(drained)
				c, err := ln.Accept()
				if err != nil {
					return
				}
				io.Copy(io.Discard, c)
				c.Close()
			}()
			conn, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(v.Len()))
			for b.Loop() {
				if _, err := v.WriteTo(conn); err != nil {
					b.Fatal(err)
				}
			}
			conn.Close()
			<-drained
		})
		v.Release()
	}
}

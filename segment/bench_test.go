package segment

import (
	"errors"
	"fmt"
	"io"
	"math/rand"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/foliolog/folio/readpath"
	"github.com/foliolog/folio/record"
	"github.com/foliolog/folio/vfs"
)

// benchBatch returns a batch of about size bytes: records of 100-byte
// values, uncompressed.
func benchBatch(b *testing.B, size int) record.Batch {
	rng := rand.New(rand.NewSource(1))
	n := max(1, size/120)
	deltas := make([]int32, n)
	tss := make([]int64, n)
	for i := range n {
		deltas[i] = int32(i)
		tss[i] = 1_700_000_000_000 + int64(i)
	}
	return buildBatch(b, 0, deltas, tss, 100, rng)
}

// BenchmarkAppend compares Segment.Append (CRC check, offset checks,
// index upkeep, publication) with a plain pwrite of the same bytes to an
// *os.File in the same run. Both write to the page cache of the test's
// temporary directory with no fsync; the file is rewritten from the start
// every 64 MiB (the segment rolls to a new one) to bound disk use.
func BenchmarkAppend(b *testing.B) {
	const span = 64 << 20
	for _, size := range []int{1 << 10, 16 << 10} {
		batch := benchBatch(b, size)
		b.Run(fmt.Sprintf("segment/%dKiB", size>>10), func(b *testing.B) {
			dir := b.TempDir()
			opts := &Options{MaxSegmentBytes: span}
			base := int64(0)
			s, err := Create(vfs.Default, dir, base, opts)
			if err != nil {
				b.Fatal(err)
			}
			next := base
			b.SetBytes(int64(len(batch)))
			b.ResetTimer()
			for range b.N {
				batch.SetBaseOffset(next)
				_, err := s.Append(batch)
				if errors.Is(err, ErrSegmentFull) {
					b.StopTimer()
					if err := s.Delete(); err != nil {
						b.Fatal(err)
					}
					if s, err = Create(vfs.Default, dir, next, opts); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
					_, err = s.Append(batch)
				}
				if err != nil {
					b.Fatal(err)
				}
				next = batch.LastOffset() + 1
			}
			b.StopTimer()
			s.Close()
		})
		b.Run(fmt.Sprintf("osfile/%dKiB", size>>10), func(b *testing.B) {
			f, err := os.Create(filepath.Join(b.TempDir(), "plain.log"))
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			pos := int64(0)
			b.SetBytes(int64(len(batch)))
			b.ResetTimer()
			for range b.N {
				if pos+int64(len(batch)) > span {
					b.StopTimer()
					if err := f.Truncate(0); err != nil {
						b.Fatal(err)
					}
					pos = 0
					b.StartTimer()
				}
				if _, err := f.WriteAt(batch, pos); err != nil {
					b.Fatal(err)
				}
				pos += int64(len(batch))
			}
		})
	}
}

// BenchmarkRead reads a sealed 32 MiB segment of 16 KiB batches
// sequentially, 1 MiB (64 batches) per Read, warm page cache, with each
// read path: in process (Bytes, then copying the bytes out, as a consumer
// that keeps them must) and to a loopback TCP socket (WriteTo; positional
// sendfile for Sendfile, one write from the mapping for Mmap).
func BenchmarkRead(b *testing.B) {
	const (
		segBytes  = 32 << 20
		readBytes = 1 << 20
	)
	batch := benchBatch(b, 16<<10)
	dir := b.TempDir()
	s, err := Create(vfs.Default, dir, 0, nil)
	if err != nil {
		b.Fatal(err)
	}
	next := int64(0)
	var starts []int64 // the offset at the start of each read
	perRead := readBytes / len(batch)
	for i := 0; int64(i+1)*int64(len(batch)) <= segBytes; i++ {
		batch.SetBaseOffset(next)
		if i%perRead == 0 {
			starts = append(starts, next)
		}
		if _, err := s.Append(batch); err != nil {
			b.Fatal(err)
		}
		next = batch.LastOffset() + 1
	}
	if err := s.Seal(); err != nil {
		b.Fatal(err)
	}
	s.Close()
	viewBytes := int64(perRead * len(batch))

	for _, kind := range []readpath.Kind{readpath.Mmap, readpath.Sendfile} {
		r, err := Open(vfs.Default, dir, 0, &Options{ReadPath: kind})
		if err != nil {
			b.Fatal(err)
		}
		b.Run(kind.String()+"/inprocess", func(b *testing.B) {
			buf := make([]byte, viewBytes)
			b.SetBytes(viewBytes)
			for i := range b.N {
				v, err := r.Read(starts[i%len(starts)], readBytes, -1)
				if err != nil {
					b.Fatal(err)
				}
				err = readpath.Guard(func() error {
					p, err := v.Bytes()
					copy(buf, p)
					return err
				})
				v.Release()
				if err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(kind.String()+"/tcp", func(b *testing.B) {
			client, server := loopback(b)
			drained := make(chan error, 1)
			go func() {
				_, err := io.Copy(io.Discard, server)
				drained <- err
			}()
			b.SetBytes(viewBytes)
			b.ResetTimer()
			for i := range b.N {
				v, err := r.Read(starts[i%len(starts)], readBytes, -1)
				if err != nil {
					b.Fatal(err)
				}
				_, err = v.WriteTo(client)
				v.Release()
				if err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			client.Close()
			if err := <-drained; err != nil {
				b.Fatal(err)
			}
			server.Close()
		})
		r.Close()
	}
}

// loopback returns both ends of a TCP connection on 127.0.0.1.
func loopback(b *testing.B) (*net.TCPConn, net.Conn) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	server, err := ln.Accept()
	if err != nil {
		b.Fatal(err)
	}
	return client.(*net.TCPConn), server
}

// BenchmarkReadScan times Read alone, the view released untouched, over a
// sealed segment of 64 KiB batches (1 KiB records batched as the fetch
// suite's are), 1 MiB per Read: the index lookup and the walk over the
// batch headers that cuts the view, which for the Sendfile kind is a pread
// per header. It is the per-request cost a Kafka fetch pays before its
// bytes move.
func BenchmarkReadScan(b *testing.B) {
	const (
		segBytes  = 64 << 20
		readBytes = 1 << 20
	)
	batch := benchBatch(b, 64<<10)
	dir := b.TempDir()
	s, err := Create(vfs.Default, dir, 0, nil)
	if err != nil {
		b.Fatal(err)
	}
	next := int64(0)
	var starts []int64
	perRead := readBytes / len(batch)
	for i := 0; int64(i+1)*int64(len(batch)) <= segBytes; i++ {
		batch.SetBaseOffset(next)
		if i%perRead == 0 {
			starts = append(starts, next)
		}
		if _, err := s.Append(batch); err != nil {
			b.Fatal(err)
		}
		next = batch.LastOffset() + 1
	}
	if err := s.Seal(); err != nil {
		b.Fatal(err)
	}
	s.Close()
	for _, kind := range []readpath.Kind{readpath.Mmap, readpath.Sendfile} {
		r, err := Open(vfs.Default, dir, 0, &Options{ReadPath: kind})
		if err != nil {
			b.Fatal(err)
		}
		b.Run(kind.String(), func(b *testing.B) {
			for i := range b.N {
				v, err := r.Read(starts[i%len(starts)], readBytes, -1)
				if err != nil {
					b.Fatal(err)
				}
				v.Release()
			}
		})
		r.Close()
	}
}

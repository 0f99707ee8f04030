package readpath

import (
	"hash/crc32"
	"io"
	"math/rand/v2"
	"testing"
)

// The benchmarks read 1 MiB views at scattered 4 KiB-aligned positions of a
// 64 MiB file that was just written, so the page cache is warm: they compare
// the paths' CPU cost, not the disk. Cold-cache and larger-than-memory runs
// belong to the bench program, which can evict and check residency.
const (
	benchFileSize = 64 << 20
	benchViewSize = 1 << 20
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func benchPositions(rng *rand.Rand) []int64 {
	pos := make([]int64, 256)
	for i := range pos {
		pos[i] = int64(rng.IntN((benchFileSize-benchViewSize)/4096)) * 4096
	}
	return pos
}

// BenchmarkBytes is the in-process consumer: take a view, checksum every
// byte (CRC-32C, as batch validation does), release.
func BenchmarkBytes(b *testing.B) {
	rng := rand.New(rand.NewPCG(7, 7))
	path, _ := writeTestFile(b, rng, benchFileSize)
	positions := benchPositions(rng)
	for _, kind := range kinds {
		b.Run(kind.String(), func(b *testing.B) {
			src := openSource(b, kind, path, 0)
			b.SetBytes(benchViewSize)
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				v, err := src.View(positions[i%len(positions)], benchViewSize)
				if err != nil {
					b.Fatal(err)
				}
				err = Guard(func() error {
					p, err := v.Bytes()
					if err != nil {
						return err
					}
					sink += uint64(crc32.Checksum(p, castagnoli))
					return nil
				})
				v.Release()
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkWriteToTCP is the remote consumer: WriteTo a loopback TCP
// connection whose other end a goroutine drains into io.Discard. On loopback
// the receiver's copy is part of the cost for both paths.
func BenchmarkWriteToTCP(b *testing.B) {
	rng := rand.New(rand.NewPCG(8, 8))
	path, _ := writeTestFile(b, rng, benchFileSize)
	positions := benchPositions(rng)
	for _, kind := range kinds {
		b.Run(kind.String(), func(b *testing.B) {
			src := openSource(b, kind, path, 0)
			client, server := tcpPair(b)
			drained := make(chan int64, 1)
			go func() {
				n, _ := io.Copy(io.Discard, server)
				drained <- n
			}()
			base := ReadCounters()
			b.SetBytes(benchViewSize)
			b.ResetTimer()
			var sent int64
			for i := 0; b.Loop(); i++ {
				v, err := src.View(positions[i%len(positions)], benchViewSize)
				if err != nil {
					b.Fatal(err)
				}
				n, err := v.WriteTo(client)
				v.Release()
				if err != nil {
					b.Fatal(err)
				}
				sent += n
			}
			b.StopTimer()
			client.Close()
			if got := <-drained; got != sent {
				b.Fatalf("peer received %d bytes, sent %d", got, sent)
			}
			d := counterDelta(base)
			b.ReportMetric(float64(d.SendfileBytes)/float64(max(sent, 1)), "zerocopy-frac")
		})
	}
}

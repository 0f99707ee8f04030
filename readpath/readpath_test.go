package readpath

import (
	"bytes"
	"errors"
	"io"
	"os"
	"runtime"
	"sync"
	"testing"
)

// TestRandomReadsIdentical checks that both kinds give the file's exact bytes
// for random ranges, through Bytes, WriteTo a bytes.Buffer and WriteTo a
// loopback TCP connection, and that the TCP sends of the sendfile kind went
// through sendfile without moving the file's shared offset.
func TestRandomReadsIdentical(t *testing.T) {
	rng := testRand(t)
	const size = 3<<20 + 123
	path, data := writeTestFile(t, rng, size)
	mapSizes := []int64{0, size, 16 << 20}

	for _, kind := range kinds {
		t.Run(kind.String(), func(t *testing.T) {
			mapSize := mapSizes[rng.IntN(len(mapSizes))]
			f := openOS(t, path)
			src, err := Open(kind, OSFile(f), mapSize)
			if err != nil {
				t.Fatal(err)
			}
			defer src.Close()
			client, server := tcpPair(t)
			base := ReadCounters()
			var tcpBytes int64
			for i := 0; i < 150; i++ {
				pos, n := randRange(rng, size, 512<<10)
				want := data[pos : pos+int64(n)]
				v, err := src.View(pos, n)
				if err != nil {
					t.Fatalf("View(%d, %d): %v", pos, n, err)
				}
				check := func() error {
					b, err := v.Bytes()
					if err != nil {
						return err
					}
					if !bytes.Equal(b, want) {
						t.Errorf("Bytes [%d,+%d) differ", pos, n)
					}
					return nil
				}
				if err := Guard(check); err != nil {
					t.Fatalf("Bytes [%d,+%d): %v", pos, n, err)
				}
				var buf bytes.Buffer
				if k, err := v.WriteTo(&buf); err != nil || k != int64(n) || !bytes.Equal(buf.Bytes(), want) {
					t.Fatalf("WriteTo(buffer) [%d,+%d) = %d, %v; bytes equal %v", pos, n, k, err, bytes.Equal(buf.Bytes(), want))
				}
				// A fresh view, so that the sendfile kind sends from the
				// file rather than from the buffer Bytes filled.
				v.Release()
				v, err = src.View(pos, n)
				if err != nil {
					t.Fatal(err)
				}
				sendOver(t, v, client, server, want)
				tcpBytes += int64(n)
				v.Release()
				if t.Failed() {
					return
				}
			}
			d := counterDelta(base)
			if kind == Sendfile && runtime.GOOS == "linux" && d.SendfileBytes != tcpBytes {
				t.Errorf("sendfile sent %d bytes, want all %d TCP bytes", d.SendfileBytes, tcpBytes)
			}
			if kind == Mmap && d.SendfileBytes != 0 {
				t.Errorf("mmap views used sendfile for %d bytes", d.SendfileBytes)
			}
			if off, err := f.Seek(0, io.SeekCurrent); err != nil || off != 0 {
				t.Errorf("file offset moved to %d (%v): reads must be positional", off, err)
			}
		})
	}
}

// TestConcurrentSends has 64 goroutines send different ranges of one file
// over 64 loopback connections at once; a read path that used the file's
// shared offset would mix their bytes.
func TestConcurrentSends(t *testing.T) {
	rng := testRand(t)
	const size = 8 << 20
	path, data := writeTestFile(t, rng, size)
	for _, kind := range kinds {
		t.Run(kind.String(), func(t *testing.T) {
			src := openSource(t, kind, path, 0)
			const senders, rounds = 64, 6
			seeds := make([]uint64, senders)
			for i := range seeds {
				seeds[i] = rng.Uint64()
			}
			var wg sync.WaitGroup
			for i := 0; i < senders; i++ {
				client, server := tcpPair(t)
				wg.Add(1)
				go func(seed uint64) {
					defer wg.Done()
					r := newRand(seed)
					for j := 0; j < rounds; j++ {
						pos, n := randRange(r, size, 256<<10)
						v, err := src.View(pos, n)
						if err != nil {
							t.Errorf("View: %v", err)
							return
						}
						sendOver(t, v, client, server, data[pos:pos+int64(n)])
						v.Release()
					}
				}(seeds[i])
			}
			wg.Wait()
		})
	}
}

// TestViewOutlivesDeletedFile holds views while the file is renamed,
// unlinked and its Source closed: the views still read the right bytes, and
// the descriptor and mapping go with the last Release.
func TestViewOutlivesDeletedFile(t *testing.T) {
	rng := testRand(t)
	const size = 1 << 20
	for _, kind := range kinds {
		t.Run(kind.String(), func(t *testing.T) {
			path, data := writeTestFile(t, rng, size)
			base := ReadCounters()
			src := openSource(t, kind, path, 0)
			v1, err := src.View(100, 300<<10)
			if err != nil {
				t.Fatal(err)
			}
			v2, err := src.View(size-5000, 5000)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(path, path+".deleted"); err != nil {
				t.Fatal(err)
			}
			if err := os.Remove(path + ".deleted"); err != nil {
				t.Fatal(err)
			}
			if err := src.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			if _, err := src.View(0, 1); !errors.Is(err, ErrClosed) {
				t.Errorf("View after Close = %v, want ErrClosed", err)
			}
			if err := src.Close(); !errors.Is(err, ErrClosed) {
				t.Errorf("second Close = %v, want ErrClosed", err)
			}
			wantMaps := int64(0)
			if kind == Mmap {
				wantMaps = 1
			}
			if d := counterDelta(base); d.OpenFiles != 1 || d.Mappings != wantMaps {
				t.Errorf("with views held after Close: open files %+d, mappings %+d; want +1, %+d", d.OpenFiles, d.Mappings, wantMaps)
			}
			client, server := tcpPair(t)
			for _, v := range []*View{v1, v2} {
				want := data[v.Pos() : v.Pos()+int64(v.Len())]
				err := Guard(func() error {
					b, err := v.Bytes()
					if err == nil && !bytes.Equal(b, want) {
						t.Errorf("Bytes of deleted file [%d,+%d) differ", v.Pos(), v.Len())
					}
					return err
				})
				if err != nil {
					t.Fatal(err)
				}
				var buf bytes.Buffer
				if _, err := v.WriteTo(&buf); err != nil || !bytes.Equal(buf.Bytes(), want) {
					t.Errorf("WriteTo(buffer) of deleted file: %v", err)
				}
				sendOver(t, v, client, server, want)
			}
			v2.Release()
			v2.Release() // idempotent: must not drop v1's reference
			if d := counterDelta(base); d.OpenFiles != 1 || d.Mappings != wantMaps {
				t.Errorf("with one view held: open files %+d, mappings %+d; want +1, %+d", d.OpenFiles, d.Mappings, wantMaps)
			}
			var buf bytes.Buffer
			if _, err := v1.WriteTo(&buf); err != nil || !bytes.Equal(buf.Bytes(), data[v1.Pos():v1.Pos()+int64(v1.Len())]) {
				t.Errorf("the held view after another view's double Release: %v", err)
			}
			v1.Release()
			if d := counterDelta(base); d.OpenFiles != 0 || d.Mappings != 0 || d.MappedBytes != 0 {
				t.Errorf("after the last Release: open files %+d, mappings %+d, mapped bytes %+d; want 0", d.OpenFiles, d.Mappings, d.MappedBytes)
			}
			if _, err := v1.Bytes(); !errors.Is(err, ErrReleased) {
				t.Errorf("Bytes after Release = %v, want ErrReleased", err)
			}
			if _, err := v1.WriteTo(io.Discard); !errors.Is(err, ErrReleased) {
				t.Errorf("WriteTo after Release = %v, want ErrReleased", err)
			}
		})
	}
}

// TestConcurrentDeleteAndRead races readers against the file's deletion and
// the Source's Close: every read gives the right bytes or ErrClosed, never a
// fault, and nothing stays open afterwards.
func TestConcurrentDeleteAndRead(t *testing.T) {
	rng := testRand(t)
	const size = 2 << 20
	for _, kind := range kinds {
		t.Run(kind.String(), func(t *testing.T) {
			path, data := writeTestFile(t, rng, size)
			base := ReadCounters()
			src := openSource(t, kind, path, 0)
			started := make(chan struct{})
			var startOnce sync.Once
			var wg sync.WaitGroup
			for i := 0; i < 8; i++ {
				seed := rng.Uint64()
				wg.Add(1)
				go func() {
					defer wg.Done()
					// Also on an early failure, so the test cannot hang.
					defer startOnce.Do(func() { close(started) })
					r := newRand(seed)
					for reads := 0; ; reads++ {
						if reads == 20 {
							startOnce.Do(func() { close(started) })
						}
						pos, n := randRange(r, size, 64<<10)
						v, err := src.View(pos, n)
						if errors.Is(err, ErrClosed) {
							return
						}
						if err != nil {
							t.Errorf("View: %v", err)
							return
						}
						err = Guard(func() error {
							b, err := v.Bytes()
							if err == nil && !bytes.Equal(b, data[pos:pos+int64(n)]) {
								t.Errorf("[%d,+%d) differ", pos, n)
							}
							return err
						})
						v.Release()
						if err != nil {
							t.Errorf("read [%d,+%d): %v", pos, n, err)
							return
						}
					}
				}()
			}
			<-started
			if err := os.Rename(path, path+".deleted"); err != nil {
				t.Fatal(err)
			}
			if err := os.Remove(path + ".deleted"); err != nil {
				t.Fatal(err)
			}
			if err := src.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
			wg.Wait()
			if d := counterDelta(base); d.OpenFiles != 0 || d.Mappings != 0 {
				t.Errorf("after all readers stopped: open files %+d, mappings %+d", d.OpenFiles, d.Mappings)
			}
		})
	}
}

package readpath

import (
	"bytes"
	"flag"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

var seedFlag = flag.Uint64("seed", 0, "seed for the randomized tests (0 picks one from the clock)")

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// testRand returns a generator and logs its seed so a failure can be replayed
// with -seed.
func testRand(t testing.TB) *rand.Rand {
	t.Helper()
	seed := *seedFlag
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (replay: go test ./readpath -run '%s' -seed=%d)", seed, t.Name(), seed)
	return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
}

var kinds = []Kind{Mmap, Sendfile}

// writeTestFile creates a file of size bytes of random content.
func writeTestFile(t testing.TB, rng *rand.Rand, size int) (string, []byte) {
	t.Helper()
	data := make([]byte, size)
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	path := filepath.Join(t.TempDir(), "00000000000000000000.log")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path, data
}

func openOS(t testing.TB, path string) *os.File {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// openSource opens path read-only and returns a Source of kind over it; the
// Source is closed at cleanup unless the test closed it.
func openSource(t testing.TB, kind Kind, path string, mapSize int64) Source {
	t.Helper()
	src, err := Open(kind, OSFile(openOS(t, path)), mapSize)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = src.Close() })
	return src
}

// tcpPair returns the two ends of a loopback TCP connection.
func tcpPair(t testing.TB) (client, server *net.TCPConn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	type accepted struct {
		c   net.Conn
		err error
	}
	ch := make(chan accepted, 1)
	go func() {
		c, err := ln.Accept()
		ch <- accepted{c, err}
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	a := <-ch
	if a.err != nil {
		c.Close()
		t.Fatal(a.err)
	}
	t.Cleanup(func() { c.Close(); a.c.Close() })
	return c.(*net.TCPConn), a.c.(*net.TCPConn)
}

type recvResult struct {
	data []byte
	err  error
}

// recvAsync reads exactly n bytes from r on its own goroutine, so a sender
// larger than the socket buffers does not block the test.
func recvAsync(r io.Reader, n int) <-chan recvResult {
	ch := make(chan recvResult, 1)
	go func() {
		buf := make([]byte, n)
		k, err := io.ReadFull(r, buf)
		ch <- recvResult{buf[:k], err}
	}()
	return ch
}

// sendOver writes v to w with WriteTo while r receives it, and checks that
// exactly want arrived.
func sendOver(t testing.TB, v *View, w io.Writer, r io.Reader, want []byte) {
	t.Helper()
	ch := recvAsync(r, len(want))
	n, err := v.WriteTo(w)
	if err != nil {
		t.Errorf("WriteTo [%d,+%d): %v", v.Pos(), v.Len(), err)
		if c, ok := w.(interface{ Close() error }); ok {
			c.Close() // unblock the receiver
		}
		<-ch
		return
	}
	got := <-ch
	if got.err != nil {
		t.Errorf("receive [%d,+%d): %v", v.Pos(), v.Len(), got.err)
		return
	}
	if n != int64(len(want)) || !bytes.Equal(got.data, want) {
		t.Errorf("[%d,+%d): WriteTo returned %d, received bytes differ: %v", v.Pos(), v.Len(), n, !bytes.Equal(got.data, want))
	}
}

// staleStatFile reports a fixed size, as a file does between WriteTo's size
// check and a truncation that races it; it lets tests reach the checks inside
// the send.
type staleStatFile struct {
	File
	size int64
}

func (f staleStatFile) Stat() (os.FileInfo, error) {
	fi, err := f.File.Stat()
	if err != nil {
		return nil, err
	}
	return sizedInfo{fi, f.size}, nil
}

type sizedInfo struct {
	os.FileInfo
	size int64
}

func (s sizedInfo) Size() int64 { return s.size }

// memFile is a File with no descriptor, like an in-memory vfs file.
type memFile struct {
	data   []byte
	closed atomic.Bool
}

func (m *memFile) ReadAt(p []byte, off int64) (int, error) {
	return bytes.NewReader(m.data).ReadAt(p, off)
}
func (m *memFile) Close() error { m.closed.Store(true); return nil }
func (m *memFile) Name() string { return "mem.log" }
func (m *memFile) OS() *os.File { return nil }
func (m *memFile) Stat() (os.FileInfo, error) {
	return memInfo{int64(len(m.data))}, nil
}

type memInfo struct{ size int64 }

func (i memInfo) Name() string       { return "mem.log" }
func (i memInfo) Size() int64        { return i.size }
func (i memInfo) Mode() os.FileMode  { return 0o644 }
func (i memInfo) ModTime() time.Time { return time.Time{} }
func (i memInfo) IsDir() bool        { return false }
func (i memInfo) Sys() any           { return nil }

// counterDelta returns how far the counters moved from base.
func counterDelta(base Counters) Counters {
	c := ReadCounters()
	return Counters{
		OpenFiles:     c.OpenFiles - base.OpenFiles,
		Mappings:      c.Mappings - base.Mappings,
		MappedBytes:   c.MappedBytes - base.MappedBytes,
		SendfileBytes: c.SendfileBytes - base.SendfileBytes,
		CopiedBytes:   c.CopiedBytes - base.CopiedBytes,
	}
}

// randRange picks a range of data with a bias to the edges that matter:
// page boundaries, the file's end, tiny and large lengths.
func randRange(rng *rand.Rand, size, maxLen int) (pos int64, n int) {
	switch rng.IntN(5) {
	case 0: // ends exactly at EOF
		n = 1 + rng.IntN(min(maxLen, size))
		return int64(size - n), n
	case 1: // straddles a page boundary
		page := 4096 * (1 + rng.IntN(size/4096-1))
		n = 2 + rng.IntN(min(maxLen, 8192))
		pos = int64(max(0, page-1-rng.IntN(n-1)))
		if int(pos)+n > size {
			n = size - int(pos)
		}
		return pos, n
	case 2: // tiny
		n = 1 + rng.IntN(64)
	default:
		n = 1 + rng.IntN(maxLen)
	}
	n = min(n, size)
	return int64(rng.IntN(size - n + 1)), n
}

func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)) }

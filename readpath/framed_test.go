package readpath

import (
	"bytes"
	"errors"
	"os"
	"testing"
)

// TestWriteFramed: mapped views between frames go out as one framed
// response, byte for byte, over TCP and to any writer; nil and empty
// views write nothing; a Sendfile view that holds no bytes makes it
// decline (nothing written) so the caller writes piece by piece, while one
// whose bytes were read takes part; a released view or one past the
// file's end is an error before anything is written.
func TestWriteFramed(t *testing.T) {
	rng := testRand(t)
	path, data := writeTestFile(t, rng, 256<<10)
	mm := openSource(t, Mmap, path, 0)
	sf := openSource(t, Sendfile, path, 0)
	view := func(src Source, pos int64, n int) *View {
		t.Helper()
		v, err := src.View(pos, n)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(v.Release)
		return v
	}
	frames := [][]byte{[]byte("head"), []byte("mid"), []byte("tail"), nil}
	views := []*View{view(mm, 100, 70<<10), nil, view(mm, 200<<10, 3000), view(mm, 0, 0)}
	want := slicesConcat([]byte("head"), data[100:100+70<<10], []byte("mid"), []byte("tail"), data[200<<10:200<<10+3000])

	t.Run("tcp", func(t *testing.T) {
		c, s := tcpPair(t)
		before := ReadCounters().CopiedBytes
		ch := recvAsync(s, len(want))
		n, ok, err := WriteFramed(c, frames, views)
		if !ok || err != nil || n != int64(len(want)) {
			t.Fatalf("WriteFramed = %d, %v, %v; want %d bytes", n, ok, err, len(want))
		}
		got := <-ch
		if got.err != nil || !bytes.Equal(got.data, want) {
			t.Fatalf("received %d bytes (%v), equal: %v", len(got.data), got.err, bytes.Equal(got.data, want))
		}
		if d := ReadCounters().CopiedBytes - before; d < int64(70<<10+3000) {
			t.Errorf("copied bytes grew by %d, want at least the views' %d", d, 70<<10+3000)
		}
	})
	t.Run("buffer", func(t *testing.T) {
		var buf bytes.Buffer
		if n, ok, err := WriteFramed(&buf, frames, views); !ok || err != nil || n != int64(len(want)) || !bytes.Equal(buf.Bytes(), want) {
			t.Fatalf("WriteFramed = %d, %v, %v; output equal: %v", n, ok, err, bytes.Equal(buf.Bytes(), want))
		}
	})
	t.Run("sendfile view declines", func(t *testing.T) {
		var buf bytes.Buffer
		v := view(sf, 10, 500)
		if n, ok, err := WriteFramed(&buf, frames[:2], []*View{views[0], v}); ok || err != nil || n != 0 || buf.Len() != 0 {
			t.Fatalf("WriteFramed with an unread sendfile view = %d, %v, %v, %d bytes written; want it to decline", n, ok, err, buf.Len())
		}
		if _, err := v.Bytes(); err != nil {
			t.Fatal(err)
		}
		n, ok, err := WriteFramed(&buf, [][]byte{[]byte("x")}, []*View{v})
		if !ok || err != nil || n != 501 || !bytes.Equal(buf.Bytes(), slicesConcat([]byte("x"), data[10:510])) {
			t.Fatalf("WriteFramed with a read sendfile view = %d, %v, %v", n, ok, err)
		}
	})
	t.Run("released", func(t *testing.T) {
		var buf bytes.Buffer
		v := view(mm, 0, 100)
		v.Release()
		if _, ok, err := WriteFramed(&buf, [][]byte{[]byte("x"), nil}, []*View{views[0], v}); !ok || !errors.Is(err, ErrReleased) || buf.Len() != 0 {
			t.Fatalf("WriteFramed with a released view: %v, %v, %d bytes written", ok, err, buf.Len())
		}
	})
	t.Run("past the end", func(t *testing.T) {
		p2, _ := writeTestFile(t, rng, 64<<10)
		src := openSource(t, Mmap, p2, 0)
		v := view(src, 0, 60<<10)
		if err := os.Truncate(p2, 1000); err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if _, ok, err := WriteFramed(&buf, [][]byte{[]byte("x")}, []*View{v}); !ok || !errors.Is(err, ErrTruncated) || buf.Len() != 0 {
			t.Fatalf("WriteFramed of a view past the end: %v, %v, %d bytes written", ok, err, buf.Len())
		}
	})
}

func slicesConcat(parts ...[]byte) []byte {
	var b []byte
	for _, p := range parts {
		b = append(b, p...)
	}
	return b
}

package readpath

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

// FuzzView opens a view of arbitrary (pos, n) on either kind and checks it
// against the file's bytes: a valid range reads back exactly; a range past
// EOF is refused by WriteTo (and by the sendfile kind's Bytes) with
// ErrTruncated; a nonsense range is an error, never a panic; and nothing
// stays open afterwards.
func FuzzView(f *testing.F) {
	const size = 64 << 10
	for _, s := range []struct {
		kind   uint8
		pos, n int64
	}{
		{0, 0, 1}, {1, 100, 5000}, {0, size - 1, 1}, {1, size - 10, 100},
		{0, 4095, 2}, {1, -1, 5}, {0, 3, -7}, {0, math.MaxInt64, 1},
		{0, 1 << 62, 4096}, {1, 1 << 40, 1 << 40}, {0, size, 0}, {1, 0, size},
	} {
		f.Add(s.kind, s.pos, s.n)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	path, data := writeTestFile(f, rng, size)

	f.Fuzz(func(t *testing.T, k uint8, pos, n64 int64) {
		kind := Kind(k % 2)
		n := int(n64)
		base := ReadCounters()
		src, err := Open(kind, OSFile(openOS(t, path)), 0)
		if err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := src.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
			if d := counterDelta(base); d.OpenFiles != 0 || d.Mappings != 0 {
				t.Errorf("left open: %+v", d)
			}
		}()

		v, err := src.View(pos, n)
		if pos < 0 || n < 0 || pos > math.MaxInt64-int64(n) {
			if !errors.Is(err, ErrInvalidRange) {
				t.Fatalf("View(%d, %d) = %v, want ErrInvalidRange", pos, n, err)
			}
			return
		}
		if kind == Mmap && errors.Is(err, ErrBeyondMapping) && pos+int64(n) > 1<<40 {
			return // no address space for it: the documented refusal
		}
		if err != nil {
			t.Fatalf("View(%d, %d): %v", pos, n, err)
		}
		defer v.Release()
		if v.Pos() != pos || v.Len() != n {
			t.Fatalf("view is [%d,+%d), asked [%d,+%d)", v.Pos(), v.Len(), pos, n)
		}

		var buf bytes.Buffer
		wn, werr := v.WriteTo(&buf)
		if n == 0 {
			b, err := v.Bytes()
			if wn != 0 || werr != nil || len(b) != 0 || err != nil {
				t.Fatalf("empty view at %d: WriteTo = %d, %v; Bytes = %d bytes, %v", pos, wn, werr, len(b), err)
			}
			return
		}
		if pos+int64(n) > size {
			if !errors.Is(werr, ErrTruncated) || wn != 0 || buf.Len() != 0 {
				t.Fatalf("WriteTo past EOF [%d,+%d) = %d, %v", pos, n, wn, werr)
			}
			if kind == Sendfile {
				if _, err := v.Bytes(); !errors.Is(err, ErrTruncated) {
					t.Fatalf("Bytes past EOF = %v, want ErrTruncated", err)
				}
			}
			return
		}
		want := data[pos : pos+int64(n)]
		if werr != nil || wn != int64(n) || !bytes.Equal(buf.Bytes(), want) {
			t.Fatalf("WriteTo [%d,+%d) = %d, %v", pos, n, wn, werr)
		}
		err = Guard(func() error {
			b, err := v.Bytes()
			if err == nil && !bytes.Equal(b, want) {
				t.Errorf("Bytes [%d,+%d) differ", pos, n)
			}
			return err
		})
		if err != nil {
			t.Fatalf("Bytes [%d,+%d): %v", pos, n, err)
		}
	})
}

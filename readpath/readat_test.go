package readpath

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

// TestViewReadAt: ReadAt returns the view's bytes at random places on both
// kinds (with and without Bytes having filled the buffer), io.EOF past the
// view's end with what it holds, and ErrReleased after Release.
func TestViewReadAt(t *testing.T) {
	rng := testRand(t)
	const size = 1<<20 + 77
	path, data := writeTestFile(t, rng, size)
	for _, kind := range kinds {
		t.Run(kind.String(), func(t *testing.T) {
			src := openSource(t, kind, path, 0)
			for i := range 100 {
				pos, n := randRange(rng, size, 256<<10)
				v, err := src.View(pos, n)
				if err != nil {
					t.Fatal(err)
				}
				if i%3 == 0 {
					if _, err := v.Bytes(); err != nil {
						t.Fatal(err)
					}
				}
				off := rng.Int64N(int64(n) + 1)
				p := make([]byte, rng.IntN(200)+1)
				k, err := v.ReadAt(p, off)
				want := data[pos+off : pos+min(off+int64(len(p)), int64(n))]
				switch {
				case len(want) < len(p) && !errors.Is(err, io.EOF):
					t.Fatalf("ReadAt past the end [%d,+%d) of a %d-byte view: %d, %v", off, len(p), n, k, err)
				case len(want) == len(p) && err != nil:
					t.Fatalf("ReadAt [%d,+%d): %v", off, len(p), err)
				case !bytes.Equal(p[:k], want):
					t.Fatalf("ReadAt [%d,+%d) of the view at %d: bytes differ", off, len(p), pos)
				}
				v.Release()
				if _, err := v.ReadAt(p, 0); !errors.Is(err, ErrReleased) {
					t.Fatalf("ReadAt after Release: %v", err)
				}
			}
		})
	}
}

package log

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/foliolog/folio/record"
	"github.com/foliolog/folio/segment"
	"github.com/foliolog/folio/vfs"
)

// FuzzCompactReader feeds arbitrary bytes to the cleaner's segment reader
// as a sealed segment's .log. It must never panic; strict, it returns
// exactly the batches of the valid prefix (what record.Parse accepts, base
// offsets at or above the segment's base and ascending), byte for byte, and
// then io.EOF at the end of the file or ErrCorrupt before it; tolerant, the
// same batches and io.EOF; header-only, the same headers.
func FuzzCompactReader(f *testing.F) {
	var seg []byte
	for i := range 3 {
		b := keyedBatch(f, []kv{{fmt.Sprint("k", i), []byte("value")}, {"t", nil}}, 1_700_000_000_000, noProducer, testCodecs[i*2%len(testCodecs)])
		b.SetBaseOffset(int64(100 + 2*i))
		seg = append(seg, b...)
	}
	f.Add(seg, 2)
	f.Add(seg[:len(seg)-7], 64)
	flipped := slices.Clone(seg)
	flipped[30] ^= 0x40
	f.Add(flipped, 1)
	f.Add([]byte{}, 0)
	f.Add(seg[:record.HeaderSize], 3)
	swapped := slices.Clone(seg)
	swapped[7] = 0 // base offset 0, below the segment's base 100
	f.Add(swapped, 5)

	dir := f.TempDir()
	const base = 100
	f.Fuzz(func(t *testing.T, data []byte, bufSize int) {
		bufSize = 1 + (bufSize&0xffff)%4096
		if err := os.WriteFile(filepath.Join(dir, segment.FileName(base, segment.LogSuffix)), data, 0o644); err != nil {
			t.Fatal(err)
		}
		var want [][]byte
		rest, prev := data, int64(base-1)
		for {
			b, r, err := record.Parse(rest)
			if err != nil || b.BaseOffset() <= prev || b.BaseOffset() < base {
				break
			}
			want = append(want, b)
			prev, rest = b.LastOffset(), r
		}
		validEnd := len(data) - len(rest)

		for _, mode := range []string{"strict", "tolerant", "headers"} {
			r, err := openBatchReader(vfs.Default, dir, base, bufSize)
			if err != nil {
				t.Fatal(err)
			}
			r.tolerant = mode == "tolerant"
			var got [][]byte
			for {
				b, pos, err := r.next(mode == "headers")
				if err == io.EOF {
					if mode == "strict" && validEnd != len(data) {
						t.Fatalf("%s: io.EOF at %d after the valid prefix ending at %d of %d bytes", mode, pos, validEnd, len(data))
					}
					break
				}
				if err != nil {
					if !errors.Is(err, ErrCorrupt) && mode != "headers" {
						t.Fatalf("%s: error %v does not match ErrCorrupt", mode, err)
					}
					if mode == "strict" && pos != int64(validEnd) {
						t.Fatalf("%s: stopped at %d, the valid prefix ends at %d", mode, pos, validEnd)
					}
					break
				}
				got = append(got, slices.Clone(b))
			}
			r.close()
			if mode == "headers" {
				// Headers alone cannot see a bad CRC: the walk may go further.
				for i := 0; i < len(want) && i < len(got); i++ {
					if !slices.Equal(got[i], want[i][:record.HeaderSize]) {
						t.Fatalf("headers: header %d differs", i)
					}
				}
				if len(got) < len(want) {
					t.Fatalf("headers: %d headers, the valid prefix has %d batches", len(got), len(want))
				}
				continue
			}
			if len(got) != len(want) {
				t.Fatalf("%s: %d batches, the valid prefix has %d", mode, len(got), len(want))
			}
			for i := range got {
				if !slices.Equal(got[i], want[i]) {
					t.Fatalf("%s: batch %d differs", mode, i)
				}
			}
		}
	})
}

package segment

import (
	"bytes"
	"math/rand"
	"testing"

	"github.com/foliolog/folio/record"
)

// countingReaderAt counts the preads of a scan and the bytes they asked for.
type countingReaderAt struct {
	r            *bytes.Reader
	calls, bytes int
}

func (c *countingReaderAt) ReadAt(p []byte, off int64) (int, error) {
	c.calls++
	c.bytes += len(p)
	return c.r.ReadAt(p, off)
}

// scanFixture lays n batches of about size bytes end to end and returns
// the bytes and each batch's position.
func scanFixture(t *testing.T, n, size int) ([]byte, []int64) {
	t.Helper()
	rng := rand.New(rand.NewSource(1))
	k := max(1, size/120)
	deltas, tss := make([]int32, k), make([]int64, k)
	for i := range k {
		deltas[i], tss[i] = int32(i), 1_700_000_000_000+int64(i)
	}
	var data []byte
	var pos []int64
	next := int64(0)
	for range n {
		b := buildBatch(t, next, deltas, tss, 100, rng)
		pos = append(pos, int64(len(data)))
		data = append(data, b...)
		next = b.LastOffset() + 1
	}
	return data, pos
}

// TestScanReadsOnlyHeadersOfLargeBatches: a scan over batches larger than
// its window (a Read cutting a fetch's view out of 64 KiB batches) reads
// the first window and then only each header, not a window per header;
// over small batches it still reads whole windows, and either way every
// header comes back right.
func TestScanReadsOnlyHeadersOfLargeBatches(t *testing.T) {
	for _, tc := range []struct {
		name      string
		n, size   int
		maxCalls  int
		maxBytes  int
		wantLarge bool
	}{
		// 16 batches of 64 KiB: one window, then 15 headers.
		{"large", 16, 64 << 10, 16, scanWindow + 15*record.HeaderSize, true},
		// 200 batches of about 1 KiB: windows, never header-sized reads.
		{"small", 200, 1 << 10, 200 * (1 << 10) / (scanWindow - record.HeaderSize) * 2, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data, pos := scanFixture(t, tc.n, tc.size)
			cr := &countingReaderAt{r: bytes.NewReader(data)}
			sc := scanner{r: cr, path: "test.log", limit: int64(len(data))}
			defer sc.free()
			for i, p := range pos {
				h, err := sc.header(p)
				if err != nil {
					t.Fatalf("batch %d at %d: %v", i, p, err)
				}
				want := record.Batch(data[p:])
				if h.BaseOffset() != want.BaseOffset() || h.Size() != want.Size() {
					t.Fatalf("batch %d at %d: header base %d size %d, want %d %d", i, p, h.BaseOffset(), h.Size(), want.BaseOffset(), want.Size())
				}
			}
			if cr.calls > tc.maxCalls {
				t.Errorf("%d preads for %d headers, want at most %d", cr.calls, tc.n, tc.maxCalls)
			}
			if tc.wantLarge && cr.bytes > tc.maxBytes {
				t.Errorf("read %d bytes for %d headers, want at most %d (a window, then headers)", cr.bytes, tc.n, tc.maxBytes)
			}
			if !tc.wantLarge && cr.bytes < cr.calls*(scanWindow/2) {
				t.Errorf("%d preads of %d bytes in all over small batches: header-sized reads where a window holds many headers", cr.calls, cr.bytes)
			}
		})
	}
}

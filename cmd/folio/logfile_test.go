package main

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/foliolog/folio/record"
	"github.com/foliolog/folio/segment"
)

var seedFlag = flag.Uint64("seed", 0, "seed of the randomized tests (0: a new one, logged)")

// testRand returns a generator whose seed the test logs, so a failure can
// be replayed with -seed.
func testRand(t *testing.T) *rand.Rand {
	seed := *seedFlag
	if seed == 0 {
		seed = rand.Uint64()
	}
	t.Logf("seed %d (replay with -seed=%d)", seed, seed)
	return rand.New(rand.NewPCG(seed, seed))
}

// buildBatch encodes count records "base+i" at base.
func buildBatch(t testing.TB, base int64, count int, valueSize int) record.Batch {
	t.Helper()
	bl, err := record.NewBuilder(nil)
	if err != nil {
		t.Fatal(err)
	}
	bl.BaseOffset = base
	for i := 0; i < count; i++ {
		if err := bl.Append(record.Record{Value: bytes.Repeat([]byte{'a' + byte(i%26)}, valueSize), Timestamp: 1000 + base + int64(i)}); err != nil {
			t.Fatal(err)
		}
	}
	b, err := bl.Build(nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func writeSegment(t testing.TB, dir string, base int64, batches ...record.Batch) string {
	t.Helper()
	var data []byte
	for _, b := range batches {
		data = append(data, b...)
	}
	p := segment.LogPath(dir, base)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func readAll(t *testing.T, lf *logFile) ([]int64, error) {
	t.Helper()
	var offs []int64
	for {
		b, _, err := lf.Next()
		if err != nil {
			return offs, err
		}
		offs = append(offs, b.BaseOffset())
	}
}

func TestLogFile(t *testing.T) {
	dir := t.TempDir()
	rng := testRand(t)
	var batches []record.Batch
	var want []int64
	off := int64(100)
	for i := 0; i < 200; i++ {
		n := 1 + rng.IntN(5)
		batches = append(batches, buildBatch(t, off, n, rng.IntN(3000)))
		want = append(want, off)
		off += int64(n) + int64(rng.IntN(2)) // compaction may leave gaps
	}
	// A batch larger than one read of the file.
	batches = append(batches, buildBatch(t, off, 1, readChunk+1000))
	want = append(want, off)
	p := writeSegment(t, dir, 100, batches...)

	lf, err := openLogFile(p, 100, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer lf.Close()
	got, err := readAll(t, lf)
	if !errors.Is(err, io.EOF) || !equalInt64s(got, want) {
		t.Fatalf("read %d batches, %v; want %d then EOF", len(got), err, len(want))
	}
	// SeekTo a batch boundary reads from there.
	pos := int64(0)
	for _, b := range batches[:57] {
		pos += int64(b.Size())
	}
	lf.SeekTo(pos)
	if b, at, err := lf.Next(); err != nil || at != pos || b.BaseOffset() != want[57] {
		t.Fatalf("after SeekTo(%d): batch %d at %d, %v; want %d", pos, b.BaseOffset(), at, err, want[57])
	}

	// The file grows, as under a live writer: the reader picks up the new
	// batch after it saw the end.
	f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	next := buildBatch(t, off+10, 2, 100)
	half := len(next) / 2
	f.Write(next[:half])
	lf.SeekTo(pos)
	_, err = readAll(t, lf)
	var torn *tornError
	if !errors.As(err, &torn) || !errors.Is(err, errTorn) || torn.Need != int64(len(next)) || torn.Have != int64(half) {
		t.Fatalf("half a batch at the end: %v", err)
	}
	f.Write(next[half:])
	f.Close()
	if b, _, err := lf.Next(); err != nil || b.BaseOffset() != off+10 {
		t.Fatalf("the completed batch: %v", err)
	}
	if _, _, err := lf.Next(); !errors.Is(err, io.EOF) {
		t.Fatalf("after the completed batch: %v", err)
	}
}

func TestLogFileDamage(t *testing.T) {
	dir := t.TempDir()
	good := buildBatch(t, 10, 3, 20)
	tests := []struct {
		name   string
		damage func(b record.Batch) []record.Batch
		want   string
		raw    bool // NextRaw passes it (framing intact)
	}{
		{"crc", func(b record.Batch) []record.Batch { b[len(b)-1] ^= 1; return []record.Batch{b} }, "crc", true},
		{"magic", func(b record.Batch) []record.Batch { b[16] = 1; return []record.Batch{b} }, "magic", false},
		{"length", func(b record.Batch) []record.Batch { b[8], b[9], b[10], b[11] = 0, 0, 0, 5; return []record.Batch{b} }, "length", false},
		{"below the base", func(b record.Batch) []record.Batch { b.SetBaseOffset(9); return []record.Batch{b} }, "below the segment's base", true},
		{"not ascending", func(b record.Batch) []record.Batch {
			c := b.Clone()
			c.SetBaseOffset(11)
			return []record.Batch{b, c}
		}, "not above the previous batch's last offset 12", true},
		{"huge", func(b record.Batch) []record.Batch {
			b[8], b[9], b[10], b[11] = 0x7f, 0, 0, 0
			return []record.Batch{b}
		}, "above the", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			batches := tc.damage(good.Clone())
			p := writeSegment(t, dir, 10, batches...)
			lf, err := openLogFile(p, 10, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer lf.Close()
			_, err = readAll(t, lf)
			var ce *corruptError
			if !errors.As(err, &ce) || !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want a *corruptError about %q", err, tc.want)
			}
			if ce.Path != p {
				t.Errorf("error names %s, want %s", ce.Path, p)
			}
			lf.SeekTo(0)
			var rawErr error
			for rawErr == nil {
				_, _, rawErr = lf.NextRaw()
			}
			if got := errors.Is(rawErr, io.EOF); got != tc.raw {
				t.Errorf("NextRaw reached the end: %v (%v), want %v", got, rawErr, tc.raw)
			}
		})
	}
	// A header cut short is a torn tail, not damage.
	p := writeSegment(t, dir, 10, good, good[:record.HeaderSize-1])
	lf, err := openLogFile(p, 10, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer lf.Close()
	_, err = readAll(t, lf)
	var torn *tornError
	if !errors.As(err, &torn) || torn.HasHeader || torn.Pos != int64(len(good)) {
		t.Fatalf("a short header at the end: %v", err)
	}
}

// FuzzLogFile: whatever a .log holds, the reader never panics, and the
// batches it returns are exactly the valid prefix: they re-parse with
// record.Parse to the same bytes, back to back from position 0.
func FuzzLogFile(f *testing.F) {
	a := buildBatch(f, 0, 3, 10)
	b := buildBatch(f, 3, 1, 100)
	f.Add([]byte{})
	f.Add([]byte(a))
	f.Add(append(append([]byte{}, a...), b...))
	f.Add(append(append([]byte{}, a...), b[:30]...))
	bad := a.Clone()
	bad[20] ^= 0xff
	f.Add(append(append([]byte{}, b...), bad...))
	dir := f.TempDir()
	p := filepath.Join(dir, segment.FileName(0, segment.LogSuffix))
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		lf, err := openLogFile(p, 0, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		defer lf.Close()
		rest := data
		pos := int64(0)
		for {
			got, at, err := lf.Next()
			if err != nil {
				var ce *corruptError
				var torn *tornError
				if !errors.Is(err, io.EOF) && !errors.As(err, &ce) && !errors.As(err, &torn) {
					t.Fatalf("unexpected error class: %v", err)
				}
				if errors.Is(err, io.EOF) && len(rest) != 0 {
					t.Fatalf("EOF with %d bytes left", len(rest))
				}
				return
			}
			if at != pos {
				t.Fatalf("batch at %d, want %d", at, pos)
			}
			want, r, perr := record.Parse(rest)
			if perr != nil || !bytes.Equal(got, want) {
				t.Fatalf("returned a batch record.Parse refuses: %v", perr)
			}
			rest = r
			pos += int64(len(got))
		}
	})
}

func equalInt64s(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

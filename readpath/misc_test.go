package readpath

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"os"
	"testing"
)

func TestKind(t *testing.T) {
	for _, tc := range []struct {
		name string
		kind Kind
		ok   bool
	}{
		{"mmap", Mmap, true},
		{"sendfile", Sendfile, true},
		{"MMAP", 0, false},
		{"", 0, false},
		{"send file", 0, false},
	} {
		k, err := ParseKind(tc.name)
		if tc.ok != (err == nil) || (tc.ok && k != tc.kind) {
			t.Errorf("ParseKind(%q) = %v, %v", tc.name, k, err)
		}
		if !tc.ok && !errors.Is(err, ErrUnknownKind) {
			t.Errorf("ParseKind(%q) error %v does not wrap ErrUnknownKind", tc.name, err)
		}
		if tc.ok && tc.kind.String() != tc.name {
			t.Errorf("%d.String() = %q, want %q", tc.kind, tc.kind.String(), tc.name)
		}
	}
	if got := Kind(9).String(); got != "Kind(9)" {
		t.Errorf("Kind(9).String() = %q", got)
	}

	type cfg struct{ ReadPath Kind }
	b, err := json.Marshal(cfg{Sendfile})
	if err != nil || string(b) != `{"ReadPath":"sendfile"}` {
		t.Errorf("Marshal = %s, %v", b, err)
	}
	var c cfg
	if err := json.Unmarshal([]byte(`{"ReadPath":"mmap"}`), &c); err != nil || c.ReadPath != Mmap {
		t.Errorf("Unmarshal mmap = %v, %v", c.ReadPath, err)
	}
	if err := json.Unmarshal([]byte(`{"ReadPath":"pread"}`), &c); !errors.Is(err, ErrUnknownKind) {
		t.Errorf("Unmarshal pread = %v, want ErrUnknownKind", err)
	}
	if _, err := json.Marshal(cfg{Kind(7)}); !errors.Is(err, ErrUnknownKind) {
		t.Errorf("Marshal Kind(7) = %v, want ErrUnknownKind", err)
	}
}

// TestOpenErrors checks Open's refusals, and that a refused file stays open
// for the caller.
func TestOpenErrors(t *testing.T) {
	rng := testRand(t)
	path, _ := writeTestFile(t, rng, 8192)
	f := openOS(t, path)
	defer f.Close()
	base := ReadCounters()
	for _, tc := range []struct {
		name    string
		kind    Kind
		file    File
		mapSize int64
		want    error
	}{
		{"nil file", Mmap, nil, 0, ErrNilFile},
		{"unknown kind", Kind(5), OSFile(f), 0, ErrUnknownKind},
		{"negative map size", Mmap, OSFile(f), -1, ErrInvalidRange},
		{"negative map size, sendfile", Sendfile, OSFile(f), -1, ErrInvalidRange},
		{"mmap without descriptor", Mmap, &memFile{data: []byte("x")}, 0, ErrNotMappable},
	} {
		src, err := Open(tc.kind, tc.file, tc.mapSize)
		if !errors.Is(err, tc.want) || src != nil {
			t.Errorf("%s: Open = %v, %v; want %v", tc.name, src, err, tc.want)
		}
	}
	if _, err := f.ReadAt(make([]byte, 1), 0); err != nil {
		t.Errorf("file refused by Open was closed: %v", err)
	}
	if d := counterDelta(base); d.OpenFiles != 0 {
		t.Errorf("refused Opens counted %d open files", d.OpenFiles)
	}
}

func TestViewErrors(t *testing.T) {
	rng := testRand(t)
	path, _ := writeTestFile(t, rng, 8192)
	for _, kind := range kinds {
		t.Run(kind.String(), func(t *testing.T) {
			src := openSource(t, kind, path, 0)
			if src.Kind() != kind {
				t.Errorf("Kind() = %v", src.Kind())
			}
			for _, r := range []struct {
				pos int64
				n   int
			}{{-1, 10}, {0, -1}, {math.MaxInt64 - 5, 10}, {math.MinInt64, 1}} {
				if v, err := src.View(r.pos, r.n); !errors.Is(err, ErrInvalidRange) {
					t.Errorf("View(%d, %d) = %v, %v; want ErrInvalidRange", r.pos, r.n, v, err)
				}
			}

			// An empty view reads nothing and maps nothing.
			base := ReadCounters()
			v, err := src.View(8192, 0)
			if err != nil {
				t.Fatal(err)
			}
			b, err := v.Bytes()
			if err != nil || len(b) != 0 {
				t.Errorf("empty Bytes = %d bytes, %v", len(b), err)
			}
			if n, err := v.WriteTo(io.Discard); n != 0 || err != nil {
				t.Errorf("empty WriteTo = %d, %v", n, err)
			}
			if d := counterDelta(base); d.Mappings != 0 {
				t.Errorf("empty view made %d mappings", d.Mappings)
			}
			v.Release()

			// A range the caller wrongly claims is written: WriteTo refuses
			// it, and the sendfile kind's Bytes too, without allocating its
			// length.
			v, err = src.View(4096, 1<<40)
			if err != nil {
				t.Fatal(err)
			}
			if n, err := v.WriteTo(io.Discard); !errors.Is(err, ErrTruncated) || n != 0 {
				t.Errorf("WriteTo past EOF = %d, %v; want ErrTruncated", n, err)
			}
			if kind == Sendfile {
				if _, err := v.Bytes(); !errors.Is(err, ErrTruncated) {
					t.Errorf("Bytes past EOF = %v, want ErrTruncated", err)
				}
			}
			v.Release()
		})
	}
}

// TestBeyondMapping asks the mmap kind for a range no address space holds.
func TestBeyondMapping(t *testing.T) {
	rng := testRand(t)
	path, _ := writeTestFile(t, rng, 8192)
	src := openSource(t, Mmap, path, 0)
	base := ReadCounters()
	if v, err := src.View(1<<62, 4096); !errors.Is(err, ErrBeyondMapping) {
		t.Errorf("View(1<<62, 4096) = %v, %v; want ErrBeyondMapping", v, err)
	}
	if d := counterDelta(base); d.Mappings != 0 || d.OpenFiles != 0 {
		t.Errorf("failed View changed counters: %+v", d)
	}
	// The Source still serves ranges it can map.
	v, err := src.View(0, 100)
	if err != nil {
		t.Fatal(err)
	}
	v.Release()
}

// TestMmapLazyAndGrowth follows one Source through the life of an active
// segment: no mapping until read, a mapping past EOF that sees later writes,
// and a larger mapping once reads pass the first, with the old one kept for
// the views cut from it.
func TestMmapLazyAndGrowth(t *testing.T) {
	rng := testRand(t)
	const first, mapSize = 10000, 64 << 10
	path, data := writeTestFile(t, rng, first)
	w, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	appendData := func(n int) {
		t.Helper()
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		if _, err := w.Write(b); err != nil {
			t.Fatal(err)
		}
		data = append(data, b...)
	}
	checkView := func(v *View) {
		t.Helper()
		want := data[v.Pos() : v.Pos()+int64(v.Len())]
		err := Guard(func() error {
			b, err := v.Bytes()
			if err == nil && !bytes.Equal(b, want) {
				t.Errorf("view [%d,+%d) differs", v.Pos(), v.Len())
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}

	base := ReadCounters()
	src, err := Open(Mmap, OSFile(openOS(t, path)), mapSize)
	if err != nil {
		t.Fatal(err)
	}
	if d := counterDelta(base); d.Mappings != 0 || d.OpenFiles != 1 {
		t.Fatalf("after Open: %+v; want a file and no mapping", d)
	}
	v1, err := src.View(0, first)
	if err != nil {
		t.Fatal(err)
	}
	checkView(v1)
	if d := counterDelta(base); d.Mappings != 1 || d.MappedBytes != mapSize {
		t.Fatalf("after the first View: %+v; want one mapping of %d bytes", d, mapSize)
	}

	// Bytes appended below mapSize are read through the same mapping.
	appendData(20000)
	v2, err := src.View(first, 20000)
	if err != nil {
		t.Fatal(err)
	}
	checkView(v2)
	if d := counterDelta(base); d.Mappings != 1 {
		t.Fatalf("read within mapSize remapped: %+v", d)
	}

	// Past mapSize: a new region covering the whole file.
	appendData(100000)
	v3, err := src.View(mapSize-100, 50000)
	if err != nil {
		t.Fatal(err)
	}
	checkView(v3)
	if d := counterDelta(base); d.Mappings != 2 || d.MappedBytes != mapSize+int64(len(data)) {
		t.Fatalf("after growth with old views held: %+v; want 2 mappings, %d bytes", d, mapSize+len(data))
	}
	checkView(v1) // the old region still serves its views
	v1.Release()
	if d := counterDelta(base); d.Mappings != 2 {
		t.Fatalf("old region unmapped while v2 holds it: %+v", d)
	}
	v2.Release()
	if d := counterDelta(base); d.Mappings != 1 || d.MappedBytes != int64(len(data)) {
		t.Fatalf("old region kept after its last view: %+v", d)
	}
	if err := src.Close(); err != nil {
		t.Fatal(err)
	}
	checkView(v3)
	if d := counterDelta(base); d.Mappings != 1 || d.OpenFiles != 1 {
		t.Fatalf("closed Source dropped what v3 holds: %+v", d)
	}
	v3.Release()
	if d := counterDelta(base); d.Mappings != 0 || d.OpenFiles != 0 || d.MappedBytes != 0 {
		t.Fatalf("after the last Release: %+v", d)
	}
}

// TestSendfileWithoutDescriptor serves a file that has no descriptor: every
// send takes the copying path.
func TestSendfileWithoutDescriptor(t *testing.T) {
	rng := testRand(t)
	data := make([]byte, 300<<10)
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	mf := &memFile{data: data}
	src, err := Open(Sendfile, mf, 0)
	if err != nil {
		t.Fatal(err)
	}
	client, server := tcpPair(t)
	base := ReadCounters()
	v, err := src.View(12345, 200<<10)
	if err != nil {
		t.Fatal(err)
	}
	sendOver(t, v, client, server, data[12345:12345+200<<10])
	if d := counterDelta(base); d.SendfileBytes != 0 || d.CopiedBytes != 200<<10 {
		t.Errorf("counters %+v; want everything copied", d)
	}
	if err := src.Close(); err != nil {
		t.Fatal(err)
	}
	if mf.closed.Load() {
		t.Error("file closed while a view is held")
	}
	v.Release()
	if !mf.closed.Load() {
		t.Error("file not closed by the last Release")
	}
}

// TestBytesCachedBuffer checks the sendfile kind's Bytes: one pread into a
// pooled buffer, the same bytes on every call, and WriteTo from that buffer.
func TestBytesCachedBuffer(t *testing.T) {
	rng := testRand(t)
	path, data := writeTestFile(t, rng, 3<<20)
	src := openSource(t, Sendfile, path, 0)
	for _, n := range []int{1, 4096, 4097, copyChunk, copyChunk + 1, 2<<20 + 3} {
		pos := int64(rng.IntN(len(data) - n + 1))
		v, err := src.View(pos, n)
		if err != nil {
			t.Fatal(err)
		}
		b1, err := v.Bytes()
		if err != nil {
			t.Fatal(err)
		}
		b2, err := v.Bytes()
		if err != nil || len(b1) != n || &b1[0] != &b2[0] || !bytes.Equal(b1, data[pos:pos+int64(n)]) {
			t.Errorf("n=%d: Bytes twice gave %d/%d bytes, same buffer %v, equal %v (%v)", n, len(b1), len(b2), &b1[0] == &b2[0], bytes.Equal(b1, data[pos:pos+int64(n)]), err)
		}
		var buf bytes.Buffer
		if _, err := v.WriteTo(&buf); err != nil || !bytes.Equal(buf.Bytes(), data[pos:pos+int64(n)]) {
			t.Errorf("n=%d: WriteTo after Bytes: %v", n, err)
		}
		v.Release()
	}
}

func TestBufPool(t *testing.T) {
	for _, n := range []int{1, 4096, 4097, 1 << 20, 16 << 20, 16<<20 + 1} {
		b := getBuf(n)
		if len(*b) != n {
			t.Errorf("getBuf(%d) has length %d", n, len(*b))
		}
		c := bufClass(n)
		if (c < 0) != (n > 1<<maxBufShift) {
			t.Errorf("bufClass(%d) = %d", n, c)
		}
		if c >= 0 && cap(*b) != 1<<(c+minBufShift) {
			t.Errorf("getBuf(%d) capacity %d, want class size %d", n, cap(*b), 1<<(c+minBufShift))
		}
		if c >= 0 && (cap(*b) < n || (c > 0 && cap(*b)/2 >= n)) {
			t.Errorf("getBuf(%d) capacity %d is not the smallest class", n, cap(*b))
		}
		putBuf(b)
	}
}

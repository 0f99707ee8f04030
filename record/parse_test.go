package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"testing"
	"testing/iotest"
)

func TestStampingOutsideCRC(t *testing.T) {
	batch := mustBuild(t, CodecZstd, []Record{{Value: []byte("v"), Timestamp: 1}}, nil)
	crc := batch.CRC()
	batch.SetPartitionLeaderEpoch(41)
	batch.SetBaseOffset(1 << 50)
	if batch.CRC() != crc || batch.Validate() != nil {
		t.Fatalf("stamping epoch and base offset touched the CRC: %08x -> %08x, %v", crc, batch.CRC(), batch.Validate())
	}
	if batch.PartitionLeaderEpoch() != 41 || batch.BaseOffset() != 1<<50 || batch.LastOffset() != 1<<50 {
		t.Fatalf("stamped fields read back as %d %d", batch.PartitionLeaderEpoch(), batch.BaseOffset())
	}
	got := decodeAll(t, batch, nil)
	if got[0].Offset != 1<<50 {
		t.Fatalf("record offset %d after restamping", got[0].Offset)
	}
}

func TestCheckHeader(t *testing.T) {
	good := mustBuild(t, CodecNone, []Record{{Value: []byte("v"), Timestamp: 1}}, nil)
	if size, err := CheckHeader(good); err != nil || size != len(good) {
		t.Fatalf("CheckHeader(good) = %d, %v", size, err)
	}
	mod := func(f func(b Batch)) Batch {
		b := good.Clone()
		f(b)
		return b
	}
	cases := []struct {
		name string
		b    []byte
		want error
	}{
		{"empty", nil, ErrShortBatch},
		{"60 bytes", good[:HeaderSize-1], ErrShortBatch},
		{"magic 1", mod(func(b Batch) { b[offMagic] = 1 }), ErrCorrupt},
		{"length below header", mod(func(b Batch) { binary.BigEndian.PutUint32(b[offLength:], HeaderSize-LogOverhead-1) }), ErrCorrupt},
		{"negative length", mod(func(b Batch) { binary.BigEndian.PutUint32(b[offLength:], math.MaxUint32) }), ErrCorrupt},
		{"negative count", mod(func(b Batch) { binary.BigEndian.PutUint32(b[offRecordCount:], math.MaxUint32) }), ErrCorrupt},
		{"negative last delta", mod(func(b Batch) { binary.BigEndian.PutUint32(b[offLastOffsetDelta:], math.MaxUint32) }), ErrCorrupt},
	}
	for _, tc := range cases {
		if _, err := CheckHeader(tc.b); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
}

// stream builds n batches, one per codec in turn, back to back.
func stream(t *testing.T, n int) ([]byte, []Batch) {
	rng := testRand(t)
	var buf []byte
	var batches []Batch
	next := int64(0)
	for i := range n {
		recs := randRecords(rng, 1+rng.IntN(20), 1_700_000_000_000)
		b := mustBuild(t, allCodecs[i%len(allCodecs)], recs, func(b *Builder) { b.BaseOffset = next })
		next += int64(len(recs))
		buf = append(buf, b...)
		batches = append(batches, b)
	}
	return buf, batches
}

func TestParseStream(t *testing.T) {
	buf, want := stream(t, 12)
	rest := buf
	for i := range want {
		b, r, err := Parse(rest)
		if err != nil {
			t.Fatalf("batch %d: %v", i, err)
		}
		if !bytes.Equal(b, want[i]) {
			t.Fatalf("batch %d differs", i)
		}
		if &b[0] != &rest[0] {
			t.Fatalf("batch %d was copied, not aliased", i)
		}
		rest = r
	}
	if _, _, err := Parse(rest); err != io.EOF {
		t.Fatalf("at the end: %v, want io.EOF", err)
	}

	// A torn tail anywhere inside the last batch is ErrShortBatch, and
	// everything before it still parses.
	lastStart := len(buf) - len(want[len(want)-1])
	for cut := lastStart + 1; cut < len(buf); cut++ {
		rest, n := buf[:cut], 0
		var err error
		for {
			var b Batch
			if b, rest, err = Parse(rest); err != nil {
				break
			}
			_ = b
			n++
		}
		if !errors.Is(err, ErrShortBatch) || n != len(want)-1 || len(rest) != cut-lastStart {
			t.Fatalf("cut at %d: %d batches then %v with %d bytes left", cut, n, err, len(rest))
		}
	}

	// A flipped byte in the middle batch stops the parse there with
	// ErrCorrupt.
	bad := bytes.Clone(buf)
	mid := len(want[0]) + len(want[1]) + HeaderSize + 2
	bad[mid] ^= 0x40
	rest = bad
	var err error
	for range 2 {
		if _, rest, err = Parse(rest); err != nil {
			t.Fatal(err)
		}
	}
	if _, r, err := Parse(rest); !errors.Is(err, ErrCorrupt) || len(r) != len(rest) {
		t.Fatalf("corrupt third batch: %v", err)
	}
}

func TestReadBatch(t *testing.T) {
	buf, want := stream(t, 7)
	for _, mk := range []func([]byte) io.Reader{
		func(b []byte) io.Reader { return bytes.NewReader(b) },
		func(b []byte) io.Reader { return iotest.OneByteReader(bytes.NewReader(b)) },
	} {
		r := mk(buf)
		var dst []byte
		for i := range want {
			b, err := ReadBatch(r, dst, nil)
			if err != nil {
				t.Fatalf("batch %d: %v", i, err)
			}
			if !bytes.Equal(b, want[i]) {
				t.Fatalf("batch %d differs", i)
			}
			dst = b
		}
		if _, err := ReadBatch(r, dst, nil); err != io.EOF {
			t.Fatalf("at the end: %v, want io.EOF", err)
		}
	}

	for _, cut := range []int{1, HeaderSize - 1, HeaderSize, len(want[0]) - 1} {
		_, err := ReadBatch(bytes.NewReader(buf[:cut]), nil, nil)
		if !errors.Is(err, ErrShortBatch) || !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("cut at %d: %v, want ErrShortBatch and io.ErrUnexpectedEOF", cut, err)
		}
	}

	// A length field near 2 GiB must be refused before any allocation.
	huge := want[0].Clone()
	binary.BigEndian.PutUint32(huge[offLength:], math.MaxInt32)
	before := heapAllocated()
	_, err := ReadBatch(bytes.NewReader(huge), nil, &DecodeOptions{MaxBatchBytes: 1 << 20})
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("2 GiB length field: %v, want ErrTooLarge", err)
	}
	if got := heapAllocated() - before; got > 64<<10 {
		t.Fatalf("refusing a 2 GiB batch allocated %d bytes", got)
	}

	bad := want[1].Clone()
	bad[len(bad)-1] ^= 1
	if _, err := ReadBatch(bytes.NewReader(bad), nil, nil); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("bad CRC: %v", err)
	}
	if _, err := ReadBatch(iotest.ErrReader(io.ErrClosedPipe), nil, nil); !errors.Is(err, io.ErrClosedPipe) {
		t.Fatalf("reader error: %v", err)
	}
	if _, err := ReadBatch(bytes.NewReader(buf), nil, &DecodeOptions{MaxBatchBytes: -5}); !errors.Is(err, ErrInvalidOptions) {
		t.Fatalf("bad options: %v", err)
	}
}

func TestClone(t *testing.T) {
	b := mustBuild(t, CodecNone, []Record{{Value: []byte("v"), Timestamp: 1}}, nil)
	c := b.Clone()
	if !bytes.Equal(b, c) || &b[0] == &c[0] {
		t.Fatal("Clone is not an independent copy")
	}
	if Batch(nil).Clone() != nil {
		t.Fatal("Clone of nil is not nil")
	}
}

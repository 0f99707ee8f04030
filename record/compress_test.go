package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"runtime"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/snappy/xerial"
	"github.com/pierrec/lz4/v4"
)

// The lz4 frame must be what Kafka's Java producer writes for magic 2
// (KafkaLZ4BlockOutputStream): a standard frame, FLG = version 01 with
// independent blocks and no checksums or content size (0x60), BD = 64 KiB
// maximum block size (0x40), and blocks no larger than that.
func TestLZ4FrameForm(t *testing.T) {
	rng := testRand(t)
	src := randBytes(rng, 300<<10)
	out := compressOrDie(t, CodecLZ4, src)
	if !bytes.Equal(out[:4], []byte{0x04, 0x22, 0x4d, 0x18}) {
		t.Fatalf("magic % x", out[:4])
	}
	if out[4] != 0x60 || out[5] != 0x40 {
		t.Fatalf("FLG %#x BD %#x, want 0x60 0x40", out[4], out[5])
	}
	// Walk the blocks: 4-byte little-endian size (high bit: stored raw),
	// no block checksums, then a zero end mark and no content checksum.
	p, blocks, decoded := 7, 0, 0
	for {
		size := binary.LittleEndian.Uint32(out[p:])
		p += 4
		if size == 0 {
			break
		}
		n := int(size &^ (1 << 31))
		if size&(1<<31) != 0 {
			decoded += n
		} else {
			buf := make([]byte, 64<<10)
			d, err := lz4.UncompressBlock(out[p:p+n], buf)
			if err != nil {
				t.Fatalf("block %d: %v", blocks, err)
			}
			decoded += d
		}
		p += n
		blocks++
	}
	if p != len(out) {
		t.Fatalf("%d bytes after the end mark (a content checksum?)", len(out)-p)
	}
	if want := (len(src) + 64<<10 - 1) / (64 << 10); blocks != want || decoded != len(src) {
		t.Fatalf("%d blocks holding %d bytes, want %d blocks of at most 64 KiB holding %d", blocks, decoded, want, len(src))
	}
}

// Snappy must be in snappy-java's xerial framing, as Kafka's Java producer
// writes it: the 8-byte magic, version 1, compatible version 1, then
// blocks of at most 32 KiB.
func TestSnappyXerialForm(t *testing.T) {
	rng := testRand(t)
	src := randBytes(rng, 100<<10)
	out := compressOrDie(t, CodecSnappy, src)
	want := append(append([]byte{}, xerialMagic...), 0, 0, 0, 1, 0, 0, 0, 1)
	if !bytes.Equal(out[:16], want) {
		t.Fatalf("header % x, want % x", out[:16], want)
	}
	var got []byte
	for p := 16; p < len(out); {
		n := int(binary.BigEndian.Uint32(out[p:]))
		block, err := s2.Decode(nil, out[p+4:p+4+n])
		if err != nil {
			t.Fatal(err)
		}
		if len(block) > 32<<10 {
			t.Fatalf("block of %d bytes", len(block))
		}
		got = append(got, block...)
		p += 4 + n
	}
	if !bytes.Equal(got, src) {
		t.Fatal("blocks do not reassemble the input")
	}
}

// Every codec reads back its own output and the other forms Kafka clients
// write: raw snappy, lz4 frames with big blocks and checksums, gzip at any
// level, and concatenated gzip members.
func TestDecompressForeignForms(t *testing.T) {
	rng := testRand(t)
	src := randBytes(rng, 200<<10)
	lz4Frame := func(opts ...lz4.Option) []byte {
		var buf bytes.Buffer
		w := lz4.NewWriter(&buf)
		if err := w.Apply(opts...); err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(src); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	gz := func(level int, parts ...[]byte) []byte {
		var buf bytes.Buffer
		for _, p := range parts {
			w, _ := gzip.NewWriterLevel(&buf, level)
			_, _ = w.Write(p)
			_ = w.Close()
		}
		return buf.Bytes()
	}
	cases := []struct {
		name  string
		codec Codec
		data  []byte
	}{
		{"raw snappy", CodecSnappy, s2.EncodeSnappy(nil, src)},
		{"xerial by klauspost", CodecSnappy, xerial.Encode(nil, src)},
		{"lz4 4MiB blocks with checksums", CodecLZ4, lz4Frame(lz4.BlockSizeOption(lz4.Block4Mb), lz4.ChecksumOption(true), lz4.BlockChecksumOption(true))},
		{"lz4 256KiB blocks", CodecLZ4, lz4Frame(lz4.BlockSizeOption(lz4.Block256Kb))},
		{"gzip best", CodecGzip, gz(gzip.BestCompression, src)},
		{"gzip two members", CodecGzip, gz(gzip.BestSpeed, src[:1000], src[1000:])},
	}
	for _, tc := range cases {
		p := getDecodeBuf()
		if err := decompress(p, tc.data, tc.codec, len(src)); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if !bytes.Equal(*p, src) {
			t.Fatalf("%s: decoded %d bytes that differ from the %d written", tc.name, len(*p), len(src))
		}
		putDecodeBuf(p)
	}
}

// A records section that decompresses to exactly the cap is fine; one
// byte more is ErrTooLarge.
func TestDecompressedCapIsExact(t *testing.T) {
	rng := testRand(t)
	recs := randRecords(rng, 300, 1_700_000_000_000)
	plain := mustBuild(t, CodecNone, recs, nil)
	size := len(plain) - HeaderSize
	for _, c := range allCodecs[1:] {
		batch := mustBuild(t, c, recs, nil)
		if _, err := tryDecodeAll(batch, &DecodeOptions{MaxDecompressedBytes: size}); err != nil {
			t.Errorf("%s: at the cap: %v", c, err)
		}
		if _, err := tryDecodeAll(batch, &DecodeOptions{MaxDecompressedBytes: size - 1}); !errors.Is(err, ErrTooLarge) {
			t.Errorf("%s: one byte over the cap: %v, want ErrTooLarge", c, err)
		}
	}
}

// Compression bombs: small batches whose records section expands far past
// the cap are refused with ErrTooLarge, having allocated about the cap at
// most twice (the output buffer grows by doubling up to the cap; the old
// buffers are garbage), never the expanded size.
func TestCompressionBombs(t *testing.T) {
	const capBytes = 1 << 20
	zeros := make([]byte, 64<<20)
	zstdHuge := []byte{0x28, 0xb5, 0x2f, 0xfd, 0xe0} // single segment, 8-byte content size
	zstdHuge = binary.LittleEndian.AppendUint64(zstdHuge, 1<<40)
	zstdHuge = append(zstdHuge, 0x01, 0x00, 0x00) // a last, empty raw block
	xerialHuge := append(append([]byte{}, xerialMagic...), 0, 0, 0, 1, 0, 0, 0, 1)
	for range 3 {
		block := s2.EncodeSnappy(nil, make([]byte, 1<<20)) // each claims 1 MiB
		xerialHuge = binary.BigEndian.AppendUint32(xerialHuge, uint32(len(block)))
		xerialHuge = append(xerialHuge, block...)
	}
	cases := []struct {
		name  string
		codec Codec
		data  []byte
	}{
		{"gzip of 64 MiB zeros", CodecGzip, compressOrDie(t, CodecGzip, zeros)},
		{"lz4 of 64 MiB zeros", CodecLZ4, compressOrDie(t, CodecLZ4, zeros)},
		{"zstd of 64 MiB zeros", CodecZstd, compressOrDie(t, CodecZstd, zeros)},
		{"xerial of 64 MiB zeros", CodecSnappy, compressOrDie(t, CodecSnappy, zeros)},
		{"raw snappy of 64 MiB zeros", CodecSnappy, s2.EncodeSnappy(nil, zeros)},
		{"zstd claiming 1 TiB", CodecZstd, zstdHuge},
		{"xerial blocks summing past the cap", CodecSnappy, xerialHuge},
	}
	opts := &DecodeOptions{MaxDecompressedBytes: capBytes}
	for _, tc := range cases {
		batch := rawBatch(tc.codec, 1, 0, tc.data)
		// Two collections empty the pools, so the count below includes
		// growing the output buffer and building the decoder.
		runtime.GC()
		runtime.GC()
		before := heapAllocated()
		_, err := tryDecodeAll(batch, opts)
		got := heapAllocated() - before
		if !errors.Is(err, ErrTooLarge) {
			t.Fatalf("%s (%d bytes): %v, want ErrTooLarge", tc.name, len(tc.data), err)
		}
		t.Logf("%s: %d compressed bytes refused after allocating %d bytes", tc.name, len(tc.data), got)
		if got > 2*capBytes+256<<10 {
			t.Errorf("%s: allocated %d bytes under a %d-byte cap", tc.name, got, capBytes)
		}
	}
}

func TestXXH32(t *testing.T) {
	// Published XXH32 (seed 0) vectors.
	for _, v := range []struct {
		sum  uint32
		data string
	}{
		{0x02cc5d05, ""},
		{0x550d7456, "a"},
		{0x32d153ff, "abc"},
		{0x9dd093b3, "abcdefg"},
		{0x9d2d8b62, "abcdefghijklmnop"},
		{0x42ae804d, "abcdefghijklmnopqrstuvwxyz0123456789"},
	} {
		if got := xxh32([]byte(v.data)); got != v.sum {
			t.Errorf("xxh32(%q) = %#08x, want %#08x", v.data, got, v.sum)
		}
	}
}

func TestLZ4FrameReader(t *testing.T) {
	rng := testRand(t)
	src := randBytes(rng, 150<<10)
	frame := func(opts ...lz4.Option) []byte {
		var buf bytes.Buffer
		w := lz4.NewWriter(&buf)
		if err := w.Apply(opts...); err != nil {
			t.Fatal(err)
		}
		_, _ = w.Write(src)
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	decode := func(data []byte, limit int) ([]byte, error) {
		return decompressLZ4(nil, data, limit)
	}
	// Content size, block and content checksums all set: every field the
	// reader verifies is present.
	full := frame(lz4.SizeOption(uint64(len(src))), lz4.BlockChecksumOption(true), lz4.ChecksumOption(true), lz4.BlockSizeOption(lz4.Block64Kb))
	if got, err := decode(full, len(src)); err != nil || !bytes.Equal(got, src) {
		t.Fatalf("full-featured frame: %v", err)
	}
	if _, err := decode(full, len(src)-1); !errors.Is(err, errCodecTooLarge) {
		t.Fatalf("content size over the cap: %v", err)
	}
	twice := append(append([]byte{}, full...), full...)
	if got, err := decode(twice, 2*len(src)); err != nil || len(got) != 2*len(src) {
		t.Fatalf("two concatenated frames: %v", err)
	}

	// reHC recomputes the header checksum after a test edits the
	// descriptor, so only the edit is wrong.
	reHC := func(f []byte, descEnd int) []byte {
		f[descEnd] = byte(xxh32(f[4:descEnd]) >> 8)
		return f
	}
	bad := []struct {
		name string
		data []byte
	}{
		{"header checksum", func() []byte { f := bytes.Clone(full); f[6+8] ^= 1; return f }()},
		{"content checksum", func() []byte { f := bytes.Clone(full); f[len(f)-1] ^= 1; return f }()},
		{"block checksum", func() []byte { f := bytes.Clone(full); f[6+8+1+4+10] ^= 1; return f }()},
		{"content size", reHC(func() []byte { f := bytes.Clone(full); f[6]++; return f }(), 6+8)},
		{"dependent blocks", reHC(func() []byte { f := bytes.Clone(full); f[4] &^= 0x20; return f }(), 6+8)},
		{"dictionary id", reHC(func() []byte { f := bytes.Clone(full); f[4] |= 0x01; return f }(), 6+8)},
		{"version 0", reHC(func() []byte { f := bytes.Clone(full); f[4] &^= 0x40; return f }(), 6+8)},
		{"block size index 3", reHC(func() []byte { f := bytes.Clone(full); f[5] = 0x30; return f }(), 6+8)},
		{"no end mark", full[:len(full)-8]},
		{"truncated header", full[:5]},
		{"bad magic", append([]byte{1, 2, 3, 4}, full[4:]...)},
		{"trailing garbage", append(bytes.Clone(full), 1, 2)},
	}
	for _, tc := range bad {
		if _, err := decode(tc.data, 1<<30); !errors.Is(err, errLZ4) {
			t.Errorf("%s: %v, want a malformed-frame error", tc.name, err)
		}
	}

	// A tiny frame that declares 4 MiB blocks decodes under a small cap
	// without a 4 MiB staging buffer.
	small := []byte("hello, kafka")
	var buf bytes.Buffer
	w := lz4.NewWriter(&buf)
	_ = w.Apply(lz4.BlockSizeOption(lz4.Block4Mb))
	_, _ = w.Write(small)
	_ = w.Close()
	runtime.GC()
	before := heapAllocated()
	got, err := decode(buf.Bytes(), 1024)
	if err != nil || !bytes.Equal(got, small) {
		t.Fatalf("tiny frame with 4 MiB blocks: %q %v", got, err)
	}
	if n := heapAllocated() - before; n > 64<<10 {
		t.Fatalf("decoding %d bytes allocated %d", len(small), n)
	}
}

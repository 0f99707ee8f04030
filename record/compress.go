package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/snappy/xerial"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// The forms written are the ones Kafka's Java producer writes for magic 2,
// so any Kafka client can read Folio's batches:
//   - gzip: one RFC 1952 member.
//   - snappy: snappy-java's xerial framing (a 16-byte header, then blocks of
//     at most 32 KiB, each a big-endian length and a raw snappy block). Raw,
//     unframed snappy (what librdkafka and franz-go's one-shot compressor
//     write) is accepted on read.
//   - lz4: one standard LZ4 frame (not Kafka's pre-0.10 broken-checksum
//     variant) with 64 KiB independent blocks and neither block nor content
//     checksums, the KafkaLZ4BlockOutputStream defaults. Reading accepts
//     any block size and either checksum (see lz4.go).
//   - zstd: one zstd frame.
//
// Encoders, decoders and output buffers are pooled: a builder or reader
// that runs once per batch would otherwise allocate a codec state (zstd's
// is hundreds of KiB) for every batch.

const (
	xerialBlockSize = 32 << 10
	xerialHeaderLen = 16
	// zstdWindow bounds a pooled encoder's memory. Kafka batches are
	// usually under a few MiB, so a larger window buys little ratio, and a
	// smaller one keeps every reader's window small too.
	zstdWindow = 1 << 20
)

var xerialMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

// appendWriter is an io.Writer that appends to b, so stream encoders can
// write straight into the batch being built.
type appendWriter struct{ b []byte }

func (w *appendWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}

type gzipEncoder struct {
	w   *gzip.Writer
	out appendWriter
}

type lz4Encoder struct {
	w   *lz4.Writer
	out appendWriter
}

// Encoder pools, one per level so a pooled encoder never needs
// reconfiguring: gzip levels -3..9 at index level+3, lz4 levels 0..9, zstd
// by zstd.EncoderLevel (1..4).
var (
	gzipEncoders [13]sync.Pool
	lz4Encoders  [10]sync.Pool
	zstdEncoders [5]sync.Pool
)

// compress appends src, compressed with c at level, to dst. The level has
// passed BuilderOptions.validate.
func compress(dst, src []byte, c Codec, level int) ([]byte, error) {
	switch c {
	case CodecNone:
		return append(dst, src...), nil
	case CodecGzip:
		return compressGzip(dst, src, level)
	case CodecSnappy:
		return compressSnappy(dst, src), nil
	case CodecLZ4:
		return compressLZ4(dst, src, level)
	case CodecZstd:
		return compressZstd(dst, src, level)
	}
	return dst, fmt.Errorf("%w: %d", ErrUnknownCodec, c)
}

func compressGzip(dst, src []byte, level int) ([]byte, error) {
	if level == 0 {
		level = gzip.DefaultCompression
	}
	pool := &gzipEncoders[level+3]
	e, _ := pool.Get().(*gzipEncoder)
	if e == nil {
		w, err := gzip.NewWriterLevel(nil, level)
		if err != nil {
			return dst, fmt.Errorf("record: gzip level %d: %w", level, err)
		}
		e = &gzipEncoder{w: w}
	}
	e.out.b = dst
	e.w.Reset(&e.out)
	_, err := e.w.Write(src)
	if err == nil {
		err = e.w.Close()
	}
	dst = e.out.b
	e.out.b = nil // the pool must not pin the caller's buffer
	pool.Put(e)
	return dst, err
}

func compressSnappy(dst, src []byte) []byte {
	// xerial.Encode writes its header only into an empty slice and encodes
	// in place only when the room is there, so hand it dst's spare capacity
	// after reserving the worst case.
	blocks := (len(src) + xerialBlockSize - 1) / xerialBlockSize
	need := xerialHeaderLen + blocks*(4+s2.MaxEncodedLen(xerialBlockSize))
	dst = slices.Grow(dst, need)
	at := len(dst)
	out := xerial.Encode(dst[at:at], src)
	if cap(out) > 0 && &out[:1][0] == &dst[at : at+1][0] {
		return dst[:at+len(out)]
	}
	return append(dst, out...)
}

func lz4Level(level int) lz4.CompressionLevel {
	if level == 0 {
		return lz4.Fast
	}
	return lz4.CompressionLevel(1 << (8 + level))
}

func compressLZ4(dst, src []byte, level int) ([]byte, error) {
	pool := &lz4Encoders[level]
	e, _ := pool.Get().(*lz4Encoder)
	if e == nil {
		w := lz4.NewWriter(nil)
		err := w.Apply(
			lz4.BlockSizeOption(lz4.Block64Kb),
			lz4.BlockChecksumOption(false),
			lz4.ChecksumOption(false),
			lz4.ConcurrencyOption(1),
			lz4.CompressionLevelOption(lz4Level(level)),
		)
		if err != nil {
			return dst, fmt.Errorf("record: lz4 level %d: %w", level, err)
		}
		e = &lz4Encoder{w: w}
	}
	e.out.b = dst
	e.w.Reset(&e.out)
	_, err := e.w.Write(src)
	if err == nil {
		err = e.w.Close()
	}
	dst = e.out.b
	e.out.b = nil
	e.w.Reset(nil)
	pool.Put(e)
	return dst, err
}

func compressZstd(dst, src []byte, level int) ([]byte, error) {
	l := zstd.SpeedDefault
	if level != 0 {
		l = zstd.EncoderLevelFromZstd(level)
	}
	pool := &zstdEncoders[l]
	e, _ := pool.Get().(*zstd.Encoder)
	if e == nil {
		var err error
		e, err = zstd.NewWriter(nil,
			zstd.WithEncoderLevel(l),
			zstd.WithEncoderConcurrency(1),
			zstd.WithWindowSize(zstdWindow),
			// An empty input still yields a frame, which every reader
			// accepts; no bytes at all would not decode as zstd.
			zstd.WithZeroFrames(true),
		)
		if err != nil {
			return dst, fmt.Errorf("record: zstd level %d: %w", level, err)
		}
	}
	dst = e.EncodeAll(src, dst)
	pool.Put(e)
	return dst, nil
}

// decodeBufs pools decompression outputs. A RecordIter holds one while its
// record views alias it and returns it on Close.
var decodeBufs sync.Pool

func getDecodeBuf() *[]byte {
	if p, _ := decodeBufs.Get().(*[]byte); p != nil {
		return p
	}
	return new([]byte)
}

func putDecodeBuf(p *[]byte) {
	*p = (*p)[:0]
	decodeBufs.Put(p)
}

type gzipDecoder struct {
	r   gzip.Reader
	src bytes.Reader
}

var (
	gzipDecoders sync.Pool
	// zstdDecoders maps a cap to a *sync.Pool of decoders built with that
	// cap as their memory bound, which is how klauspost/compress/zstd
	// refuses an oversized frame before allocating for it. Callers use
	// one or two caps, so the map stays tiny.
	zstdDecoders sync.Map
)

// errCodecTooLarge is what a decoder reports when its output would pass
// the cap; decompress turns it into ErrTooLarge with detail.
var errCodecTooLarge = errors.New("decompressed size over the cap")

// decompress decodes src, compressed with c, into *p (whose old contents
// are dropped), producing at most limit bytes. A result over limit is
// errCodecTooLarge; malformed input is the codec's own error.
func decompress(p *[]byte, src []byte, c Codec, limit int) error {
	dst := (*p)[:0]
	var err error
	switch c {
	case CodecGzip:
		dst, err = decompressGzip(dst, src, limit)
	case CodecSnappy:
		dst, err = decompressSnappy(dst, src, limit)
	case CodecLZ4:
		dst, err = decompressLZ4(dst, src, limit)
	case CodecZstd:
		dst, err = decompressZstd(dst, src, limit)
	default:
		err = ErrUnknownCodec
	}
	*p = dst[:0:cap(dst)]
	if err != nil {
		return err
	}
	*p = dst
	return nil
}

func decompressGzip(dst, src []byte, limit int) ([]byte, error) {
	d, _ := gzipDecoders.Get().(*gzipDecoder)
	if d == nil {
		d = new(gzipDecoder)
	}
	defer gzipDecoders.Put(d)
	d.src.Reset(src)
	if err := d.r.Reset(&d.src); err != nil {
		return dst, err
	}
	// A gzip member ends with its uncompressed size mod 2^32: a hint
	// (a liar only costs the doubling it would have cost anyway).
	hint := 0
	if len(src) >= 4 {
		hint = int(binary.LittleEndian.Uint32(src[len(src)-4:]))
	}
	return readCapped(dst, &d.r, limit, hint)
}

// readCapped appends r's output to dst, holding at most limit bytes; a
// one-byte probe past the cap tells an over-long stream from one that ends
// exactly at it without growing the buffer for it. hint, when positive, is
// the expected size, to allocate once.
func readCapped(dst []byte, r io.Reader, limit, hint int) ([]byte, error) {
	if hint > 0 {
		dst = growCapped(dst, min(hint, limit), limit)
	}
	for {
		if len(dst) == limit {
			var probe [1]byte
			n, err := io.ReadFull(r, probe[:])
			switch {
			case n > 0:
				return dst, errCodecTooLarge
			case err == io.EOF:
				return dst, nil
			default:
				return dst, err
			}
		}
		dst = growCapped(dst, 1, limit)
		n, err := r.Read(dst[len(dst):min(cap(dst), limit)])
		dst = dst[:len(dst)+n]
		if err == io.EOF {
			return dst, nil
		}
		if err != nil {
			return dst, err
		}
	}
}

// decompressSnappy reads xerial-framed or raw snappy. It sums the decoded
// lengths the blocks claim before allocating, so a lying length costs
// nothing, then decodes in place through xerial.DecodeCapped.
func decompressSnappy(dst, src []byte, limit int) ([]byte, error) {
	total, err := snappyDecodedLen(src, limit)
	if err != nil {
		return dst, err
	}
	dst = slices.Grow(dst[:0], total)
	return xerial.DecodeCapped(dst[:0:cap(dst)], src)
}

func snappyDecodedLen(src []byte, limit int) (int, error) {
	if len(src) < len(xerialMagic) || !bytes.Equal(src[:len(xerialMagic)], xerialMagic) {
		n, err := s2.DecodedLen(src)
		if err != nil {
			return 0, err
		}
		if n > limit {
			return 0, errCodecTooLarge
		}
		return n, nil
	}
	if len(src) < xerialHeaderLen {
		return 0, xerial.ErrMalformed
	}
	total := 0
	for rest := src[xerialHeaderLen:]; len(rest) > 0; {
		if len(rest) < 4 {
			return 0, xerial.ErrMalformed
		}
		size := binary.BigEndian.Uint32(rest)
		rest = rest[4:]
		if uint64(size) > uint64(len(rest)) {
			return 0, xerial.ErrMalformed
		}
		n, err := s2.DecodedLen(rest[:size])
		if err != nil {
			return 0, err
		}
		if n > limit-total {
			return 0, errCodecTooLarge
		}
		total += n
		rest = rest[size:]
	}
	return total, nil
}

func decompressZstd(dst, src []byte, limit int) ([]byte, error) {
	v, ok := zstdDecoders.Load(limit)
	if !ok {
		v, _ = zstdDecoders.LoadOrStore(limit, new(sync.Pool))
	}
	pool := v.(*sync.Pool)
	d, _ := pool.Get().(*zstd.Decoder)
	if d == nil {
		var err error
		d, err = zstd.NewReader(nil,
			zstd.WithDecoderConcurrency(1),
			zstd.WithDecoderLowmem(true),
			zstd.WithDecoderMaxMemory(uint64(limit)),
		)
		if err != nil {
			return dst, err
		}
	}
	defer pool.Put(d)
	out, err := d.DecodeAll(src, dst)
	if errors.Is(err, zstd.ErrDecoderSizeExceeded) || errors.Is(err, zstd.ErrWindowSizeExceeded) {
		return out, errCodecTooLarge
	}
	if err == nil && len(out) > limit {
		return out, errCodecTooLarge
	}
	return out, err
}

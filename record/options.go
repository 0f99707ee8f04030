package record

import (
	"fmt"
	"math"
)

const (
	// DefaultMaxBatchBytes is DecodeOptions.MaxBatchBytes when left zero.
	DefaultMaxBatchBytes = 64 << 20
	// DefaultMaxDecompressedBytes is DecodeOptions.MaxDecompressedBytes
	// when left zero.
	DefaultMaxDecompressedBytes = 64 << 20
)

// DecodeOptions bound what reading a batch may cost. A nil *DecodeOptions,
// or a zero field, means the default.
type DecodeOptions struct {
	// MaxBatchBytes is the largest batch, in bytes including its 12-byte
	// log overhead, that ReadBatch will allocate for and Records will
	// decode; a larger length field is ErrTooLarge before anything is
	// allocated. Default DefaultMaxBatchBytes (64 MiB); at most
	// math.MaxInt32+12, what the length field can express.
	MaxBatchBytes int
	// MaxDecompressedBytes caps the size of a compressed batch's records
	// section once decompressed. Decompression refuses a stream whose
	// declared sizes pass it before allocating (snappy, zstd, lz4 content
	// size) and stops with ErrTooLarge as soon as the output would pass it
	// otherwise, so a compression bomb costs at most about this much
	// memory (the output buffer doubles up to the cap, never past it).
	// Default DefaultMaxDecompressedBytes (64 MiB). Pooled codec state is
	// not counted: gzip's 32 KiB window and a zstd decoder, whose window the
	// cap also bounds.
	MaxDecompressedBytes int
	// SkipCRC makes Records skip the CRC-32C check. Set it only for bytes
	// already validated (Parse, Validate, or segment recovery); the
	// default, false, verifies every batch.
	SkipCRC bool
}

// withDefaults returns a copy with zero fields filled in and checks it;
// a value, not a pointer, so the read path does not allocate.
func (o *DecodeOptions) withDefaults() (DecodeOptions, error) {
	var d DecodeOptions
	if o != nil {
		d = *o
	}
	if d.MaxBatchBytes == 0 {
		d.MaxBatchBytes = DefaultMaxBatchBytes
	}
	if d.MaxDecompressedBytes == 0 {
		d.MaxDecompressedBytes = DefaultMaxDecompressedBytes
	}
	return d, d.validate()
}

func (o *DecodeOptions) validate() error {
	if o.MaxBatchBytes < 0 || int64(o.MaxBatchBytes) > math.MaxInt32+LogOverhead {
		return fmt.Errorf("%w: DecodeOptions.MaxBatchBytes %d is outside 0..%d", ErrInvalidOptions, o.MaxBatchBytes, int64(math.MaxInt32+LogOverhead))
	}
	if o.MaxDecompressedBytes < 0 {
		return fmt.Errorf("%w: DecodeOptions.MaxDecompressedBytes %d is negative", ErrInvalidOptions, o.MaxDecompressedBytes)
	}
	return nil
}

// BuilderOptions configure a Builder. A nil *BuilderOptions means the
// defaults: no compression.
type BuilderOptions struct {
	// Codec compresses the records section of every batch the Builder
	// builds. Default CodecNone.
	Codec Codec
	// Level is the codec's compression level; 0, the default, picks the
	// codec's own default. gzip: -3 (stateless) through 9, as
	// klauspost/compress/gzip numbers them; lz4: 1 through 9 (0 is lz4's
	// fast mode); zstd: 1 through 22 in zstd's own scale, mapped onto the
	// four speeds klauspost/compress/zstd implements; snappy has no levels
	// and only accepts 0.
	Level int
}

func (o *BuilderOptions) withDefaults() (BuilderOptions, error) {
	var d BuilderOptions
	if o != nil {
		d = *o
	}
	return d, d.validate()
}

func (o *BuilderOptions) validate() error {
	if !o.Codec.valid() {
		return fmt.Errorf("%w: BuilderOptions.Codec %d: %w", ErrInvalidOptions, o.Codec, ErrUnknownCodec)
	}
	lo, hi := 0, 0
	switch o.Codec {
	case CodecGzip:
		lo, hi = -3, 9
	case CodecLZ4:
		lo, hi = 0, 9
	case CodecZstd:
		lo, hi = 0, 22
	}
	if o.Level < lo || o.Level > hi {
		return fmt.Errorf("%w: BuilderOptions.Level %d is outside %d..%d for %s", ErrInvalidOptions, o.Level, lo, hi, o.Codec)
	}
	return nil
}

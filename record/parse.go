package record

import (
	"errors"
	"fmt"
	"io"
	"slices"
)

// Parse splits the first batch off buf, a stream of batches as in a
// segment file or a fetch response, and validates it (header, size, CRC).
// The batch aliases buf; nothing is allocated. It does not decode records.
//
// At the end of the stream Parse returns io.EOF when buf is empty and an
// error wrapping ErrShortBatch when buf holds a partial batch, which at a
// file's tail is a torn write; any other failure wraps ErrCorrupt. On an
// error rest is buf unchanged, so the caller knows the valid prefix (and
// the file position of the bad batch) from what it consumed so far.
func Parse(buf []byte) (b Batch, rest []byte, err error) {
	if len(buf) == 0 {
		return nil, nil, io.EOF
	}
	size, err := CheckHeader(buf)
	if err != nil {
		return nil, buf, err
	}
	if size > len(buf) {
		return nil, buf, fmt.Errorf("%w: batch at offset %d needs %d bytes, have %d", ErrShortBatch, Batch(buf).BaseOffset(), size, len(buf))
	}
	b = Batch(buf[:size:size])
	if err := b.Validate(); err != nil {
		return nil, buf, err
	}
	return b, buf[size:], nil
}

// ReadBatch reads one whole batch from r into dst's storage (overwritten
// from index 0, grown when short) and validates it. The length field is
// checked against opts.MaxBatchBytes before anything is allocated for it.
//
// It returns io.EOF when r is at its end before the first byte, and an
// error wrapping ErrShortBatch (and io.ErrUnexpectedEOF) when r ends inside
// a batch.
func ReadBatch(r io.Reader, dst []byte, opts *DecodeOptions) (Batch, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	dst = slices.Grow(dst[:0], HeaderSize)[:HeaderSize]
	if n, err := io.ReadFull(r, dst); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, io.EOF
		}
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("%w: %d of %d header bytes: %w", ErrShortBatch, n, HeaderSize, err)
		}
		return nil, err
	}
	size, err := CheckHeader(dst)
	if err != nil {
		return nil, err
	}
	if size > o.MaxBatchBytes {
		return nil, fmt.Errorf("%w: batch at offset %d is %d bytes, over MaxBatchBytes %d", ErrTooLarge, Batch(dst).BaseOffset(), size, o.MaxBatchBytes)
	}
	dst = slices.Grow(dst, size-HeaderSize)[:size]
	if n, err := io.ReadFull(r, dst[HeaderSize:]); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("%w: batch at offset %d: %d of %d bytes: %w", ErrShortBatch, Batch(dst).BaseOffset(), HeaderSize+n, size, io.ErrUnexpectedEOF)
		}
		return nil, err
	}
	b := Batch(dst)
	if err := b.Validate(); err != nil {
		return nil, err
	}
	return b, nil
}

// Clone returns a copy of b that shares no memory with it, for keeping a
// batch past the life of a mapping or pooled buffer it was read from.
func (b Batch) Clone() Batch {
	if b == nil {
		return nil
	}
	return Batch(slices.Clone([]byte(b)))
}

package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"

	"github.com/foliolog/folio/record"
)

// readChunk is how many bytes of a .log one read fetches: enough to parse
// many small batches per system call, little enough to stay cache-friendly.
const readChunk = 256 << 10

// defaultMaxBatch bounds the batch size the reader believes before it
// allocates: a damaged length field must not make it read gigabytes.
const defaultMaxBatch = record.DefaultMaxBatchBytes

// errTorn is the class of an incomplete batch at the end of a .log: a write
// in progress (a live Broker appends while we read) or a torn write a crash
// left (the next Broker's recovery cuts it). It is not corruption by
// itself; in a segment that is not the last one it is.
var errTorn = errors.New("incomplete batch")

// tornError describes an incomplete batch at the end of a .log.
type tornError struct {
	Path      string
	Pos       int64
	Have      int64 // bytes present from Pos on
	Need      int64 // the batch's size if its header is present, else 0
	HasHeader bool
}

func (e *tornError) Error() string {
	if e.HasHeader {
		return fmt.Sprintf("%s: position %d: incomplete batch: %d of its %d bytes present", e.Path, e.Pos, e.Have, e.Need)
	}
	return fmt.Sprintf("%s: position %d: incomplete batch: %d bytes, shorter than a batch header", e.Path, e.Pos, e.Have)
}

func (e *tornError) Unwrap() error { return errTorn }

// logFile reads the batches of one segment's .log, front to back, through
// positional reads of a read-only descriptor: it never writes, never maps,
// and never reads beyond the file's size at the time of each read, so a
// live writer appending to the file is harmless. A file that shrinks
// under it (a truncation by its owner) shows as an early end.
type logFile struct {
	path     string
	base     int64
	f        *os.File
	maxBatch int

	// win holds the file's bytes [winPos, winPos+len(win)); off is the
	// index in win of the next batch. Batches handed out alias win.
	win    []byte
	winPos int64
	off    int
	// prevLast is the last offset of the batch before the next one, for
	// the ascending-offsets check; base-1 at the start or after a SeekTo.
	prevLast int64
}

// openLogFile opens the .log of the segment with base offset base.
// maxBatch bounds the batch size it accepts (0: defaultMaxBatch).
func openLogFile(path string, base int64, maxBatch int) (*logFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	if maxBatch <= 0 {
		maxBatch = defaultMaxBatch
	}
	return &logFile{path: path, base: base, f: f, maxBatch: maxBatch, prevLast: base - 1}, nil
}

// Close releases the descriptor.
func (lf *logFile) Close() error { return lf.f.Close() }

// Pos is the position of the next batch.
func (lf *logFile) Pos() int64 { return lf.winPos + int64(lf.off) }

// SeekTo makes the batch at pos the next one. pos must be a batch boundary
// (from an index entry that was checked, or one Next reported).
func (lf *logFile) SeekTo(pos int64) {
	if pos >= lf.winPos && pos <= lf.winPos+int64(len(lf.win)) {
		lf.off = int(pos - lf.winPos)
	} else {
		lf.win, lf.winPos, lf.off = lf.win[:0], pos, 0
	}
	lf.prevLast = lf.base - 1
}

// NextRaw returns the next batch whose framing is sound (a header that
// passes record.CheckHeader and its whole length present) without checking
// its CRC or records, and the batch's position. At the end of the bytes
// written so far it returns io.EOF, or a *tornError if an incomplete batch
// is left; a damaged header is a *corruptError and NextRaw does not move
// past it, since the header no longer says where the next batch starts.
// The batch is valid until the next call.
func (lf *logFile) NextRaw() (record.Batch, int64, error) {
	for refilled := false; ; refilled = true {
		rest := lf.win[lf.off:]
		pos := lf.Pos()
		need := 0
		if len(rest) >= record.HeaderSize {
			size, err := record.CheckHeader(rest)
			if err != nil {
				return nil, pos, lf.corrupt(pos, rest, err)
			}
			if size > lf.maxBatch {
				return nil, pos, lf.corrupt(pos, rest, fmt.Errorf("batch of %d bytes, above the %d bytes a batch may have", size, lf.maxBatch))
			}
			if len(rest) >= size {
				lf.off += size
				return record.Batch(rest[:size]), pos, nil
			}
			need = size
		}
		if refilled {
			if len(rest) == 0 {
				return nil, pos, io.EOF
			}
			return nil, pos, &tornError{Path: lf.path, Pos: pos, Have: int64(len(rest)), Need: int64(need), HasHeader: need > 0}
		}
		if err := lf.refill(max(need, readChunk)); err != nil {
			return nil, pos, err
		}
	}
}

// Next is NextRaw plus the checks that make a batch valid in its segment:
// the CRC, a base offset not below the segment's base and above the
// previous batch's last offset, and offsets within 2^31-1 of the base
// (index entries hold them in 4 bytes). A batch that fails them is a
// *corruptError; Next has then moved past it.
func (lf *logFile) Next() (record.Batch, int64, error) {
	b, pos, err := lf.NextRaw()
	if err != nil {
		return nil, pos, err
	}
	if err := lf.check(b); err != nil {
		return nil, pos, &corruptError{Path: lf.path, Pos: pos, Offset: b.BaseOffset(), Err: err}
	}
	return b, pos, nil
}

// check applies Next's checks to a framed batch and records its last
// offset for the next one.
func (lf *logFile) check(b record.Batch) error {
	prev := lf.prevLast
	lf.prevLast = max(prev, b.LastOffset())
	if got, want := b.CRC(), b.ComputeCRC(); got != want {
		return fmt.Errorf("crc %08x, computed %08x", got, want)
	}
	if b.BaseOffset() <= prev {
		if prev < lf.base {
			return fmt.Errorf("base offset %d below the segment's base %d", b.BaseOffset(), lf.base)
		}
		return fmt.Errorf("base offset %d not above the previous batch's last offset %d", b.BaseOffset(), prev)
	}
	if b.LastOffset()-lf.base > math.MaxInt32 {
		return fmt.Errorf("last offset %d more than 2^31-1 above the segment's base %d", b.LastOffset(), lf.base)
	}
	return nil
}

// refill reads at least n bytes (fewer at the end of the file) from the
// next batch's position into the window.
func (lf *logFile) refill(n int) error {
	pos := lf.Pos()
	if cap(lf.win) < n {
		lf.win = make([]byte, n)
	}
	buf := lf.win[:n]
	got, err := lf.f.ReadAt(buf, pos)
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("reading %s at position %d: %w", lf.path, pos, err)
	}
	lf.win, lf.winPos, lf.off = buf[:got], pos, 0
	return nil
}

// corrupt describes a damaged header at pos; the base offset is reported
// when the bytes holding it are there (it may be the damaged field).
func (lf *logFile) corrupt(pos int64, rest []byte, err error) error {
	off := int64(-1)
	if len(rest) >= 8 {
		off = int64(binary.BigEndian.Uint64(rest))
	}
	return &corruptError{Path: lf.path, Pos: pos, Offset: off, Err: err}
}

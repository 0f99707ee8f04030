package segment

import (
	"errors"
	"fmt"
	"io"
	"math"
	"sync"

	"github.com/foliolog/folio/errs"
	"github.com/foliolog/folio/record"
)

// scanWindow is how many bytes a header scan reads at once: a forward scan
// over an index interval (4 KiB by default) of small batches costs one or
// two preads rather than one per batch.
const scanWindow = 8 << 10

var windowPool = sync.Pool{New: func() any { b := make([]byte, scanWindow); return &b }}

// scanner reads batch headers of one .log below a limit (the published
// size), from the .log's read mapping when it has one (Options.ReadPath
// Mmap, readers only), else with pread through a read-ahead window. A
// mapped scan costs no system call; it runs inside readpath.Guard, so a
// file cut behind the segment's back is an error, not a crash. A pread
// scan never faults, whatever the file holds: loads, rebuilds and
// recovery use it.
type scanner struct {
	r     io.ReaderAt
	data  []byte // the mapped .log from position 0, at least limit bytes; nil for pread
	path  string
	base  int64 // segment base offset, for the ascending-offset check
	limit int64
	bp    *[]byte
	win   []byte // valid bytes of the window
	off   int64  // file position of win[0]
}

func (s *Segment) newScanner(r io.ReaderAt, limit int64) scanner {
	return scanner{r: r, path: s.logPath, base: s.base, limit: limit}
}

// mappedScanner reads headers from data, which must hold the first limit
// bytes of the .log (the caller checked len(data) >= limit).
func (s *Segment) mappedScanner(data []byte, limit int64) scanner {
	return scanner{data: data, path: s.logPath, base: s.base, limit: limit}
}

func (sc *scanner) free() {
	if sc.bp != nil {
		windowPool.Put(sc.bp)
		sc.bp, sc.win = nil, nil
	}
}

// header returns the header of the batch at pos after the checks a header
// allows: it is whole, has magic 2, a length of at least the header's, a
// non-negative last offset delta and record count, and the batch ends by
// the limit. The slice is valid until the next call (for a mapped scan,
// while the mapping is held), and aliases mapped memory for a mapped scan.
func (sc *scanner) header(pos int64) (record.Batch, error) {
	if pos < 0 || sc.limit-pos < record.HeaderSize {
		return nil, errs.Corruptf(ErrCorrupt, sc.path, pos, "%d bytes left, a batch header needs %d",
			max(sc.limit-pos, 0), record.HeaderSize)
	}
	var h record.Batch
	if sc.data != nil {
		h = record.Batch(sc.data[pos : pos+record.HeaderSize : pos+record.HeaderSize])
	} else {
		if pos < sc.off || pos+record.HeaderSize > sc.off+int64(len(sc.win)) {
			if err := sc.fill(pos); err != nil {
				return nil, err
			}
		}
		i := pos - sc.off
		h = record.Batch(sc.win[i : i+record.HeaderSize])
	}
	size, err := record.CheckHeader(h)
	if err != nil {
		return nil, errs.Corrupt(ErrCorrupt, sc.path, pos, err)
	}
	if int64(size) > sc.limit-pos {
		return nil, errs.Corruptf(ErrCorrupt, sc.path, pos, "batch of %d bytes runs past the end at %d",
			size, sc.limit).AtOffset(h.BaseOffset())
	}
	return h, nil
}

func (sc *scanner) fill(pos int64) error {
	if sc.r == nil {
		return errs.Corruptf(ErrCorrupt, sc.path, pos, "no file to read")
	}
	if sc.bp == nil {
		sc.bp = windowPool.Get().(*[]byte)
	}
	want := min(int64(scanWindow), sc.limit-pos)
	if sc.win != nil && pos-sc.off >= 2*scanWindow {
		// The scan jumped more than a window since the last fill: batches
		// are larger than the window (16 KiB and up, as producers batch),
		// so a window would hold this one header and nothing else. Read
		// just the header; the next short jump reads a window again.
		want = min(want, record.HeaderSize)
	}
	buf := (*sc.bp)[:want]
	n, err := sc.r.ReadAt(buf, pos)
	if n < record.HeaderSize {
		sc.win = nil
		if err == nil || errors.Is(err, io.EOF) {
			// The file is shorter than the size it was published with:
			// something outside the segment cut it.
			return errs.Corruptf(ErrCorrupt, sc.path, pos+int64(n), "file ends here, below the written size %d", sc.limit)
		}
		return fmt.Errorf("segment: read %s at %d: %w", sc.path, pos, err)
	}
	sc.win, sc.off = buf[:n], pos
	return nil
}

// walk calls fn for each batch header from position from (which must be a
// batch boundary) to the limit, stopping early when fn returns false. Base
// offsets must ascend along the way. It returns where it stopped.
func (sc *scanner) walk(from int64, fn func(pos int64, h record.Batch) bool) (int64, error) {
	prevLast := sc.base - 1
	pos := from
	for pos < sc.limit {
		h, err := sc.header(pos)
		if err != nil {
			return pos, err
		}
		if h.BaseOffset() <= prevLast {
			return pos, errs.Corruptf(ErrCorrupt, sc.path, pos, "base offset %d not above the previous last offset %d",
				h.BaseOffset(), prevLast).AtOffset(h.BaseOffset())
		}
		if d := int64(h.LastOffsetDelta()); h.BaseOffset() > math.MaxInt64-d || h.BaseOffset()+d-sc.base > math.MaxInt32 {
			// No segment holds such a batch (a roll comes first: the
			// indexes store offsets as 4 bytes relative to the base):
			// a base offset the CRC does not cover was damaged.
			return pos, errs.Corruptf(ErrCorrupt, sc.path, pos, "base offset %d and last offset delta %d lie beyond 2^31-1 above the segment's base %d",
				h.BaseOffset(), h.LastOffsetDelta(), sc.base).AtOffset(h.BaseOffset())
		}
		prevLast = h.LastOffset()
		if !fn(pos, h) {
			return pos, nil
		}
		pos += int64(h.Size())
	}
	return pos, nil
}

// Misplaced returns why the batch h at pos of the .log r (size bytes),
// which follows offset prevLast in its segment, is out of place by the
// evidence of what follows it, or nil. What follows is C, the batch after
// it (or, when h is the file's last batch, the next segment, based at
// nextSeg; <= prevLast when unknown). h is out of place when h does not
// start right after prevLast, C starts inside h's offsets (so h and C
// conflict), h's offsets moved to start right after prevLast would end
// exactly before C, and the batch after C, if any is framed, follows C
// without a gap (or starts inside h's offsets too). The base offset is
// outside the CRC, so a flipped byte there leaves h valid but moved; the
// chain that h restores by moving back is the evidence that h, not C, is
// damaged. A C moved down onto that offset (after a gap compaction left
// before h) would break the chain after C instead, which the last check
// sees, except when C is the last batch: callers apply Misplaced only to a
// segment whose batches before h followed one another from its base.
func Misplaced(r io.ReaderAt, size, pos int64, h record.Batch, prevLast, nextSeg int64) error {
	if h.BaseOffset() == prevLast+1 {
		return nil
	}
	header := func(at int64) (record.Batch, bool) {
		if at+record.HeaderSize > size {
			return nil, false
		}
		var b [record.HeaderSize]byte
		if _, err := r.ReadAt(b[:], at); err != nil && !errors.Is(err, io.EOF) {
			return nil, false
		}
		if _, err := record.CheckHeader(b[:]); err != nil {
			return nil, false
		}
		return record.Batch(b[:]), true
	}
	end := pos + int64(h.Size())
	c, ok := header(end)
	next := nextSeg
	if ok {
		next = c.BaseOffset()
	} else if end != size {
		return nil // nothing known after h
	}
	if next <= prevLast || next > h.LastOffset() || next-prevLast-1 != int64(h.LastOffsetDelta())+1 {
		return nil
	}
	if ok {
		if d, dok := header(end + int64(c.Size())); dok && d.BaseOffset() != c.LastOffset()+1 && d.BaseOffset() > h.LastOffset() {
			return nil // the chain after C breaks: C, not h, may have moved
		}
	}
	return fmt.Errorf("base offset %d is damaged: the batch's %d offsets fit exactly between offset %d and the next batch at %d, which lies inside the offsets %d to %d it claims",
		h.BaseOffset(), int64(h.LastOffsetDelta())+1, prevLast, next, h.BaseOffset(), h.LastOffset())
}

package log

import (
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/foliolog/folio/errs"
	"github.com/foliolog/folio/index"
	"github.com/foliolog/folio/readpath"
	"github.com/foliolog/folio/record"
	"github.com/foliolog/folio/segment"
)

// filledRange is a damaged range inside a sealed segment that a read's
// repair (repairSealed) replaced with an empty batch, keeping the valid
// batches after it: d reports it, and pos is where the empty batch lies in
// the rewritten file, so that a read that would run over it stops before
// it (the reader then reads at d.From and gets d).
type filledRange struct {
	d   *DamagedRangeError
	pos int64
}

// emptyBatch builds into buf the batch with no records that covers the
// offsets [base, base+n) (n at most math.MaxInt32), carrying log-append
// time ts: what fills a damaged range or a hole.
func emptyBatch(bld *record.Builder, buf []byte, base, n, ts int64) ([]byte, error) {
	bld.Reset()
	bld.BaseOffset = base
	bld.ProducerID, bld.ProducerEpoch, bld.BaseSequence = -1, -1, -1
	bld.LogAppendTime, bld.AppendTime = true, max(ts, 0)
	if err := bld.SetLastOffsetDelta(int32(n - 1)); err != nil {
		return buf, err
	}
	return bld.Build(buf)
}

// passOverDamage is the Rewrite (segment.RecoverRewrite) of the sealed
// segment at base that a read could not load: it walks the .log r as
// walkDamage does, and for each damaged range after which resumeAfter finds
// the chain of valid batches again, writes the valid batches before it, an
// empty batch covering the range's offsets, and goes on after it. Damage
// that nothing valid follows in the segment (a cut inside its last
// batches) is the range up to fillTo, the next segment's base, filled the
// same way, so that the chain of segments stays whole; with fillTo at or
// below it, the rest of the file is copied as it is (the recovery's scan
// then cuts it). A batch whose offsets reach bound (> base: the chain of
// segments is known, as after the open) is damaged: its base offset,
// outside the CRC, was flipped. It
// rewrites nothing (false) when no damage can be passed over. It sets
// *fills to the ranges it filled.
func (l *Log) passOverDamage(base, fillTo, bound int64, r io.ReaderAt, size int64, w io.Writer, fills *[]filledRange) (bool, error) {
	path := segment.LogPath(l.dir, base)
	type piece struct {
		from, to int64 // bytes of r copied as they are
		filler   []byte
	}
	var pieces []piece
	var got []filledRange
	bld, err := record.NewBuilder(nil)
	if err != nil {
		return false, err
	}
	var hdr [record.HeaderSize]byte
	pos, next, runStart := int64(0), base, int64(0)
	gapFree := true // every batch so far followed the one before from base
	maxTs := int64(index.NoTimestamp)
	for pos < size {
		var why error
		if pos+record.HeaderSize > size {
			why = fmt.Errorf("%d bytes left, short of a batch header", size-pos)
		} else if _, err := r.ReadAt(hdr[:], pos); err != nil && !errors.Is(err, io.EOF) {
			return false, err
		} else if n, err := record.CheckHeader(hdr[:]); err != nil {
			why = err
		} else if h := record.Batch(hdr[:]); pos+int64(n) > size {
			why = fmt.Errorf("a batch of %d bytes runs past the end (%d)", n, size)
		} else if h.BaseOffset() < next {
			why = fmt.Errorf("base offset %d does not follow %d", h.BaseOffset(), next-1)
		} else if bound > base && h.LastOffset() >= bound {
			why = pastBound(h, bound)
		} else if beyondSegment(h, base) {
			why = fmt.Errorf("offsets %d to %d lie beyond 2^31-1 above the segment's base %d (a damaged base offset)", h.BaseOffset(), h.LastOffset(), base)
		} else if b, ok := batchAt(r, pos, size); !ok {
			if b != nil {
				why = b.Validate()
			}
			if why == nil {
				why = errors.New("the batch cannot be read whole")
			}
		} else if why = outOfPlace(r, size, pos, b, next, fillTo, gapFree); why == nil {
			gapFree = gapFree && b.BaseOffset() == next
			next, maxTs = b.LastOffset()+1, max(maxTs, b.MaxTimestamp())
			pos += int64(n)
			continue
		}
		q, resume, ok := l.resumeAfter(r, size, base, pos, next)
		if !ok && fillTo > next {
			// Nothing valid after it in the segment: the rest, up to
			// the next segment, is the damaged range.
			q, resume, ok = size, fillTo, true
		}
		if !ok || resume-next > math.MaxInt32 {
			break // nothing to keep after it: the scan cuts here
		}
		filler, err := emptyBatch(bld, nil, next, resume-next, maxTs)
		if err != nil {
			return false, err
		}
		pieces = append(pieces, piece{from: runStart, to: pos, filler: filler})
		c := errs.Corrupt(ErrCorrupt, path, pos, why).AtOffset(next)
		got = append(got, filledRange{d: &DamagedRangeError{Path: path, Pos: pos, From: next, Resume: resume, End: q, Err: c}})
		pos, next, runStart = q, resume, q
	}
	if len(pieces) == 0 {
		return false, nil
	}
	pieces = append(pieces, piece{from: runStart, to: size})
	written := int64(0)
	for i, p := range pieces {
		if _, err := io.Copy(w, io.NewSectionReader(r, p.from, p.to-p.from)); err != nil {
			return false, err
		}
		written += p.to - p.from
		if p.filler == nil {
			continue
		}
		got[i].pos = written
		if _, err := w.Write(p.filler); err != nil {
			return false, err
		}
		written += int64(len(p.filler))
	}
	*fills = got
	return true, nil
}

// beyondSegment reports whether the batch h claims offsets no segment at
// base holds: more than 2^31-1 above the base (a roll comes first: the
// indexes store offsets as 4 bytes relative to the base), the rule the
// segment's own scans apply (segment.checkBatch). Only a damaged base
// offset, which the CRC does not cover, makes one.
func beyondSegment(h record.Batch, base int64) bool {
	d := int64(h.LastOffsetDelta())
	return h.BaseOffset() > math.MaxInt64-d || h.BaseOffset()+d-base > math.MaxInt32
}

// outOfPlace returns why the valid batch h at pos of the .log r (size
// bytes), following offset next-1, is damaged by what follows it, or nil.
// It looks only when h does not start at next (a gap before it, which
// compaction leaves, and a flipped base offset, outside the CRC, too), and
// only when the batch after it (or, for the file's last batch, the next
// segment, based at nextSeg; <= next when unknown) lies inside h's offsets
// though not before next: then either h or that batch is damaged. h is
// when, in a segment whose batches before h followed one another from its
// base (gapFree), h moved back to next would end exactly before what
// follows (segment.Misplaced); when the next segment lies inside h's
// offsets as well; or when the valid batches after h chain, in ascending
// order, to the end of the file and below the next segment, and at least
// two of them lie inside h's offsets: taking h as valid would cost every
// one of them, where one damaged base offset explains them all. One batch
// against one, where the chain after them does not tell (a compaction gap
// before h, the batch after it moved down into h's offsets), is left as it
// was: the later one is taken as damaged.
func outOfPlace(r io.ReaderAt, size, pos int64, h record.Batch, next, nextSeg int64, gapFree bool) error {
	if h.BaseOffset() == next {
		return nil
	}
	after, end := int64(-1), pos+int64(h.Size())
	if end+record.HeaderSize <= size {
		var nb [record.HeaderSize]byte
		if _, err := r.ReadAt(nb[:], end); err == nil || errors.Is(err, io.EOF) {
			if _, err := record.CheckHeader(nb[:]); err == nil {
				after = record.Batch(nb[:]).BaseOffset()
			}
		}
	} else if end == size && nextSeg > next {
		after = nextSeg
	}
	if after < next || after > h.LastOffset() {
		return nil // no conflict (or nothing known after h)
	}
	if gapFree {
		if why := segment.Misplaced(r, size, pos, h, next-1, nextSeg); why != nil {
			return why
		}
	}
	if nextSeg > next && h.LastOffset() >= nextSeg {
		return pastBound(h, nextSeg)
	}
	if end < size && size-end <= maxResumeScan {
		stop := int64(-1)
		if nextSeg > next {
			stop = nextSeg
		}
		region := make([]byte, size-end)
		if _, err := r.ReadAt(region, end); (err == nil || errors.Is(err, io.EOF)) && chainsTo(region, stop) &&
			insideCount(region, h.LastOffset()) >= 2 {
			return fmt.Errorf("base offset %d is damaged: the valid batches after it, from offset %d on, chain to the end of the segment inside the offsets %d to %d it claims",
				h.BaseOffset(), after, h.BaseOffset(), h.LastOffset())
		}
	}
	return nil
}

// insideCount returns how many of the batches chained in region (see
// chainsTo) start at or below last.
func insideCount(region []byte, last int64) int {
	n := 0
	for len(region) > 0 {
		size, err := record.CheckHeader(region)
		if err != nil || size > len(region) {
			break
		}
		if record.Batch(region).BaseOffset() <= last {
			n++
		}
		region = region[size:]
	}
	return n
}

// checkFilled handles a read of e at offset that returned v when e has
// ranges a repair filled: a read inside one reports it (and v is
// released), one whose view runs over one is read again up to it. ok is
// false when v stands as it is.
func (l *Log) checkFilled(e *segEntry, fills []filledRange, v *readpath.View, offset int64, maxBytes int, maxPos int64) (*readpath.View, error, bool) {
	for _, f := range fills {
		if offset >= f.d.From && offset < f.d.Resume {
			v.Release()
			return nil, f.d, true
		}
		if v.Pos() < f.pos && v.Pos()+int64(v.Len()) > f.pos {
			v.Release()
			if maxPos < 0 || maxPos > f.pos {
				maxPos = f.pos
			}
			l.caps.acquire(&e.capEntry)
			v, err := e.seg.Read(max(offset, e.base), maxBytes, maxPos)
			l.caps.release(&e.capEntry)
			if err != nil {
				return nil, markCorrupt(fmt.Errorf("log: read at offset %d: %w", offset, err)), true
			}
			return v, nil, true
		}
	}
	return nil, nil, false
}

// repairLocated rewrites the sealed segment e, in which a read located
// damage (LocateDamage: a batch whose framing holds but whose checks
// fail), as repairSealed rewrites one that cannot load: each damaged range
// becomes an empty batch covering its offsets, the batches after it kept,
// so that the damaged bytes are gone from disk and the next open and
// folio verify find the segment whole, while reads go on reporting the
// range (checkFilled, LocateDamage). Views handed out before stay valid:
// they read the replaced inode. It does nothing for a read-only log, a
// segment not sealed, or one repaired already; a failed repair leaves the
// segment as it was, its damage reported by the walk as before.
func (l *Log) repairLocated(sn *snapshot, e *segEntry) {
	if l.ro != nil || !e.seg.Sealed() {
		return
	}
	l.repairMu.Lock()
	defer l.repairMu.Unlock()
	if e.filled.Load() != nil || l.beforeWrite() != nil {
		return
	}
	// The last segment is repaired only at Close (repairAtClose), when
	// nothing is appended any more: damage nothing valid follows is the
	// range up to the log end, which stays where it was.
	fillTo := l.end.Load()
	if n := nextEntry(sn, e); n != nil {
		fillTo = n.base
	}
	var fills []filledRange
	l.caps.acquire(&e.capEntry)
	defer l.caps.release(&e.capEntry)
	if _, err := e.seg.RecoverRewrite(func(r io.ReaderAt, size int64, w io.Writer) (bool, error) {
		return l.passOverDamage(e.base, fillTo, fillTo, r, size, w, &fills)
	}, false); err != nil || len(fills) == 0 {
		return
	}
	e.filled.Store(&fills)
	e.damaged.Store(nil) // its positions are the replaced file's
}

// repairAtClose rewrites the damage reads located (walkDamage) and left on
// disk, once Close has sealed the active segment: there LocateDamage
// passes over damage but leaves the file alone while appends may follow,
// and a Read that located damage itself leaves any segment as it is. Each
// is rewritten as repairLocated rewrites a sealed segment, so that the next open and folio verify find the segment whole
// and the damaged bytes, reported when they were read, are gone. A failed
// repair leaves the segment as it was.
func (l *Log) repairAtClose() {
	sn := l.snap.Load()
	for _, e := range sn.bases {
		if e.damaged.Load() != nil {
			l.repairLocated(sn, e)
		}
	}
}

// filledAt returns the range a repair of e filled that offset lies in, or
// nil.
func filledAt(e *segEntry, offset int64) *DamagedRangeError {
	if f := e.filled.Load(); f != nil {
		for _, fr := range *f {
			if offset >= fr.d.From && offset < fr.d.Resume {
				return fr.d
			}
		}
	}
	return nil
}

package log

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/foliolog/folio/errs"
	"github.com/foliolog/folio/index"
	"github.com/foliolog/folio/readpath"
	"github.com/foliolog/folio/record"
	"github.com/foliolog/folio/segment"
)

// DamagedRangeError is Read's error for an offset inside a damaged range:
// a batch of a sealed segment whose framing is broken, or offsets missing
// between two segments (a segment deleted or emptied in the middle of a
// log whose open did not scan it). The offsets [From, Resume) cannot be
// read, and reading resumes at Resume, the first offset of the next valid
// batch that the segment's sparse index knows (or the next segment's base,
// or the log end). A reader passes over
// it as over a compaction gap, having reported it. It matches ErrCorrupt
// and errs.ErrCorrupt, and errors.As finds the *errs.Corruption naming the
// file, the byte position of the damage and From.
//
// Records before the damage stay readable: a read that starts before it
// returns the batches up to it.
type DamagedRangeError struct {
	Path         string // the damaged segment's .log, or the one after a hole
	Pos          int64  // byte position of the first damaged batch, -1 for a hole
	From, Resume int64
	Err          error // an *errs.Corruption
	cause        error // what the segment reported, if it did
}

func (e *DamagedRangeError) Error() string {
	if e.Pos < 0 { // a hole: the cause says the range
		return fmt.Sprintf("%v; reading resumes at %d", e.Err, e.Resume)
	}
	return fmt.Sprintf("%v; offsets %d to %d cannot be read, reading resumes at %d", e.Err, e.From, e.Resume-1, e.Resume)
}

// Unwrap returns the *errs.Corruption and what the segment reported (so
// segment.ErrCorrupt matches too).
func (e *DamagedRangeError) Unwrap() []error {
	if e.cause == nil {
		return []error{e.Err}
	}
	return []error{e.Err, e.cause}
}

// readDamaged handles a read of e at offset that failed with cause, bad
// bytes in the segment: it finds where the valid batches end (a walk of
// the batch headers from the start of the file), reads the batch holding
// offset alone if offset lies before that, and otherwise returns a
// *DamagedRangeError with the range and where valid batches resume (the
// first offset-index entry past the damage whose batch is whole and
// valid). after is the offset to resume at when the segment has none left:
// the next segment's base, or the log end.
func (l *Log) readDamaged(e *segEntry, offset int64, maxBytes int, maxPos, after int64, cause error) (*readpath.View, error) {
	fail := markCorrupt(fmt.Errorf("log: read at offset %d: %w", offset, cause))
	if maxPos < 0 && e.seg.Sealed() && !e.seg.Loaded() {
		if v, err, ok := l.repairSealed(e, offset, maxBytes, after); ok {
			return v, err
		}
	}
	path := segment.LogPath(l.dir, e.base)
	f, err := l.fs.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, fail
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fail
	}
	size := fi.Size()
	// The valid prefix, batch by batch (CRC included: a batch misframed by
	// a bad length fails it).
	var hdr [record.HeaderSize]byte
	var buf []byte
	pos, next := int64(0), e.base
	why := errors.New("no whole batch header")
	for pos+record.HeaderSize <= size {
		if _, err := f.ReadAt(hdr[:], pos); err != nil && !errors.Is(err, io.EOF) {
			return nil, fail
		}
		n, err := record.CheckHeader(hdr[:])
		h := record.Batch(hdr[:])
		switch {
		case err != nil:
			why = err
		case pos+int64(n) > size:
			why = fmt.Errorf("a batch of %d bytes runs past the end of the file (%d)", n, size)
		case h.BaseOffset() < next:
			why = fmt.Errorf("base offset %d does not follow %d", h.BaseOffset(), next-1)
		default:
			if cap(buf) < n {
				buf = make([]byte, n)
			}
			b := record.Batch(buf[:n])
			if _, err := f.ReadAt(b, pos); err != nil {
				return nil, fail
			}
			if why = b.Validate(); why == nil {
				next = b.LastOffset() + 1
				pos += int64(n)
				continue
			}
		}
		break
	}
	if pos >= size {
		return nil, fail // the framing is whole: not damage this can pass over
	}
	if offset < next {
		// Before the damage: the batches up to it are whole.
		if maxPos < 0 || maxPos > pos {
			maxPos = pos
		}
		l.caps.acquire(&e.capEntry)
		v, err := e.seg.Read(max(offset, e.base), maxBytes, maxPos)
		l.caps.release(&e.capEntry)
		if err != nil {
			return nil, fail
		}
		return v, nil
	}
	resume := after
	if r, ok := l.resumeAfter(f, size, e.base, pos, next); ok {
		resume = r
	}
	if resume <= offset {
		return nil, fail
	}
	c := errs.Corrupt(ErrCorrupt, path, pos, why).AtOffset(next)
	return nil, &DamagedRangeError{Path: path, Pos: pos, From: next, Resume: resume, Err: c, cause: cause}
}

// resumeAfter returns the base offset of the first batch past the damage at
// pos that the segment's offset index points at and that is whole and
// valid (CRC included), at or above from.
func (l *Log) resumeAfter(f interface {
	ReadAt([]byte, int64) (int, error)
}, size, base, pos, from int64) (int64, bool) {
	x, err := index.OpenOffset(l.fs, segment.IndexPath(l.dir, base), base, false, &index.Options{MaxIndexBytes: l.opts.MaxIndexBytes})
	if err != nil {
		return 0, false
	}
	defer x.Close()
	first, ok := x.UpperBoundPosition(pos + 1)
	if !ok {
		return 0, false
	}
	var buf []byte
	for i := 0; i < x.Entries(); i++ {
		ent := x.Entry(i)
		if ent.Position < first.Position || ent.Position+record.HeaderSize > size {
			continue
		}
		var hdr [record.HeaderSize]byte
		if _, err := f.ReadAt(hdr[:], ent.Position); err != nil {
			continue
		}
		n, err := record.CheckHeader(hdr[:])
		if err != nil || ent.Position+int64(n) > size {
			continue
		}
		if cap(buf) < n {
			buf = make([]byte, n)
		}
		b := record.Batch(buf[:n])
		if _, err := f.ReadAt(b, ent.Position); err != nil {
			continue
		}
		if b.Validate() != nil || b.LastOffset() != ent.Offset || b.BaseOffset() < from {
			continue
		}
		return b.BaseOffset(), true
	}
	return 0, false
}

// afterSegment is where reading resumes after e when nothing in it past
// some damage can be read: the next segment's base, or the log end.
func (l *Log) afterSegment(sn *snapshot, e *segEntry) int64 {
	if n := nextEntry(sn, e); n != nil {
		return n.base
	}
	return l.end.Load()
}

// checkGap reports the offsets between the end of e and the base of the
// segment n after it, when offset lies there, as a *DamagedRangeError
// naming n: segments are contiguous (see holes.go), so a hole is damage
// that the open did not see (a clean open trusts the middle of the chain),
// not a gap to pass over in silence.
func (l *Log) checkGap(e, n *segEntry, offset int64) error {
	if n == nil {
		return nil
	}
	end, err := e.seg.NextOffset()
	if err != nil || end >= n.base || offset >= n.base {
		return nil
	}
	from := max(end, e.base)
	if c := e.cut.Load(); c != nil && c.Offset == from {
		// The range a read's repair of e cut: name the damage.
		return &DamagedRangeError{Path: c.Path, Pos: c.Pos, From: from, Resume: n.base, Err: c}
	}
	path := segment.LogPath(l.dir, n.base)
	c := errs.Corruptf(ErrCorrupt, path, -1, "offsets %d to %d are missing before this segment (the one before it ends at %d)", from, n.base-1, end).AtOffset(from)
	return &DamagedRangeError{Path: path, Pos: -1, From: from, Resume: n.base, Err: c}
}

// repairSealed handles a sealed segment (not the one the readers' end lies
// in) that cannot even be loaded because of damage after its last index
// entry or a cut inside a batch: a clean open trusted it without a scan.
// It recovers the segment as an unclean open would (cut at the first bad
// batch, fsynced, indexes rebuilt; no view of it can exist, since it never
// loaded), then reads offset if it lies before the cut, and otherwise
// reports the range from the cut to after. ok is false when this is not
// the case or the repair failed (the caller reports the read's error).
func (l *Log) repairSealed(e *segEntry, offset int64, maxBytes int, after int64) (v *readpath.View, err error, ok bool) {
	l.caps.acquire(&e.capEntry)
	defer l.caps.release(&e.capEntry)
	if _, err := e.seg.NextOffset(); err == nil || !errors.Is(err, segment.ErrCorrupt) {
		return nil, nil, false
	}
	if err := l.beforeWrite(); err != nil {
		return nil, nil, false
	}
	res, err := e.seg.Recover()
	if err != nil || res.Cause == nil {
		return nil, nil, false
	}
	end := res.LastOffset + 1
	path := segment.LogPath(l.dir, e.base)
	why := res.Cause
	if rc := (*errs.Corruption)(nil); errors.As(why, &rc) && rc.Err != nil {
		why = rc.Err // it names the file itself
	}
	c := errs.Corrupt(ErrCorrupt, path, res.ValidBytes, why).AtOffset(end)
	e.cut.Store(c)
	if offset < end {
		v, err := e.seg.Read(max(offset, e.base), maxBytes, -1)
		return v, err, err == nil
	}
	if after <= offset {
		return nil, nil, false
	}
	return nil, &DamagedRangeError{Path: path, Pos: res.ValidBytes, From: end, Resume: after, Err: c, cause: res.Cause}, true
}

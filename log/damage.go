package log

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

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
	// End is the byte position in Path of the batch at Resume when it is
	// in the same segment (the damaged bytes are [Pos, End)), else 0.
	End   int64
	Err   error // an *errs.Corruption
	cause error // what the segment reported, if it did
}

func (e *DamagedRangeError) Error() string {
	if e.Pos < 0 { // a hole: the cause says the range
		return fmt.Sprintf("%v; reading resumes at %d", e.Err, e.Resume)
	}
	if e.End > e.Pos {
		return fmt.Sprintf("%v; offsets %d to %d (bytes %d to %d) cannot be read, reading resumes at %d", e.Err, e.From, e.Resume-1, e.Pos, e.End-1, e.Resume)
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
// bytes in the segment, or (cause nil) one whose first batch starts past
// offset in a segment where damage was located (a lookup by offset may
// have passed over valid batches by a damaged length field). It walks the
// segment (walkDamage) and reads the batch holding offset from the
// position the walk found it at, up to the next damage, or returns a
// *DamagedRangeError for the range offset lies in. after is the offset
// to resume at when the segment has no valid batch left past some damage:
// the next segment's base, or the log end.
func (l *Log) readDamaged(e *segEntry, offset int64, maxBytes int, maxPos, after int64, cause error) (*readpath.View, error) {
	fail := func(err error) error {
		if cause == nil {
			cause = err
		}
		return markCorrupt(fmt.Errorf("log: read at offset %d: %w", offset, cause))
	}
	if cause != nil && maxPos < 0 && e.seg.Sealed() && !e.seg.Loaded() {
		if v, err, ok := l.repairSealed(e, offset, maxBytes, after); ok {
			return v, err
		}
	}
	w, err := l.walkDamage(e, max(offset, e.base), maxPos, after)
	switch {
	case err != nil:
		return nil, fail(err)
	case w.damage != nil:
		w.damage.cause = cause
		return nil, w.damage
	case w.hold < 0:
		return nil, fail(errs.Corruptf(ErrCorrupt, segment.LogPath(l.dir, e.base), -1, "no valid batch holds offset %d", offset))
	}
	if w.whole {
		w.runEnd = maxPos // no damage after the batch: read as far as asked
	}
	l.caps.acquire(&e.capEntry)
	v, err := e.seg.ReadAt(w.hold, maxBytes, w.runEnd)
	l.caps.release(&e.capEntry)
	if err != nil {
		return nil, fail(err)
	}
	return v, nil
}

// damageWalk is what walkDamage found for an offset: the valid batch
// holding it, or the damaged range it lies in.
type damageWalk struct {
	hold   int64 // position of the first valid batch whose last offset is at or above the offset; -1 for none
	runEnd int64 // where the valid batches from hold end (the next damage)
	whole  bool  // no damage from hold to the end of the walk
	damage *DamagedRangeError
}

// walkDamage walks e's .log from the start, batch by batch, CRC included
// (a misframed batch fails it too), up to maxPos (< 0: the file's size),
// passing over each damaged range as a reader would, to the first batch
// past it that resumeAfter finds, until it reaches the batch holding
// offset or the range offset lies in. A range with no valid batch after it
// in the segment resumes at after.
//
// The damage's own fields are never trusted for where the range ends: the
// range starts after the last valid batch before it, and ends where
// resumeAfter finds a valid batch that the chain of valid batches after it
// connects with the segment's index (or its end).
func (l *Log) walkDamage(e *segEntry, offset, maxPos, after int64) (damageWalk, error) {
	path := segment.LogPath(l.dir, e.base)
	f, err := l.fs.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return damageWalk{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return damageWalk{}, err
	}
	limit := fi.Size()
	if maxPos >= 0 && maxPos < limit {
		limit = maxPos
	}
	var hdr [record.HeaderSize]byte
	var buf []byte
	pos, next, hold := int64(0), e.base, int64(-1)
	gapFree := true // every batch so far followed the one before from the base
	for {
		var why error
		for pos < limit {
			if pos+record.HeaderSize > limit {
				why = fmt.Errorf("%d bytes left, short of a batch header", limit-pos)
				break
			}
			if _, err := f.ReadAt(hdr[:], pos); err != nil && !errors.Is(err, io.EOF) {
				return damageWalk{}, err
			}
			n, err := record.CheckHeader(hdr[:])
			h := record.Batch(hdr[:])
			switch {
			case err != nil:
				why = err
			case pos+int64(n) > limit:
				why = fmt.Errorf("a batch of %d bytes runs past the end (%d)", n, limit)
			case h.BaseOffset() < next:
				why = fmt.Errorf("base offset %d does not follow %d", h.BaseOffset(), next-1)
			case after > e.base && h.LastOffset() >= after:
				why = pastBound(h, after)
			default:
				if cap(buf) < n {
					buf = make([]byte, n)
				}
				b := record.Batch(buf[:n])
				if _, err := f.ReadAt(b, pos); err != nil && !errors.Is(err, io.EOF) {
					return damageWalk{}, err
				}
				if why = b.Validate(); why == nil {
					why = outOfPlace(f, limit, pos, b, next, after, gapFree)
				}
				if why == nil {
					if hold < 0 && b.LastOffset() >= offset {
						hold = pos
					}
					gapFree = gapFree && b.BaseOffset() == next
					next = b.LastOffset() + 1
					pos += int64(n)
					continue
				}
			}
			break
		}
		if hold >= 0 {
			return damageWalk{hold: hold, runEnd: pos, whole: why == nil}, nil
		}
		if why == nil {
			return damageWalk{hold: -1}, nil // offset lies past the walk
		}
		q, r, ok := l.resumeAfter(f, limit, e.base, pos, next)
		if !ok {
			q, r = 0, after
		}
		e.noteDamage(damageAt{pos: pos, resume: r})
		if !ok || offset < r {
			c := errs.Corrupt(ErrCorrupt, path, pos, why).AtOffset(next)
			return damageWalk{hold: -1, damage: &DamagedRangeError{Path: path, Pos: pos, From: next, Resume: r, End: q, Err: c}}, nil
		}
		pos, next = q, r
	}
}

// pastBound is the damage of a batch whose offsets reach bound, where the
// next segment (or the log end) starts: its base offset, outside the CRC,
// was flipped.
func pastBound(h record.Batch, bound int64) error {
	return fmt.Errorf("offsets %d to %d reach %d, where the next segment or the log end starts (a damaged base offset)", h.BaseOffset(), h.LastOffset(), bound)
}

// noteDamage adds d to the damaged batches e's reads located.
func (e *segEntry) noteDamage(d damageAt) {
	for {
		old := e.damaged.Load()
		var ds []damageAt
		if old != nil {
			if slices.Contains(*old, d) {
				return
			}
			ds = slices.Clone(*old)
		}
		ds = append(ds, d)
		if e.damaged.CompareAndSwap(old, &ds) {
			return
		}
	}
}

// maxResumeScan bounds the bytes resumeAfter searches byte by byte for the
// next valid batch; past it only the offset index's next entry is taken.
const maxResumeScan = 64 << 20

// resumeAfter returns the position and base offset of the first valid
// batch (CRC included) after the damage at pos, at or above offset from,
// below limit. It takes nothing from the damaged bytes (a flipped length
// or last-offset field would send a reader anywhere): the batch is found
// by trying each byte position after pos up to stop, the first position
// past pos that the offset index points at whose batch is valid and
// matches its entry (or limit when none does), and it counts only if the
// chain of valid batches from it, each by its length, with ascending
// offsets, reaches stop exactly. So no valid batch between the damage and
// stop is passed over: every one of them chains to stop. None found, the
// index's batch at stop is the answer, and ok is false when there is none.
func (l *Log) resumeAfter(f io.ReaderAt, limit, base, pos, from int64) (at, offset int64, ok bool) {
	stop, stopBase := limit, int64(-1)
	x, err := index.OpenOffset(l.fs, segment.IndexPath(l.dir, base), base, false, &index.Options{MaxIndexBytes: l.opts.MaxIndexBytes})
	if err == nil {
		defer x.Close()
		lo, hi := 0, x.Entries()
		for lo < hi { // the first entry past pos
			mid := int(uint(lo+hi) >> 1)
			if x.Entry(mid).Position <= pos {
				lo = mid + 1
			} else {
				hi = mid
			}
		}
		for i := lo; i < x.Entries(); i++ {
			ent := x.Entry(i)
			if ent.Position >= limit {
				break
			}
			if b, ok := batchAt(f, ent.Position, limit); ok && b.LastOffset() == ent.Offset && b.BaseOffset() >= from {
				stop, stopBase = ent.Position, b.BaseOffset()
				break
			}
		}
	}
	if stop-pos > maxResumeScan {
		return stop, stopBase, stopBase >= 0
	}
	region := make([]byte, stop-pos)
	if _, err := f.ReadAt(region, pos); err != nil && !errors.Is(err, io.EOF) {
		return stop, stopBase, stopBase >= 0
	}
	for q := 1; q+record.HeaderSize <= len(region); q++ {
		n, err := record.CheckHeader(region[q:])
		if err != nil || n > len(region)-q {
			continue
		}
		b := record.Batch(region[q : q+n])
		if b.BaseOffset() < from || b.Validate() != nil {
			continue
		}
		if chainsTo(region[q:], stopBase) {
			return pos + int64(q), b.BaseOffset(), true
		}
	}
	return stop, stopBase, stopBase >= 0
}

// chainsTo reports whether region is a chain of valid batches, each
// starting where the one before ends, with ascending offsets, all below
// stopBase (the base of the batch after the region; < 0 for none).
func chainsTo(region []byte, stopBase int64) bool {
	last := int64(-1)
	for len(region) > 0 {
		n, err := record.CheckHeader(region)
		if err != nil || n > len(region) {
			return false
		}
		b := record.Batch(region[:n])
		if b.BaseOffset() <= last || b.Validate() != nil {
			return false
		}
		last, region = b.LastOffset(), region[n:]
	}
	return stopBase < 0 || last < stopBase
}

// batchAt reads the batch at pos of f and reports whether it is whole,
// ends by limit and is valid (CRC included).
func batchAt(f io.ReaderAt, pos, limit int64) (record.Batch, bool) {
	var hdr [record.HeaderSize]byte
	if pos+record.HeaderSize > limit {
		return nil, false
	}
	if _, err := f.ReadAt(hdr[:], pos); err != nil && !errors.Is(err, io.EOF) {
		return nil, false
	}
	n, err := record.CheckHeader(hdr[:])
	if err != nil || pos+int64(n) > limit {
		return nil, false
	}
	b := make(record.Batch, n)
	if _, err := f.ReadAt(b, pos); err != nil && !errors.Is(err, io.EOF) {
		return nil, false
	}
	return b, b.Validate() == nil
}

// LocateDamage tells a reader whose check of a batch failed (Read checks
// no CRC; a consumer's decode does) what the damage costs: for the first
// batch at or after offset below the high watermark, it returns a
// *DamagedRangeError with the range that cannot be read, its file and byte
// position, and the first valid batch after it (found as Read finds it for
// a misframed batch: see walkDamage), or nil when that batch is valid in
// the file (the damage the reader saw is not the file's; it keeps its own
// error). Any other error is the walk's. Damage it locates in a sealed
// segment is rewritten there as an empty batch covering the range (see
// repairLocated), which it and Read go on reporting while the log is open.
func (l *Log) LocateDamage(offset int64) error {
	if l.closed.Load() {
		return ErrClosed
	}
	sn, limit := l.snap.Load(), l.hw.Load()
	for e := floorEntry(sn, offset); e != nil && e.base <= limit.segBase; e = nextEntry(sn, e) {
		if d := filledAt(e, max(offset, e.base)); d != nil {
			return d // repaired meanwhile: the range stays reported
		}
		maxPos := int64(-1)
		if e.base == limit.segBase {
			maxPos = limit.pos
		}
		w, err := l.walkDamage(e, max(offset, e.base), maxPos, l.afterSegment(sn, e))
		if err != nil {
			if again, _ := l.lookAgain(err); again {
				return nil // deleted meanwhile: a new read tells
			}
			return markCorrupt(fmt.Errorf("log: locate damage at offset %d: %w", offset, err))
		}
		if w.damage != nil {
			if e.base < limit.segBase {
				// A sealed segment: the damaged bytes are rewritten
				// (repairLocated), the range reported all the same.
				l.repairLocated(sn, e)
			}
			return w.damage
		}
		if w.hold >= 0 {
			return nil
		}
	}
	return nil
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
// It recovers the segment with the segment's locks held
// (segment.RecoverRewrite): each damaged range after which the chain of
// valid batches resumes (found as walkDamage finds it) is replaced by an
// empty batch covering its offsets, and the batches after it are kept;
// damage that nothing valid follows in the segment makes the range up to
// the next segment's base, filled the same way (with no next segment it
// is cut, as an unclean open would cut it); the file is fsynced and the
// indexes rebuilt (no view of it can exist, since it never loaded). Then it reads offset if it lies in a kept batch, reports the
// filled range it lies in, or the range from the cut to after. The filled
// ranges stay reported to reads while the log is open (checkFilled). ok is
// false when this is not the case or the repair failed (the caller
// reports the read's error).
func (l *Log) repairSealed(e *segEntry, offset int64, maxBytes int, after int64) (v *readpath.View, err error, ok bool) {
	l.repairMu.Lock()
	defer l.repairMu.Unlock()
	l.caps.acquire(&e.capEntry)
	defer l.caps.release(&e.capEntry)
	if _, err := e.seg.NextOffset(); err == nil || !errors.Is(err, segment.ErrCorrupt) {
		return nil, nil, false
	}
	if err := l.beforeWrite(); err != nil {
		return nil, nil, false
	}
	var fills []filledRange
	res, err := e.seg.RecoverRewrite(func(r io.ReaderAt, size int64, w io.Writer) (bool, error) {
		fillTo := int64(-1)
		if n := nextEntry(l.snap.Load(), e); n != nil {
			fillTo = n.base
		}
		return l.passOverDamage(e.base, fillTo, fillTo, r, size, w, &fills)
	}, false)
	if err != nil || res.Cause == nil && len(fills) == 0 {
		return nil, nil, false
	}
	if len(fills) > 0 {
		e.filled.Store(&fills)
	}
	end := res.LastOffset + 1
	path := segment.LogPath(l.dir, e.base)
	var c *errs.Corruption
	if res.Cause != nil {
		why := res.Cause
		if rc := (*errs.Corruption)(nil); errors.As(why, &rc) && rc.Err != nil {
			why = rc.Err // it names the file itself
		}
		c = errs.Corrupt(ErrCorrupt, path, res.ValidBytes, why).AtOffset(end)
		e.cut.Store(c)
	}
	if offset < end {
		v, err := e.seg.Read(max(offset, e.base), maxBytes, -1)
		if err != nil {
			return nil, nil, false
		}
		if v, err, ok := l.checkFilled(e, fills, v, max(offset, e.base), maxBytes, -1); ok {
			return v, err, true
		}
		return v, nil, true
	}
	if c == nil || after <= offset {
		return nil, nil, false
	}
	return nil, &DamagedRangeError{Path: path, Pos: res.ValidBytes, From: end, Resume: after, Err: c, cause: res.Cause}, true
}

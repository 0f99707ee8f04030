package log

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sync"

	"github.com/foliolog/folio/errs"
	"github.com/foliolog/folio/index"
	"github.com/foliolog/folio/record"
	"github.com/foliolog/folio/segment"
)

// The offsets of a log are contiguous from segment to segment: a roll
// starts the next segment at the log end, retention deletes the oldest
// segments first, truncation the newest first, and a cleaned segment keeps
// its last batch so that it ends where the next begins. Open checks that
// chain where it reads segments anyway (see chain checks in load and
// recover); what breaks it is damage, and Open repairs it so that the log
// keeps every record it still holds, the next append goes right after the
// real end, and the finding is reported once (RecoveryReport.Damage):
//
//   - a segment after a hole, or inside the previous one's range, that
//     holds no record (an empty or zero-filled stray file) is removed: it
//     holds nothing; one inside the previous one's range that holds
//     records is set aside (renamed with segment.StraySuffix);
//   - on a clean open, a segment that starts beyond the end the clean
//     shutdown checkpointed is no part of the log: removed if it holds no
//     record, otherwise its files are set aside (renamed with
//     segment.StraySuffix), not adopted;
//   - any other hole (a segment deleted, emptied or renamed away in the
//     middle) costs exactly its range: the segments after it are kept, and
//     the range is filled with empty batches in a segment of its own, as a
//     compaction leaves batches without records, so that readers pass over
//     it and the next open and verify find the chain whole.

// holeDamage reports offsets [from, to) missing before the segment at
// base.
func (l *Log) holeDamage(from, to, base int64) {
	l.recovery.Damage = append(l.recovery.Damage, errs.Corruptf(ErrCorrupt, segment.LogPath(l.dir, base), -1,
		"offsets %d to %d are missing before this segment (the previous one ends at %d): the range is lost, filled with empty batches", from, to-1, from).AtOffset(from))
}

// removeStray deletes a segment that holds no record and starts beyond the
// end of the one before it.
func (l *Log) removeStray(e *segEntry, prevNext int64) error {
	return l.removeEmpty(e, fmt.Sprintf("a segment holding no record, past the end (%d) of the log before it", prevNext))
}

// removeEmpty deletes a segment that holds no valid batch, saying why it
// is no part of the log.
func (l *Log) removeEmpty(e *segEntry, why string) error {
	if err := l.beforeWrite(); err != nil {
		return err
	}
	l.tree.Delete(e)
	l.caps.forget(&e.capEntry)
	if err := e.seg.Delete(); err != nil {
		return fmt.Errorf("log: remove stray %s: %w", e.seg, err)
	}
	l.recovery.SegmentsRemoved++
	l.recovery.Damage = append(l.recovery.Damage, errs.Corruptf(ErrCorrupt, segment.LogPath(l.dir, e.base), -1, "%s: removed", why))
	return nil
}

// setAside renames the files of a segment that is no part of the log with
// segment.StraySuffix and drops it from the tree.
func (l *Log) setAside(e *segEntry, why string) error {
	if err := l.beforeWrite(); err != nil {
		return err
	}
	l.tree.Delete(e)
	l.caps.forget(&e.capEntry)
	if err := e.seg.Close(); err != nil {
		return fmt.Errorf("log: close stray %s: %w", e.seg, err)
	}
	for _, suf := range segSuffixes {
		name := filepath.Join(l.dir, segment.FileName(e.base, suf))
		if err := l.fs.Rename(name, name+segment.StraySuffix); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("log: set aside %s: %w", name, err)
		}
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		return fmt.Errorf("log: sync dir %s: %w", l.dir, err)
	}
	l.recovery.SegmentsRemoved++
	l.recovery.Damage = append(l.recovery.Damage, errs.Corruptf(ErrCorrupt, segment.LogPath(l.dir, e.base), -1,
		"%s: set aside as %s", why, segment.FileName(e.base, segment.LogSuffix+segment.StraySuffix)))
	return nil
}

// fillHole writes segments at from holding empty batches (no records)
// that cover the offsets [from, to), durably, and puts them in the tree,
// unloaded. ts is the time the batches carry (log-append time), the
// previous segment's largest, so that time retention treats them as it
// does their neighbours.
func (l *Log) fillHole(from, to, ts int64) error {
	if err := l.beforeWrite(); err != nil {
		return err
	}
	bld, err := record.NewBuilder(nil)
	if err != nil {
		return err
	}
	var buf []byte
	for base := from; base < to; {
		n := min(to-base, math.MaxInt32) // one batch, relative offsets within int32
		seg, err := segment.Create(l.fs, l.dir, base, l.segOpts())
		if err != nil {
			return fmt.Errorf("log: fill offsets %d to %d: %w", from, to-1, err)
		}
		buf, err = emptyBatch(bld, buf, base, n, ts)
		if err == nil {
			_, err = seg.Append(record.Batch(buf))
		}
		if err == nil {
			err = seg.Seal()
		}
		if cerr := seg.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("log: fill offsets %d to %d: %w", from, to-1, err)
		}
		seg, err = segment.Open(l.fs, l.dir, base, l.segOpts())
		if err != nil {
			return fmt.Errorf("log: fill offsets %d to %d: %w", from, to-1, err)
		}
		l.tree.ReplaceOrInsert(l.newEntry(seg))
		base += n
	}
	return nil
}

// checkTail checks the end of a cleanly closed log against the end its
// clean shutdown checkpointed (rp: the recovery point of a clean close is
// the log end), loading only the last segment. A segment starting at or
// past rp is no part of the log, except an empty one starting exactly
// there (the segment a roll had just begun): one holding no record is
// removed, one holding records is set aside. With rp unknown (0) the last
// segment is checked against the one before it instead. It returns the
// entries, ascending, as they are afterwards.
func (l *Log) checkTail(entries []*segEntry, rp int64) ([]*segEntry, error) {
	for len(entries) >= 2 {
		last := entries[len(entries)-1]
		end := int64(-1)
		if rp > 0 {
			end = rp
		}
		if err := l.loadLast(last, nil, end); err != nil {
			return nil, err
		}
		next, err := last.seg.NextOffset()
		if err != nil {
			return nil, fmt.Errorf("log: %w", err)
		}
		empty := next == last.base
		if rp <= 0 {
			return l.checkLastPair(entries, empty)
		}
		if last.base < rp || (empty && last.base == rp) {
			return entries, nil // part of the log the clean shutdown left
		}
		if empty {
			err = l.removeStray(last, rp)
		} else {
			err = l.setAside(last, fmt.Sprintf("holds offsets %d to %d, beyond the end (%d) the log had at its clean shutdown", last.base, next-1, rp))
		}
		if err != nil {
			return nil, err
		}
		entries = entries[:len(entries)-1]
	}
	return entries, nil
}

// checkLastPair checks the last segment against the one before it (which
// it loads): an empty one after a hole or inside the previous range is
// removed, one holding records inside it set aside, a hole before one
// holding records filled.
func (l *Log) checkLastPair(entries []*segEntry, empty bool) ([]*segEntry, error) {
	last, prev := entries[len(entries)-1], entries[len(entries)-2]
	l.caps.acquire(&prev.capEntry)
	prevNext, err := prev.seg.NextOffset()
	ts := int64(index.NoTimestamp)
	if err == nil {
		ts, err = prev.seg.MaxTimestamp()
	}
	l.caps.release(&prev.capEntry)
	if errors.Is(err, segment.ErrCorrupt) || (err == nil && last.base == prevNext) {
		return entries, nil // contiguous, or damage the read path reports where it is
	}
	if err != nil {
		return nil, fmt.Errorf("log: %w", err)
	}
	switch {
	case empty:
		err = l.removeStray(last, prevNext)
	case last.base < prevNext:
		err = l.setAside(last, fmt.Sprintf("base offset %d lies inside the previous segment, which ends at %d", last.base, prevNext))
	default:
		l.holeDamage(prevNext, last.base, last.base)
		err = l.fillHole(prevNext, last.base, ts)
	}
	if err != nil {
		return nil, err
	}
	entries = entries[:0]
	l.tree.Ascend(func(e *segEntry) bool {
		entries = append(entries, e)
		return true
	})
	return entries, nil
}

// checkMissing checks the chain around each base whose .log is gone from
// inside the log (its index files were left): the segment before it
// against the one after, filling a hole. It returns the entries as they
// are afterwards.
func (l *Log) checkMissing(bases []int64) ([]*segEntry, error) {
	for _, x := range bases {
		var prev, next *segEntry
		l.tree.DescendLessOrEqual(&segEntry{base: x}, func(e *segEntry) bool {
			prev = e
			return false
		})
		l.tree.AscendGreaterOrEqual(&segEntry{base: x}, func(e *segEntry) bool {
			next = e
			return false
		})
		if prev == nil || next == nil || prev.base == x || next.base == x {
			continue
		}
		l.caps.acquire(&prev.capEntry)
		prevNext, err := prev.seg.NextOffset()
		ts := int64(index.NoTimestamp)
		if err == nil {
			ts, err = prev.seg.MaxTimestamp()
		}
		l.caps.release(&prev.capEntry)
		if errors.Is(err, segment.ErrCorrupt) {
			continue // the read path reports it where it is
		}
		if err != nil {
			return nil, fmt.Errorf("log: %w", err)
		}
		if next.base <= prevNext {
			continue
		}
		l.holeDamage(prevNext, next.base, next.base)
		if err := l.fillHole(prevNext, next.base, ts); err != nil {
			return nil, err
		}
	}
	var entries []*segEntry
	l.tree.Ascend(func(e *segEntry) bool {
		entries = append(entries, e)
		return true
	})
	return entries, nil
}

// entries returns the segments of the tree, ascending.
func (l *Log) entries() []*segEntry {
	var entries []*segEntry
	l.tree.Ascend(func(e *segEntry) bool {
		entries = append(entries, e)
		return true
	})
	return entries
}

// segEnd is what checkChain learns of a sealed segment.
type segEnd struct {
	next int64
	err  error
}

// tailNext reads where the sealed segment at base ends from its files,
// without loading it. A .log of up to tailReadAll bytes is read whole and
// its batch headers walked; a longer one from the batch its last
// offset-index entry points at (Kafka's format: a 4-byte offset relative
// to base, a 4-byte position, see index.OffsetEntrySize) to the end. It
// costs one or two opens and a few reads. ok is false when the files do
// not show the end plainly (a missing or stale index, a header that does
// not frame a batch, a batch running past the end, an I/O error): the
// caller loads the segment then.
func (l *Log) tailNext(base int64) (next int64, ok bool) {
	f, err := l.fs.OpenFile(segment.LogPath(l.dir, base), os.O_RDONLY, 0)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, false
	}
	size := fi.Size()
	start, want := int64(0), int64(-1) // want: the last offset of the batch at start, if known
	var data []byte                    // the whole .log, when small
	if size <= tailReadAll {
		bp := tailBuffers.Get().(*[]byte)
		defer tailBuffers.Put(bp)
		data = (*bp)[:size]
		if _, err := f.ReadAt(data, 0); err != nil {
			return 0, false
		}
	} else if start, want, ok = l.lastIndexEntry(base); !ok {
		return 0, false
	}
	next = base
	var hdr [record.HeaderSize]byte
	for pos := start; pos < size; {
		if pos+record.HeaderSize > size {
			return 0, false
		}
		if data != nil {
			copy(hdr[:], data[pos:])
		} else if _, err := f.ReadAt(hdr[:], pos); err != nil {
			return 0, false
		}
		n, err := record.CheckHeader(hdr[:])
		h := record.Batch(hdr[:])
		if err != nil || pos+int64(n) > size || h.BaseOffset() < next {
			return 0, false
		}
		if pos == start && want >= 0 && h.LastOffset() != want {
			return 0, false // a stale index
		}
		next = h.LastOffset() + 1
		pos += int64(n)
	}
	if start > 0 && size <= start {
		return 0, false // the entry points past the end
	}
	return next, true
}

// tailReadAll is the largest .log tailNext reads whole.
const tailReadAll = 16 << 10

var tailBuffers = sync.Pool{New: func() any { b := make([]byte, tailReadAll); return &b }}

// lastIndexEntry reads the last entry of the offset index of the segment
// at base: the position of a batch and its last offset.
func (l *Log) lastIndexEntry(base int64) (pos, last int64, ok bool) {
	x, err := l.fs.OpenFile(segment.IndexPath(l.dir, base), os.O_RDONLY, 0)
	if err != nil {
		return 0, 0, false
	}
	defer x.Close()
	fi, err := x.Stat()
	if err != nil || fi.Size()%index.OffsetEntrySize != 0 {
		return 0, 0, false
	}
	if fi.Size() == 0 {
		return 0, -1, true
	}
	var ent [index.OffsetEntrySize]byte
	if _, err := x.ReadAt(ent[:], fi.Size()-index.OffsetEntrySize); err != nil {
		return 0, 0, false
	}
	last = base + int64(int32(binary.BigEndian.Uint32(ent[:])))
	pos = int64(int32(binary.BigEndian.Uint32(ent[4:])))
	return pos, last, pos >= 0 && last >= base
}

// checkChain checks, on a clean open, that every segment but the last ends
// where the next one begins (a clean open scans nothing, so a segment
// emptied, truncated at a batch boundary or deleted with its indexes in
// the middle would otherwise stay a hole that every read and verify
// reports). It reads where each sealed segment ends from its files
// without loading it (tailNext: one or two opens and a few reads, several
// segments at a time), loading and closing again only one whose files do
// not show it plainly. A hole is filled with empty
// batches and reported; an empty segment before a hole (an emptied file)
// is removed first, the filler taking its place; a segment starting
// inside the previous one is set aside. A segment that fails to load as
// corrupt is left to the read path, which reports the damage where it
// lies and passes over it. It returns the entries as they are afterwards.
func (l *Log) checkChain(entries []*segEntry) ([]*segEntry, error) {
	if len(entries) < 2 {
		return entries, nil
	}
	sealed := entries[:len(entries)-1]
	ends := make([]segEnd, len(sealed))
	sem := make(chan struct{}, recoverWorkers)
	var wg sync.WaitGroup
	for i, e := range sealed {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			r := &ends[i]
			var ok bool
			if r.next, ok = l.tailNext(e.base); ok {
				return
			}
			// Not plain from the files: load it, which checks (and
			// rebuilds a stale index) as any first use does.
			r.next, r.err = e.seg.NextOffset()
			if err := e.seg.CloseIdle(); r.err == nil {
				r.err = err
			}
		}()
	}
	wg.Wait()

	changed := false
	prev, prevEnd := sealed[0], ends[0]
	for i := 1; i < len(entries); i++ {
		e := entries[i]
		cur := segEnd{err: errLastSegment}
		if i < len(sealed) {
			cur = ends[i]
		}
		if prevEnd.err != nil {
			if !errors.Is(prevEnd.err, segment.ErrCorrupt) {
				return nil, fmt.Errorf("log: %w", prevEnd.err)
			}
			prev, prevEnd = e, cur // the read path reports it where it is
			continue
		}
		switch {
		case e.base == prevEnd.next:
		case e.base < prevEnd.next && l.validEnd(prev.base, e.base) <= e.base:
			// prev's end came from a batch header that its CRC does not
			// vouch for (a flipped last-offset field), or from a last
			// batch whose base offset, outside the CRC, moved it past e
			// (out of place: see outOfPlace): prev is damaged, not e a
			// stray inside it. Keep e; the read path reports prev's
			// damaged range and passes over it to e.
		case e.base < prevEnd.next:
			if err := l.setAside(e, fmt.Sprintf("base offset %d lies inside the previous segment, which ends at %d", e.base, prevEnd.next)); err != nil {
				return nil, err
			}
			changed = true
			continue // prev stays the one to compare with
		default:
			l.holeDamage(prevEnd.next, e.base, e.base)
			// The filler's time: the previous segment's largest.
			ts, err := prev.seg.MaxTimestamp()
			if cerr := prev.seg.CloseIdle(); err == nil {
				err = cerr
			}
			if errors.Is(err, segment.ErrCorrupt) {
				ts = index.NoTimestamp
			} else if err != nil {
				return nil, fmt.Errorf("log: %w", err)
			}
			if prevEnd.next == prev.base {
				// Empty (an emptied file): the filler takes its place.
				if err := l.beforeWrite(); err != nil {
					return nil, err
				}
				l.tree.Delete(prev)
				if err := prev.seg.Delete(); err != nil {
					return nil, fmt.Errorf("log: remove empty %s: %w", prev.seg, err)
				}
				l.recovery.SegmentsRemoved++
			}
			if err := l.fillHole(prevEnd.next, e.base, ts); err != nil {
				return nil, err
			}
			changed = true
		}
		prev, prevEnd = e, cur
	}
	if !changed {
		return entries, nil
	}
	return l.entries(), nil
}

// errLastSegment stands for the last segment's end in checkChain, which
// never compares it: loadLast loads that one.
var errLastSegment = errors.New("log: the last segment")

// keepEnd keeps the log end of a clean open at end, the end its clean
// shutdown checkpointed, when the segments left end at next, below it (the
// last segments were deleted or renamed away after the shutdown): the
// offsets [next, end) were acknowledged, and consumers or groups may have
// committed them, so the next append must not get them again. They are
// reported and filled with empty batches (as any hole), and a new, empty
// segment at end becomes the last one, which it returns. An empty last
// segment (an emptied file) is removed first, the filler taking its place.
func (l *Log) keepEnd(last *segEntry, next, end int64) (*segEntry, error) {
	if err := l.beforeWrite(); err != nil {
		return nil, err
	}
	l.recovery.Damage = append(l.recovery.Damage, errs.Corruptf(ErrCorrupt, segment.LogPath(l.dir, last.base), -1,
		"the log ends at offset %d, below the end %d its clean shutdown checkpointed: offsets %d to %d are lost, filled with empty batches; the next append gets %d",
		next, end, next, end-1, end).AtOffset(next))
	ts, err := last.seg.MaxTimestamp()
	if err != nil {
		return nil, fmt.Errorf("log: %w", err)
	}
	if next == last.base {
		l.tree.Delete(last)
		if err := last.seg.Delete(); err != nil {
			return nil, fmt.Errorf("log: remove empty %s: %w", last.seg, err)
		}
		l.recovery.SegmentsRemoved++
	} else if err := last.seg.CloseIdle(); err != nil {
		return nil, fmt.Errorf("log: %w", err)
	}
	if err := l.fillHole(next, end, ts); err != nil {
		return nil, err
	}
	seg, err := segment.Create(l.fs, l.dir, end, l.segOpts())
	if err != nil {
		return nil, fmt.Errorf("log: create the segment at %d: %w", end, err)
	}
	e := l.newEntry(seg)
	l.tree.ReplaceOrInsert(e)
	return e, nil
}

// salvaged is what salvageTail saved of a last segment's batches after
// damage: a segment of their own at base, holding batches whole and valid.
type salvaged struct {
	base, next int64 // its offsets: [base, next)
	batches    int
	damagePos  int64 // where the damage starts in the damaged segment
	from       string
}

// salvageTail is the recovery of the last segment (its Salvage, before the
// cut at pos): a torn write is cut as before, but when whole, valid batches
// follow the damage, the damage is no torn write (one hits the end of what
// was written), and the batches are copied, durably, into a segment of
// their own at the first one's base, which the log adopts after the cut
// (adoptSalvaged), the damaged range becoming a reported, filled hole. The
// batches after the damage are found as a read finds them (resumeAfter:
// the first byte position after the damage starting a valid batch whose
// chain reaches the end of the file or the next indexed batch), else,
// when a torn tail breaks that chain, where the damaged batch's own header
// says it ends, or else at the first later entry of the segment's offset
// index whose batch is whole and valid; from there every whole, valid batch
// up to the first one that is not (a torn tail behind them is cut) is kept.
// Nothing is saved (nil) when none is found, or when a segment already
// exists at that base (a crash in an earlier recovery left it: it is
// scanned as a segment of its own then).
func (l *Log) salvageTail(base int64, r io.ReaderAt, size, pos int64) (*salvaged, error) {
	var batches []record.Batch
	readBatch := func(at int64) record.Batch {
		var hdr [record.HeaderSize]byte
		if at+record.HeaderSize > size {
			return nil
		}
		if _, err := r.ReadAt(hdr[:], at); err != nil {
			return nil
		}
		n, err := record.CheckHeader(hdr[:])
		if err != nil || at+int64(n) > size {
			return nil
		}
		b := make(record.Batch, n)
		if _, err := r.ReadAt(b, at); err != nil || b.Validate() != nil {
			return nil
		}
		return b
	}
	collect := func(at int64) {
		prev := int64(-1)
		for at < size {
			b := readBatch(at)
			if b == nil || b.BaseOffset() <= prev || b.BaseOffset() <= base {
				return
			}
			batches = append(batches, b)
			prev = b.LastOffset()
			at += int64(len(b))
		}
	}
	// First as a read passes over damage (resumeAfter): the first valid
	// batch after pos from which the chain of valid batches reaches the
	// end of the file (or the next indexed batch), tried byte by byte, so
	// that neither a damaged length nor a segment without index entries
	// hides the batches after the damage, and none is passed over.
	if at, _, ok := l.resumeAfter(r, size, base, pos, prefixNext(r, base, pos)); ok && at < size {
		collect(at)
	}
	// Else (a torn tail behind the batches after the damage breaks the
	// chain to the end) where the damaged batch's own header says it
	// ends, or the first later index entry whose batch is valid.
	if len(batches) == 0 {
		var hdr [record.HeaderSize]byte
		if _, err := r.ReadAt(hdr[:], pos); err == nil {
			if n, err := record.CheckHeader(hdr[:]); err == nil && pos+int64(n) < size {
				collect(pos + int64(n))
			}
		}
	}
	if len(batches) == 0 {
		if x, err := index.OpenOffset(l.fs, segment.IndexPath(l.dir, base), base, false, &index.Options{MaxIndexBytes: l.segOpts().MaxIndexBytes}); err == nil {
			for i := 0; i < x.Entries() && len(batches) == 0; i++ {
				if ent := x.Entry(i); ent.Position > pos {
					if b := readBatch(ent.Position); b != nil && b.LastOffset() == ent.Offset {
						collect(ent.Position)
					}
				}
			}
			_ = x.Close()
		}
	}
	if len(batches) == 0 {
		return nil, nil // a torn tail: cut
	}
	at := batches[0].BaseOffset()
	seg, err := segment.Create(l.fs, l.dir, at, l.segOpts())
	if errors.Is(err, segment.ErrExists) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("log: save the batches after damage in %s: %w", segment.LogPath(l.dir, base), err)
	}
	for _, b := range batches {
		if _, err = seg.Append(b); err != nil {
			break
		}
	}
	if err == nil {
		err = seg.Sync()
	}
	if cerr := seg.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = seg.Delete()
		return nil, fmt.Errorf("log: save the batches after damage in %s: %w", segment.LogPath(l.dir, base), err)
	}
	return &salvaged{base: at, next: batches[len(batches)-1].LastOffset() + 1, batches: len(batches), damagePos: pos, from: segment.LogPath(l.dir, base)}, nil
}

// prefixNext returns the offset after the last batch of the valid prefix
// [0, pos) of the .log r of the segment at base (recovery checked it).
func prefixNext(r io.ReaderAt, base, pos int64) int64 {
	next := base
	var hdr [record.HeaderSize]byte
	for at := int64(0); at+record.HeaderSize <= pos; {
		if _, err := r.ReadAt(hdr[:], at); err != nil {
			break
		}
		n, err := record.CheckHeader(hdr[:])
		if err != nil {
			break
		}
		next = record.Batch(hdr[:]).LastOffset() + 1
		at += int64(n)
	}
	return next
}

// adoptSalvaged puts the segment salvageTail saved after the last one,
// damaged, once that was cut (its valid prefix ends at prevNext, its
// largest timestamp prevTs), reporting the damaged range and filling it.
// A damaged segment left empty by the cut (the damage was in its first
// batch) is removed, the filler taking its place. If the damaged segment
// was not kept, or the saved batches do not lie past its prefix, the saved
// segment is removed instead.
func (l *Log) adoptSalvaged(s *salvaged, damaged *segEntry, kept bool, prevNext, prevTs int64) error {
	seg, err := segment.Open(l.fs, l.dir, s.base, l.segOpts())
	if err != nil {
		return fmt.Errorf("log: %w", err)
	}
	if !kept || s.base <= prevNext {
		if err := seg.Delete(); err != nil {
			return fmt.Errorf("log: remove %s: %w", seg, err)
		}
		return nil
	}
	l.recovery.Damage = append(l.recovery.Damage, errs.Corruptf(ErrCorrupt, s.from, s.damagePos,
		"damaged batch, not a torn write: %d valid batches follow it; offsets %d to %d lost (filled with empty batches), the batches from offset %d kept in a segment of their own",
		s.batches, prevNext, s.base-1, s.base).AtOffset(prevNext))
	if prevNext == damaged.base {
		l.tree.Delete(damaged)
		l.caps.forget(&damaged.capEntry)
		if err := damaged.seg.Delete(); err != nil {
			return fmt.Errorf("log: remove empty %s: %w", damaged.seg, err)
		}
		l.recovery.SegmentsRemoved++
	}
	l.tree.ReplaceOrInsert(l.newEntry(seg))
	return l.fillHole(prevNext, s.base, prevTs)
}

// validEnd returns the offset after the last batch of the chain of valid
// batches (framing and CRC) from the start of segment base's .log: where
// the segment really ends when the end its last header claims may be
// forged. A batch out of place (outOfPlace, with nextSeg the base of the
// segment after it) ends the chain too: its base offset, outside the CRC,
// was damaged. It reads the whole file, batch by batch, and is used only
// when the chain of segments looks overlapped, which a healthy log never
// is. On any error it returns math.MaxInt64 (no evidence against the
// header).
func (l *Log) validEnd(base, nextSeg int64) int64 {
	f, err := l.fs.OpenFile(segment.LogPath(l.dir, base), os.O_RDONLY, 0)
	if err != nil {
		return math.MaxInt64
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return math.MaxInt64
	}
	next, gapFree := base, true
	var hdr [record.HeaderSize]byte
	var buf []byte
	for pos := int64(0); ; {
		if _, err := f.ReadAt(hdr[:], pos); err != nil {
			return next // the end of the file, or a cut header
		}
		n, err := record.CheckHeader(hdr[:])
		if err != nil {
			return next
		}
		if cap(buf) < n {
			buf = make([]byte, n)
		}
		b := record.Batch(buf[:n])
		if _, err := f.ReadAt(b, pos); err != nil || b.Validate() != nil || b.BaseOffset() < next ||
			outOfPlace(f, fi.Size(), pos, b, next, nextSeg, gapFree) != nil {
			return next
		}
		gapFree = gapFree && b.BaseOffset() == next
		next = b.LastOffset() + 1
		pos += int64(n)
	}
}

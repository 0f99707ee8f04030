package segment

import (
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"math"
	"os"
	"sync"

	"github.com/foliolog/folio/errs"
	"github.com/foliolog/folio/index"
	"github.com/foliolog/folio/record"
	"github.com/foliolog/folio/vfs"
)

// RecoverResult reports what Recover found.
type RecoverResult struct {
	// ValidBytes is the size of the valid prefix, now the .log's size.
	ValidBytes int64
	// BytesCut is how many bytes after the valid prefix were removed.
	BytesCut int64
	// Batches is the number of valid batches.
	Batches int
	// LastOffset is the last offset of the last valid batch, or
	// BaseOffset-1 when there is none.
	LastOffset int64
	// MaxTimestamp is the largest batch MaxTimestamp, index.NoTimestamp
	// (-1) when there is none.
	MaxTimestamp int64
	// Cause says why the scan stopped before the end of the file: an
	// *errs.Corruption with the .log's path, the byte position of the bad
	// batch and, when its header framed it, its offset. It matches
	// ErrCorrupt. Nil when nothing was cut.
	Cause error
	// UnsyncedIndexes, set only by RecoverDeferIndexSync, names the index
	// files that already held the right entries and were left unsynced:
	// the caller fsyncs them (SyncPath) before it relies on them across a
	// power cut.
	UnsyncedIndexes []string
}

// crcOffset is where the CRC-covered part of a batch starts (attributes).
const crcOffset = 21

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Recover scans the whole .log from the start and keeps its longest valid
// prefix: it stops at the first batch that fails a check (see the package
// documentation for the rule), cuts the file there and fsyncs it, and
// rebuilds both indexes from the kept batches. It never panics, whatever
// the file holds. An I/O error fails Recover without cutting anything.
//
// The log calls it for every segment at or above its recovery point after
// an unclean shutdown. A sealed segment stays sealed (its indexes are
// sealed with the final time entry); an active one stays active and may
// append again: Recover also clears a fail-stop (ErrFailed) state.
func (s *Segment) Recover() (RecoverResult, error) { return s.recover(false, nil, nil, false) }

// RecoverDeferIndexSync is Recover, except that an index file found
// holding exactly the entries the scan plans (the usual case after a
// crash: the writer kept its indexes as it went) is not fsynced but named
// in RecoverResult.UnsyncedIndexes. The .log is fsynced as by Recover, and
// a rewritten index is fsynced too. It lets a log recover many segments
// with one fsync each and make their indexes durable afterwards, before
// its recovery point passes them.
func (s *Segment) RecoverDeferIndexSync() (RecoverResult, error) {
	return s.recover(true, nil, nil, false)
}

// Salvage is called by RecoverSalvage with the .log's contents before the
// cut: the file, its size, and pos, where the valid prefix ends. It may
// save what follows the damage elsewhere (read-only: it must not write r).
// An error fails the recovery before anything is cut.
type Salvage func(r io.ReaderAt, size, pos int64) error

// RecoverSalvage is RecoverDeferIndexSync, except that when the scan finds
// damage it first calls salvage, so that valid batches after the damage
// can be kept (in another segment) before the cut removes them.
func (s *Segment) RecoverSalvage(salvage Salvage) (RecoverResult, error) {
	return s.recover(true, salvage, nil, false)
}

// Rewrite is called by RecoverRewrite with the .log's contents (the file
// and its size) before the scan. It may write a replacement of the whole
// file to w and return true: the segment then replaces its .log with what
// it wrote, durably, before the recovery scans it. It returns false (and
// writes nothing that counts) to keep the file as it is. It must not write
// r. An error fails the recovery before anything changes.
type Rewrite func(r io.ReaderAt, size int64, w io.Writer) (bool, error)

// RecoverRewrite is Recover, except that rewrite may first replace the
// .log (see Rewrite), so that a caller that can pass over damage inside
// the file (keeping the valid batches after it, where Recover would cut
// them) does so with the segment's locks held. The replacement is written
// beside the .log under TruncateSuffix (which a crash may leave behind;
// it is never authoritative and is removed at startup), fsynced, renamed
// over the .log and the directory fsynced; then the replacement is
// scanned and its indexes rebuilt as by Recover. A crash after the rename
// and before the indexes are rewritten leaves indexes that the next load
// finds stale (their entries past the first damage point at moved
// batches) and rebuilds. With deferIndexSync, index files found right are
// left unsynced and named in RecoverResult.UnsyncedIndexes, as by
// RecoverDeferIndexSync.
func (s *Segment) RecoverRewrite(rewrite Rewrite, deferIndexSync bool) (RecoverResult, error) {
	return s.recover(deferIndexSync, nil, rewrite, false)
}

// RecoverRewriteDamaged is RecoverRewrite, except that the recovery's scan
// runs first and rewrite is called only when it finds the file damaged:
// a valid .log is read once, not twice, and no replacement file is made
// for it. It suits a rewrite that finds damage only where the scan does
// (no bound on the offsets beyond the segment's own), as a log's recovery
// of the segments below its last one after a crash.
func (s *Segment) RecoverRewriteDamaged(rewrite Rewrite, deferIndexSync bool) (RecoverResult, error) {
	return s.recover(deferIndexSync, nil, rewrite, true)
}

func (s *Segment) recover(deferIndexSync bool, salvage Salvage, rewrite Rewrite, onlyDamaged bool) (RecoverResult, error) {
	s.appendMu.Lock()
	defer s.appendMu.Unlock()
	s.resMu.Lock()
	defer s.resMu.Unlock()
	if s.closed.Load() {
		return RecoverResult{}, fmt.Errorf("%w: %s", ErrClosed, s.logPath)
	}
	if s.ro {
		return RecoverResult{}, s.readOnlyErr("recover")
	}
	// Start from the disk, not from anything loaded: its state is suspect.
	if s.files != nil {
		err := s.closeFiles(s.files)
		s.files = nil
		if err != nil {
			return RecoverResult{}, err
		}
	}
	var sc *scan
	if rewrite != nil && onlyDamaged {
		lf, err := s.fs.OpenFile(s.logPath, os.O_RDWR, 0)
		if err != nil {
			return RecoverResult{}, openError("open", s.logPath, err)
		}
		f := &files{log: lf}
		if sc, err = s.scanLog(lf); err != nil {
			return RecoverResult{}, errors.Join(err, s.closeFiles(f))
		}
		if sc.res.BytesCut == 0 {
			// Nothing damaged: nothing to rewrite, and the scan stands.
			return s.recovered(f, deferIndexSync, salvage, sc)
		}
		sc = nil
		if err := s.closeFiles(f); err != nil {
			return RecoverResult{}, err
		}
	}
	if rewrite != nil {
		if err := s.rewriteLocked(rewrite); err != nil {
			return RecoverResult{}, err
		}
	}
	lf, err := s.fs.OpenFile(s.logPath, os.O_RDWR, 0)
	if err != nil {
		return RecoverResult{}, openError("open", s.logPath, err)
	}
	return s.recovered(&files{log: lf}, deferIndexSync, salvage, nil)
}

// recovered ends a recovery on the opened .log f: it recovers the files
// (see recoverFiles; sc, when not nil, is the scan of f already made),
// then installs the result, closing f again if the segment is sealed.
func (s *Segment) recovered(f *files, deferIndexSync bool, salvage Salvage, sc *scan) (RecoverResult, error) {
	res, x, err := s.recoverFiles(f, deferIndexSync, salvage, sc)
	if err != nil {
		return res, errors.Join(err, s.closeFiles(f))
	}
	if s.sealed.Load() {
		// Loaded again lazily, like any sealed segment.
		s.tip.Store(&x.t)
		s.failed.Store(nil)
		return res, s.closeFiles(f)
	}
	err = s.openIndexFiles(f, true)
	if err == nil {
		err = s.openSource(f, true)
	}
	if err != nil {
		// An active segment without files cannot append: stay fail-stop
		// until a Recover succeeds.
		return res, s.fail(errors.Join(err, s.closeFiles(f)))
	}
	s.files = f
	s.tip.Store(&x.t)
	s.sinceIndex = x.since
	s.failed.Store(nil)
	return res, nil
}

// rewriteLocked lets rewrite replace the .log (see RecoverRewrite). The
// segment's files must be closed and its locks held exclusively.
func (s *Segment) rewriteLocked(rewrite Rewrite) error {
	src, err := s.fs.OpenFile(s.logPath, os.O_RDONLY, 0)
	if err != nil {
		return openError("open", s.logPath, err)
	}
	defer src.Close()
	fi, err := src.Stat()
	if err != nil {
		return fmt.Errorf("segment: stat %s: %w", s.logPath, err)
	}
	tmp := s.logPath + TruncateSuffix
	nf, abandon, err := s.createCopy(tmp)
	if err != nil {
		return err
	}
	changed, err := rewrite(src, fi.Size(), nf)
	if err != nil {
		return abandon(fmt.Errorf("segment: rewrite %s: %w", s.logPath, err))
	}
	if !changed {
		return abandon(nil)
	}
	if err := nf.Sync(); err != nil {
		return abandon(fmt.Errorf("segment: fsync %s: %w", tmp, err))
	}
	if err := nf.Close(); err != nil {
		rerr := s.fs.Remove(tmp)
		return errors.Join(fmt.Errorf("segment: close %s: %w", tmp, err), rerr)
	}
	if err := s.fs.Rename(tmp, s.logPath); err != nil {
		rerr := s.fs.Remove(tmp)
		return errors.Join(fmt.Errorf("segment: rename %s: %w", tmp, err), rerr)
	}
	if err := s.fs.SyncDir(s.dir); err != nil {
		return fmt.Errorf("segment: sync dir %s: %w", s.dir, err)
	}
	return nil
}

// recoverFiles scans f.log, cuts it after the valid prefix, fsyncs it, and
// makes the index files hold the prefix's entries (with the final time
// entry if the segment is sealed); it opens no index.
func (s *Segment) recoverFiles(f *files, deferIndexSync bool, salvage Salvage, sc *scan) (RecoverResult, *indexer, error) {
	if sc == nil {
		var err error
		if sc, err = s.scanLog(f.log); err != nil {
			return RecoverResult{}, nil, err
		}
	}
	size, p, res, x := sc.size, sc.plan, sc.res, sc.x
	if res.BytesCut > 0 {
		if salvage != nil {
			if err := salvage(f.log, size, res.ValidBytes); err != nil {
				return res, nil, err
			}
		}
		if err := s.cutLocked(f, res.ValidBytes); err != nil {
			return res, nil, err
		}
	} else if err := f.log.Sync(); err != nil {
		// What the scan accepted may exist only in the page cache of a
		// crashed process; the log moves its recovery point past it next.
		return res, nil, fmt.Errorf("segment: fsync %s: %w", s.logPath, err)
	}
	if err := s.fs.Remove(s.logPath + TruncateSuffix); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return res, nil, fmt.Errorf("segment: remove leftover %s: %w", s.logPath+TruncateSuffix, err)
	}
	if s.sealed.Load() {
		p.seal(&x.t)
	}
	unsynced, err := s.writeIndexFilesDefer(p, deferIndexSync)
	if err != nil {
		return res, nil, err
	}
	res.UnsyncedIndexes = unsynced
	return res, x, nil
}

// scan is what scanLog learnt of a .log: its size, where its valid prefix
// ends, and the index entries planned for that prefix.
type scan struct {
	size int64
	plan *indexPlan
	res  RecoverResult
	x    *indexer
}

// scanLog scans the whole .log r (see scanValid).
func (s *Segment) scanLog(r vfs.File) (*scan, error) {
	fi, err := r.Stat()
	if err != nil {
		return nil, fmt.Errorf("segment: stat %s: %w", s.logPath, err)
	}
	sc := &scan{size: fi.Size(), plan: s.newPlan()}
	sc.res, sc.x, err = s.scanValid(r, sc.size, sc.plan)
	if err != nil {
		return nil, err
	}
	return sc, nil
}

// scanValid validates the batches of the .log r (of size bytes) from the
// start, planning index entries by the rule as it goes, and returns where
// the valid prefix ends.
func (s *Segment) scanValid(r io.ReaderAt, size int64, p *indexPlan) (RecoverResult, *indexer, error) {
	x := s.newIndexer()
	res := RecoverResult{LastOffset: s.base - 1, MaxTimestamp: index.NoTimestamp}
	q := newSeqReader(r, size)
	defer q.free()
	var hdr [record.HeaderSize]byte
	pos, prevLast, gapFree := int64(0), s.base-1, true
	for pos < size {
		size, cause, err := s.checkBatch(q, pos, prevLast, gapFree, hdr[:])
		if err != nil {
			return res, nil, err
		}
		if cause != nil {
			c := errs.Corrupt(ErrCorrupt, s.logPath, pos, cause)
			if size > 0 {
				c.AtOffset(record.Batch(hdr[:]).BaseOffset())
			}
			res.Cause = c
			break
		}
		h := record.Batch(hdr[:])
		if x.observe(pos, h) {
			p.add(pos, h, &x.t)
		}
		gapFree = gapFree && h.BaseOffset() == prevLast+1
		prevLast = h.LastOffset()
		res.Batches++
		pos += int64(h.Size())
	}
	res.ValidBytes, res.BytesCut = pos, size-pos
	res.LastOffset, res.MaxTimestamp = prevLast, x.t.maxTs
	return res, x, nil
}

// recoverBuffer is the read-ahead of Recover's sequential scan.
const recoverBuffer = 1 << 20

// recoverBuffers keeps the read-ahead buffers of scans, which would
// otherwise allocate (and zero) a megabyte per recovered segment.
var recoverBuffers = sync.Pool{New: func() any { b := make([]byte, recoverBuffer); return &b }}

// checkBatch checks the batch at pos against the recovery rule (see the
// package documentation) and copies its header into hdr. cause is why the
// batch is not valid (nil if it is); err is an I/O error, which must not be
// mistaken for corruption. size is the batch's size when its header frames
// it (the checks a header allows pass and it ends within the file), even
// if a later check failed, so that a checker can go on to the next batch;
// 0 when the framing itself is broken.
func (s *Segment) checkBatch(q *seqReader, pos, prevLast int64, gapFree bool, hdr []byte) (size int, cause, err error) {
	left := q.size - pos
	if left < record.HeaderSize {
		return 0, fmt.Errorf("%d bytes left, a batch header needs %d", left, record.HeaderSize), nil
	}
	b, err := q.bytes(pos, record.HeaderSize)
	if err != nil {
		return 0, nil, err
	}
	copy(hdr, b)
	h := record.Batch(hdr)
	size, err = record.CheckHeader(h)
	if err != nil {
		return 0, err, nil
	}
	base, delta := h.BaseOffset(), int64(h.LastOffsetDelta())
	switch {
	case int64(size) > left:
		return 0, fmt.Errorf("batch of %d bytes, %d left in the file", size, left), nil
	case pos+int64(size) > MaxSegmentBytesLimit:
		return 0, fmt.Errorf("batch ends at %d, beyond the %d bytes a segment can index", pos+int64(size), MaxSegmentBytesLimit), nil
	case base < s.base || base <= prevLast:
		return size, fmt.Errorf("base offset %d not above the previous last offset %d (segment base %d)", base, prevLast, s.base), nil
	case base > math.MaxInt64-delta || base+delta-s.base > math.MaxInt32:
		return size, fmt.Errorf("last offset %d+%d does not fit 4 bytes relative to the base %d", base, delta, s.base), nil
	case int64(h.NumRecords()) > delta+1:
		return size, fmt.Errorf("%d records for %d offsets", h.NumRecords(), delta+1), nil
	}
	crc := crc32.Checksum(b[crcOffset:], castagnoli)
	for p, end := pos+record.HeaderSize, pos+int64(size); p < end; {
		n := int(min(end-p, int64(len(q.buf))))
		chunk, err := q.bytes(p, n)
		if err != nil {
			return 0, nil, err
		}
		crc = crc32.Update(crc, castagnoli, chunk)
		p += int64(n)
	}
	if want := h.CRC(); crc != want {
		return size, fmt.Errorf("%w at offset %d: crc %08x, computed %08x", record.ErrCorrupt, base, want, crc), nil
	}
	if gapFree && base != prevLast+1 {
		// The first gap in a segment whose batches so far followed one
		// another from its base (no compaction's): the batches after it
		// tell whether a flipped base offset made it (Misplaced).
		if cause := Misplaced(q.r, q.size, pos, h, prevLast, -1); cause != nil {
			return size, cause, nil
		}
	}
	return size, nil, nil
}

// seqReader reads a file front to back through one pooled buffer.
type seqReader struct {
	r    io.ReaderAt
	size int64
	bp   *[]byte
	buf  []byte
	off  int64 // file position of win[0]
	win  []byte
}

func newSeqReader(r io.ReaderAt, size int64) *seqReader {
	bp := recoverBuffers.Get().(*[]byte)
	return &seqReader{r: r, size: size, bp: bp, buf: (*bp)[:min(size, recoverBuffer)]}
}

// free returns the buffer; the reader must not be used afterwards.
func (q *seqReader) free() {
	if q.bp != nil {
		recoverBuffers.Put(q.bp)
		q.bp, q.buf, q.win = nil, nil, nil
	}
}

// bytes returns [pos, pos+n), n <= len(q.buf), valid until the next call.
func (q *seqReader) bytes(pos int64, n int) ([]byte, error) {
	if pos >= q.off && pos+int64(n) <= q.off+int64(len(q.win)) {
		i := pos - q.off
		return q.win[i : i+int64(n)], nil
	}
	buf := q.buf[:min(int64(len(q.buf)), q.size-pos)]
	k, err := q.r.ReadAt(buf, pos)
	if k < n {
		if err == nil || errors.Is(err, io.EOF) {
			err = fmt.Errorf("file shrank to %d bytes during the scan", pos+int64(k))
		}
		return nil, fmt.Errorf("segment: read at %d: %w", pos, err)
	}
	q.off, q.win = pos, buf[:k]
	return q.win[:n], nil
}

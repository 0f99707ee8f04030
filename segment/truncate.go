package segment

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/foliolog/folio/errs"
	"github.com/foliolog/folio/vfs"
)

// TruncateTo removes every batch that holds an offset at or above offset
// (the batch holding offset goes whole, as in Kafka) and returns how many
// bytes it removed. The log uses it for its own truncation and for
// replication's. Afterwards the segment is active, whatever it was before:
// truncation makes a segment the log's last one.
//
// A mapped file must not shrink under a reader, so the .log is never
// truncated while a view of it is outstanding. When none is (the usual
// case), the file is truncated in place and fsynced. When readers still
// hold views, TruncateTo copies the kept prefix to a new file (name plus
// TruncateSuffix), fsyncs it and renames it over the .log: the holders go
// on reading the old inode's bytes, unchanged, and the copy costs one
// pass over the kept bytes. Either way TruncateTo never waits for readers.
func (s *Segment) TruncateTo(offset int64) (int64, error) {
	s.appendMu.Lock()
	defer s.appendMu.Unlock()
	s.resMu.Lock()
	defer s.resMu.Unlock()
	if s.closed.Load() {
		return 0, fmt.Errorf("%w: %s", ErrClosed, s.logPath)
	}
	if err := s.failure(); err != nil {
		return 0, err
	}
	if s.ro {
		return 0, s.readOnlyErr("truncate")
	}
	if err := s.reloadLocked(); err != nil {
		return 0, err
	}
	newSize, err := s.truncationPoint(offset)
	if err != nil {
		return 0, err
	}
	if s.sealed.Load() {
		if err := s.activateLocked(); err != nil {
			return 0, err
		}
	}
	f, old := s.files, s.tip.Load()
	if newSize == old.size {
		return 0, nil
	}
	// From here on a failure leaves the .log, the indexes and the tip out
	// of step: stop writes until Recover.
	if err := s.closeSource(f); err != nil {
		return 0, s.fail(err)
	}
	if err := s.cutLocked(f, newSize); err != nil {
		return 0, s.fail(err)
	}
	f.checked.Store(nil) // restore below checks what the cut keeps
	if err := errors.Join(f.off.TruncateTo(offset), f.time.TruncateTo(offset)); err != nil {
		return 0, s.fail(fmt.Errorf("segment: truncate indexes of %s: %w", s.logPath, err))
	}
	if err := s.openSource(f, true); err != nil {
		return 0, s.fail(err)
	}
	c := s.pinned(f, &tip{size: newSize})
	defer c.free()
	t, err := c.restore(true)
	if errors.Is(err, errStaleIndex) {
		s.rebuilds.Add(1)
		var x *indexer
		if x, err = s.rebuildIndexes(f, c.sc, false); err == nil {
			t = &x.t
		}
	}
	if err != nil {
		return 0, s.dropFilesLocked(f, s.fail(err))
	}
	s.tip.Store(t)
	s.sinceIndex = newSize
	if e, ok := f.off.LastEntry(); ok {
		s.sinceIndex = newSize - e.Position
	}
	if newSize == 0 {
		s.created.Store(time.Now().UnixNano())
	}
	return old.size - newSize, nil
}

// truncationPoint returns the position of the batch holding offset, or the
// size when no batch does. resMu must be held exclusively with the files
// loaded.
func (s *Segment) truncationPoint(offset int64) (int64, error) {
	t := s.tip.Load()
	if offset <= s.base {
		return 0, nil
	}
	if offset >= t.next {
		return t.size, nil
	}
	for attempt := 0; ; attempt++ {
		c := s.pinned(s.files, t)
		pos, _, found, err := c.locate(offset)
		if errors.Is(err, errStaleIndex) && attempt == 0 {
			s.rebuilds.Add(1)
			f := s.files
			_, err = s.rebuildIndexes(f, c.sc, s.sealed.Load())
			c.free()
			if err != nil {
				return 0, s.dropFilesLocked(f, err)
			}
			continue
		}
		c.free()
		if err != nil {
			return 0, err
		}
		if !found {
			return 0, errs.Corruptf(ErrCorrupt, s.logPath, -1, "no batch holds offset %d below next offset %d", offset, t.next)
		}
		return pos, nil
	}
}

// cutLocked shrinks the .log to newSize and fsyncs it; f's Source must be
// closed already, so that no new views of the cut bytes appear. With no
// view of the current inode outstanding it truncates in place; otherwise it
// replaces the file with a copy of the prefix (see TruncateTo), and f.log
// becomes the copy. resMu must be held exclusively.
func (s *Segment) cutLocked(f *files, newSize int64) error {
	if !s.pruneSources() {
		if err := f.log.Truncate(newSize); err != nil {
			return fmt.Errorf("segment: truncate %s to %d: %w", s.logPath, newSize, err)
		}
		if err := f.log.Sync(); err != nil {
			return fmt.Errorf("segment: fsync %s: %w", s.logPath, err)
		}
		return nil
	}
	tmp := s.logPath + TruncateSuffix
	nf, abandon, err := s.createCopy(tmp)
	if err != nil {
		return err
	}
	if err := copyPrefix(nf, f.log, newSize); err != nil {
		return abandon(fmt.Errorf("segment: copy %s to %s: %w", s.logPath, tmp, err))
	}
	if err := nf.Sync(); err != nil {
		return abandon(fmt.Errorf("segment: fsync %s: %w", tmp, err))
	}
	if err := s.fs.Rename(tmp, s.logPath); err != nil {
		return abandon(fmt.Errorf("segment: rename %s: %w", tmp, err))
	}
	if err := s.fs.SyncDir(s.dir); err != nil {
		return errors.Join(fmt.Errorf("segment: sync dir %s: %w", s.dir, err), nf.Close())
	}
	oldErr := f.log.Close()
	f.log = nf
	// The holders of the remaining views read the old, now unlinked inode.
	clear(s.inodeSources)
	s.inodeSources = s.inodeSources[:0]
	if oldErr != nil {
		return fmt.Errorf("segment: close replaced %s: %w", s.logPath, oldErr)
	}
	return nil
}

// copyChunk bounds the buffer copyPrefix uses.
const copyChunk = 1 << 20

// copyPrefix copies the first n bytes of src to the start of dst.
func copyPrefix(dst, src interface {
	ReadAt([]byte, int64) (int, error)
	WriteAt([]byte, int64) (int, error)
}, n int64) error {
	buf := make([]byte, min(n, copyChunk))
	for off := int64(0); off < n; {
		chunk := buf[:min(int64(len(buf)), n-off)]
		k, err := src.ReadAt(chunk, off)
		if k < len(chunk) {
			if err == nil {
				err = fmt.Errorf("short read at %d", off)
			}
			return err
		}
		if _, err := dst.WriteAt(chunk, off); err != nil {
			return err
		}
		off += int64(len(chunk))
	}
	return nil
}

// createCopy creates tmp, empty, for a copy of the .log that is renamed
// over it once complete (truncation's copy path, RecoverRewrite). abandon
// closes and removes it, joining any error to err.
func (s *Segment) createCopy(tmp string) (nf vfs.File, abandon func(err error) error, err error) {
	nf, err = s.fs.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, nil, fmt.Errorf("segment: create %s: %w", tmp, err)
	}
	abandon = func(err error) error {
		rerr := s.fs.Remove(tmp)
		if errors.Is(rerr, fs.ErrNotExist) {
			rerr = nil
		}
		return errors.Join(err, nf.Close(), rerr)
	}
	return nf, abandon, nil
}

package readpath

import (
	"errors"
	"fmt"
	"math"
	"sync"
)

// Source serves views of one file. It owns the file: the file is closed
// (and any mapping unmapped) only once the Source is closed and every View
// it returned is released, so a segment that is renamed and unlinked while a
// reader holds a view goes on serving that reader the right bytes.
//
// A Source is safe for concurrent use.
type Source interface {
	// View returns a view of [pos, pos+n). The caller guarantees those bytes
	// are written to the file; View does not check, so that a read of the
	// active segment costs no system call. n may be 0 (an empty view).
	View(pos int64, n int) (*View, error)
	// Close gives up the Source's own reference. Views already returned stay
	// valid until released. A second Close returns ErrClosed, as does View
	// after Close.
	Close() error
	// Kind reports the implementation.
	Kind() Kind
}

// Open returns a Source of the given kind that takes ownership of f once it
// returns without error; on error f is left open and stays the caller's.
//
// For Mmap, mapSize is the length of the mapping made on the first View: a
// sealed segment passes its file size, the active segment its maximum size
// so that the mapping covers the segment as it grows. 0 means the file's size
// at the first View. Nothing is mapped until that first View, so an unread
// sealed segment costs no map area. A View that ends past the mapping (the
// file grew beyond mapSize) maps a new, larger region covering the whole
// file; earlier views keep the old region, which is unmapped when the last
// of them is released. For Sendfile, mapSize is ignored.
func Open(kind Kind, f File, mapSize int64) (Source, error) {
	if f == nil {
		return nil, ErrNilFile
	}
	switch kind {
	case Mmap:
		if f.OS() == nil {
			return nil, fmt.Errorf("%w: %s", ErrNotMappable, f.Name())
		}
	case Sendfile:
	default:
		return nil, fmt.Errorf("%w: %d", ErrUnknownKind, uint8(kind))
	}
	if mapSize < 0 {
		return nil, fmt.Errorf("%w: mapSize %d for %s", ErrInvalidRange, mapSize, f.Name())
	}
	openFiles.Add(1)
	return &source{f: f, name: f.Name(), kind: kind, mapSize: mapSize, refs: 1}, nil
}

type source struct {
	f       File
	name    string
	kind    Kind
	mapSize int64 // Mmap: length of the first mapping, 0 = file size then

	stateMu sync.Mutex // guards closed, refs, cur, lateErr and every region's refs
	closed  bool
	refs    int     // 1 for the open Source + 1 per unreleased View
	cur     *region // Mmap: the region new views are cut from; nil until the first View
	// lateErr holds a failed unmap of a region replaced by a larger one, so
	// that Close can report it: no caller is waiting when that happens.
	lateErr error
}

func (s *source) Kind() Kind { return s.kind }

func (s *source) View(pos int64, n int) (*View, error) {
	if pos < 0 || n < 0 || pos > math.MaxInt64-int64(n) {
		return nil, fmt.Errorf("%w: view [%d, +%d) of %s", ErrInvalidRange, pos, n, s.name)
	}
	s.stateMu.Lock()
	defer s.stateMu.Unlock()
	if s.closed {
		return nil, fmt.Errorf("%w: view of %s", ErrClosed, s.name)
	}
	v := &View{src: s, pos: pos, n: n}
	if s.kind == Mmap && n > 0 {
		r, err := s.regionLocked(pos + int64(n))
		if err != nil {
			return nil, err
		}
		r.refs++
		v.region = r
	}
	s.refs++
	return v, nil
}

// regionLocked returns a region that covers [0, end), mapping one if the
// current region is missing or too short.
func (s *source) regionLocked(end int64) (*region, error) {
	if s.cur != nil && end <= int64(len(s.cur.data)) {
		return s.cur, nil
	}
	size := end
	if s.cur == nil && s.mapSize > size {
		size = s.mapSize
	}
	if s.cur != nil || s.mapSize == 0 || s.mapSize < end {
		// Growing, or sized by the file: cover the whole file so that a
		// growing segment does not remap on every read past the old end.
		fi, err := s.f.Stat()
		if err != nil {
			return nil, fmt.Errorf("readpath: stat %s: %w", s.name, err)
		}
		size = max(size, fi.Size())
	}
	r, err := mapFile(s.f.OS(), s.name, size)
	if err != nil {
		return nil, err
	}
	r.refs = 1 // the Source's hold while r is current
	if old := s.cur; old != nil {
		old.refs--
		if old.refs == 0 {
			// No view holds it, so unmapping under the lock cannot stall a reader.
			if err := old.unmap(); err != nil {
				s.lateErr = errors.Join(s.lateErr, err)
			}
		}
	}
	s.cur = r
	return r, nil
}

func (s *source) Close() error {
	s.stateMu.Lock()
	if s.closed {
		s.stateMu.Unlock()
		return fmt.Errorf("%w: close %s", ErrClosed, s.name)
	}
	s.closed = true
	var drop *region
	if s.cur != nil {
		s.cur.refs--
		if s.cur.refs == 0 {
			drop = s.cur
		}
		s.cur = nil
	}
	s.refs--
	last := s.refs == 0
	err := s.lateErr
	s.lateErr = nil
	s.stateMu.Unlock()

	if drop != nil {
		err = errors.Join(err, drop.unmap())
	}
	if last {
		err = errors.Join(err, s.closeFile())
	}
	return err
}

// release drops one View's references. A failed unmap while the Source is
// open is kept for Close; errors after Close has returned have no one to go
// to and are dropped:
// munmap of an exact mapping and close of a read-only descriptor do not fail
// in practice, and neither leaves data at risk.
func (s *source) release(r *region) {
	s.stateMu.Lock()
	var drop *region
	if r != nil {
		r.refs--
		if r.refs == 0 {
			drop = r
		}
	}
	s.refs--
	last := s.refs == 0
	s.stateMu.Unlock()

	if drop != nil {
		if err := drop.unmap(); err != nil {
			s.stateMu.Lock()
			if !s.closed {
				s.lateErr = errors.Join(s.lateErr, err)
			}
			s.stateMu.Unlock()
		}
	}
	if last {
		_ = s.closeFile()
	}
}

func (s *source) closeFile() error {
	openFiles.Add(-1)
	if err := s.f.Close(); err != nil {
		return fmt.Errorf("readpath: close %s: %w", s.name, err)
	}
	return nil
}

// checkRange is Kafka's "truncated during write" check: it fails when the
// file has become shorter than the end of [pos, end).
func (s *source) checkRange(pos, end int64) error {
	fi, err := s.f.Stat()
	if err != nil {
		return fmt.Errorf("readpath: stat %s: %w", s.name, err)
	}
	if fi.Size() < end {
		return fmt.Errorf("%w: %s is %d bytes, view is [%d, %d)", ErrTruncated, s.name, fi.Size(), pos, end)
	}
	return nil
}

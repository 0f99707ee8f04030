package readpath

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync/atomic"
)

// View is a byte range [Pos, Pos+Len) of one file, handed out by a Source.
// It holds a reference on the Source's file (and, for Mmap, on the mapping it
// aliases) until Release, so it stays readable after the file is unlinked or
// the Source closed. A View is for one goroutine at a time; only Len and Pos
// may be called concurrently with the other methods.
type View struct {
	src      *source
	region   *region // Mmap: the mapping the bytes alias; nil for Sendfile and empty views
	pos      int64
	n        int
	buf      *[]byte // Sendfile: pooled buffer filled by the first Bytes call
	framing  Framing // what the reader that framed the view counted; valid when framed
	framed   bool
	released atomic.Bool
}

// Framing is what the reader that cut a view into whole record batches
// (segment.Read) learned from their headers while it walked them, so that
// a caller can count the view's records without reading the headers a
// second time: under Sendfile each such read is a pread, and the send
// itself reads nothing.
type Framing struct {
	// Records is the sum of the batches' record counts (the headers'
	// NumRecords).
	Records int64
	// FirstBase, FirstLast and FirstRecords are the first batch's base
	// offset, last offset and record count: a read that starts inside
	// the first batch hands on only its records from there.
	FirstBase, FirstLast int64
	FirstRecords         int32
	// LastOffset is the last batch's last offset.
	LastOffset int64
}

// SetFraming records what the reader that framed v learned from its batch
// headers; call it before handing v on.
func (v *View) SetFraming(f Framing) { v.framing, v.framed = f, true }

// Framing returns what SetFraming recorded, and false when nothing was
// (a view of bytes that are not whole batches).
func (v *View) Framing() (Framing, bool) { return v.framing, v.framed }

// Buffered returns the bytes of memory the view holds of its own until
// Release: its pooled buffer once Bytes has filled it (Sendfile), 0 for a
// view of a mapping.
func (v *View) Buffered() int {
	if v.buf == nil {
		return 0
	}
	return cap(*v.buf)
}

// Len returns the view's length in bytes.
func (v *View) Len() int { return v.n }

// Pos returns the file position the view starts at.
func (v *View) Pos() int64 { return v.pos }

func (v *View) end() int64 { return v.pos + int64(v.n) }

// Bytes returns the view's bytes, valid until Release; the caller must not
// modify them.
//
// Mmap: the slice aliases the mapping and nothing is read until it is
// touched. If the file may have been truncated since the view was taken, a
// touch faults, so Folio code touches these bytes only inside Guard. The
// slice's capacity ends at the view, so append copies instead of writing to
// the mapping.
//
// Sendfile: the first call reads the range with pread into a pooled buffer
// (ErrTruncated if the file no longer holds it); later calls return the same
// buffer, which Release hands back to the pool.
func (v *View) Bytes() ([]byte, error) {
	if v.released.Load() {
		return nil, fmt.Errorf("%w: bytes of %s [%d, %d)", ErrReleased, v.src.name, v.pos, v.end())
	}
	if v.n == 0 {
		return []byte{}, nil
	}
	if v.region != nil {
		return v.region.data[v.pos:v.end():v.end()], nil
	}
	if v.buf == nil {
		if v.n > copyChunk {
			// A length no file holds must not become an allocation of that
			// size; below 1 MiB the pooled buffer bounds it and a short
			// pread reports the truncation.
			if err := v.src.checkRange(v.pos, v.end()); err != nil {
				return nil, err
			}
		}
		b := getBuf(v.n)
		if err := v.src.readFull(*b, v.pos); err != nil {
			putBuf(b)
			return nil, err
		}
		v.buf = b
	}
	return *v.buf, nil
}

// ReadAt copies len(p) bytes of the view, from off bytes past its start,
// into p and implements io.ReaderAt: for reading a few bytes (a batch
// header) without Bytes, which under Sendfile reads the whole range.
// Mmap: a copy from the mapping under Guard (a fault is an error wrapping
// ErrFault). Sendfile: from the buffer Bytes filled, else one pread
// (ErrTruncated if the file no longer holds the bytes). A range outside
// the view returns io.EOF with what it holds copied.
func (v *View) ReadAt(p []byte, off int64) (int, error) {
	if v.released.Load() {
		return 0, fmt.Errorf("%w: read %s at %d", ErrReleased, v.src.name, v.pos+off)
	}
	if off < 0 {
		return 0, fmt.Errorf("readpath: read %s: negative offset %d", v.src.name, off)
	}
	if off >= int64(v.n) {
		return 0, io.EOF
	}
	want := p
	if rest := int64(v.n) - off; int64(len(p)) > rest {
		p = p[:rest]
	}
	var err error
	switch {
	case v.region != nil:
		err = Guard(func() error {
			copy(p, v.region.data[v.pos+off:])
			return nil
		})
	case v.buf != nil:
		copy(p, (*v.buf)[off:])
	default:
		err = v.src.readFull(p, v.pos+off)
	}
	if err != nil {
		return 0, err
	}
	if len(p) < len(want) {
		return len(p), io.EOF
	}
	return len(p), nil
}

// WriteTo writes the view to w and implements io.WriterTo, so io.Copy uses it.
// It first checks that the file still holds the whole range and returns
// ErrTruncated, having written nothing, if not. An empty view writes nothing
// and checks nothing.
//
// Mmap: one w.Write of the mapped bytes, under Guard, so a fault while w
// copies them becomes an error wrapping ErrFault. A writer that passes the
// slice to another goroutine (io.Pipe) moves the copy out of that protection.
//
// Sendfile: to a *net.TCPConn on Linux, positional sendfile straight from
// the file's descriptor (the file's shared offset is never used, so
// concurrent sends from one file are safe); to anything else, including
// *tls.Conn, and off Linux, pread into a pooled buffer and w.Write, in
// chunks of at most 1 MiB. Bytes already read by Bytes are written from that
// buffer. If the file shrinks during a send, the bytes sent so far are
// counted and the error wraps ErrTruncated.
func (v *View) WriteTo(w io.Writer) (int64, error) {
	if v.released.Load() {
		return 0, fmt.Errorf("%w: write %s [%d, %d)", ErrReleased, v.src.name, v.pos, v.end())
	}
	if v.n == 0 {
		return 0, nil
	}
	if err := v.src.checkRange(v.pos, v.end()); err != nil {
		return 0, err
	}
	switch {
	case v.region != nil:
		return v.writeMapped(w)
	case v.buf != nil:
		return v.write(w, *v.buf)
	}
	if tc, ok := w.(*net.TCPConn); ok {
		if osf := v.src.f.OS(); osf != nil {
			k, handled, err := sendFile(tc, osf, v.pos, v.n)
			if handled {
				sendfileBytes.Add(k)
				if errors.Is(err, io.ErrUnexpectedEOF) {
					return k, fmt.Errorf("%w: %s ended after %d of %d bytes sent from %d", ErrTruncated, v.src.name, k, v.n, v.pos)
				}
				if err != nil {
					return k, fmt.Errorf("readpath: sendfile %s [%d, %d): %w", v.src.name, v.pos, v.end(), err)
				}
				return k, nil
			}
		}
	}
	return v.copyTo(w)
}

func (v *View) writeMapped(w io.Writer) (int64, error) {
	data := v.region.data[v.pos:v.end():v.end()]
	var k int
	err := Guard(func() error {
		var werr error
		k, werr = w.Write(data)
		return werr
	})
	copiedBytes.Add(int64(k))
	switch {
	case errors.Is(err, ErrFault):
		return int64(k), err
	case err != nil:
		return int64(k), wrapWriteFault(err, v.src.name, v.pos, v.end())
	case k != len(data):
		return int64(k), fmt.Errorf("readpath: write %s [%d, %d): %w", v.src.name, v.pos, v.end(), io.ErrShortWrite)
	}
	return int64(k), nil
}

func (v *View) write(w io.Writer, b []byte) (int64, error) {
	k, err := w.Write(b)
	copiedBytes.Add(int64(k))
	if err == nil && k != len(b) {
		err = io.ErrShortWrite
	}
	if err != nil {
		return int64(k), fmt.Errorf("readpath: write %s [%d, %d): %w", v.src.name, v.pos, v.end(), err)
	}
	return int64(k), nil
}

// copyTo is the copying path: pread a chunk, write it, repeat.
func (v *View) copyTo(w io.Writer) (int64, error) {
	bp := getBuf(min(v.n, copyChunk))
	defer putBuf(bp)
	buf := *bp
	var total int64
	for total < int64(v.n) {
		chunk := buf[:min(int64(len(buf)), int64(v.n)-total)]
		off := v.pos + total
		if err := v.src.readFull(chunk, off); err != nil {
			return total, err
		}
		k, err := w.Write(chunk)
		total += int64(k)
		copiedBytes.Add(int64(k))
		if err == nil && k != len(chunk) {
			err = io.ErrShortWrite
		}
		if err != nil {
			return total, fmt.Errorf("readpath: write %s [%d, %d): %w", v.src.name, off, off+int64(len(chunk)), err)
		}
	}
	return total, nil
}

// Release gives up the view's references; the last release of a closed
// Source unmaps and closes its file. Bytes returned earlier must not be used
// after it. Release is idempotent.
func (v *View) Release() {
	if !v.released.CompareAndSwap(false, true) {
		return
	}
	if v.buf != nil {
		putBuf(v.buf)
		v.buf = nil
	}
	v.src.release(v.region)
	v.region = nil
}

// readFull reads len(p) bytes at off, reporting a short file as ErrTruncated.
func (s *source) readFull(p []byte, off int64) error {
	k, err := s.f.ReadAt(p, off)
	if k == len(p) {
		// io.ReaderAt allows io.EOF alongside a full read at the end of file.
		return nil
	}
	if err == nil || errors.Is(err, io.EOF) {
		return fmt.Errorf("%w: %s holds %d of the bytes [%d, %d)", ErrTruncated, s.name, k, off, off+int64(len(p)))
	}
	return fmt.Errorf("readpath: read %s at %d: %w", s.name, off, err)
}

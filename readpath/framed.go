package readpath

import (
	"errors"
	"fmt"
	"io"
	"net"
)

// WriteFramed writes a framed response to w: frames[0], then views[0]'s
// bytes, frames[1], views[1]'s bytes, and so on (a nil view, or a missing
// one past the end of views, writes nothing). When every view is mapped
// (Mmap) or already holds its bytes, the whole response goes in one
// vectored write (writev on a TCP connection), so that a response of a few
// small record sets costs one system call rather than a write per piece
// and the corking that would keep the pieces in full segments; ok is then
// true. Otherwise nothing is written and ok is false: the caller writes
// the pieces one by one (a Sendfile view's WriteTo sends its bytes from
// the file).
//
// Each view is checked as WriteTo checks it (released, or its range past
// the file's end: an error before anything is written). A fault on a
// mapping, under TLS where the bytes are read in this process, is an error
// wrapping ErrFault.
func WriteFramed(w io.Writer, frames [][]byte, views []*View) (n int64, ok bool, err error) {
	var total, inViews int
	for _, v := range views {
		switch {
		case v == nil:
		case v.released.Load():
			return 0, true, fmt.Errorf("%w: write %s [%d, %d)", ErrReleased, v.src.name, v.pos, v.end())
		case v.n > 0 && v.region == nil && v.buf == nil:
			return 0, false, nil
		}
	}
	bufs := make(net.Buffers, 0, len(frames)+len(views))
	for i, f := range frames {
		if len(f) > 0 {
			bufs = append(bufs, f)
			total += len(f)
		}
		if i >= len(views) || views[i] == nil {
			continue
		}
		v := views[i]
		if v.n == 0 {
			continue
		}
		if err := v.src.checkRange(v.pos, v.end()); err != nil {
			return 0, true, err
		}
		var b []byte
		if v.region != nil {
			b = v.region.data[v.pos:v.end():v.end()]
		} else {
			b = *v.buf
		}
		bufs = append(bufs, b)
		total += len(b)
		inViews += len(b)
	}
	err = Guard(func() error {
		var werr error
		n, werr = bufs.WriteTo(w)
		return werr
	})
	// The record bytes are copied into the socket (or the TLS record) as
	// by a mapped view's WriteTo; when the write stopped short, the bytes
	// of the views written are not told apart from the frames'.
	copiedBytes.Add(min(n, int64(inViews)))
	switch {
	case errors.Is(err, ErrFault):
		return n, true, err
	case err != nil:
		return n, true, wrapWriteFault(err, "a framed response", 0, int64(total))
	case n != int64(total):
		return n, true, fmt.Errorf("readpath: write of a framed response: %d of %d bytes: %w", n, total, io.ErrShortWrite)
	}
	return n, true, nil
}

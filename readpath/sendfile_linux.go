//go:build linux

package readpath

import (
	"errors"
	"io"
	"net"
	"os"

	"golang.org/x/sys/unix"
)

// maxSendfileChunk keeps each sendfile call under the kernel's per-call cap
// (0x7ffff000 bytes on Linux) so a count is never silently clipped.
const maxSendfileChunk = 1 << 30

// sendFile sends [pos, pos+n) of src to dst with sendfile(2) given an
// explicit offset, so the kernel leaves src's shared offset alone. It runs
// inside dst's RawConn.Write, which holds dst's write lock, honours write
// deadlines and parks on the netpoller when the closure returns false (only
// after EAGAIN). src's descriptor is used inside its own Control so it
// cannot be closed under the call.
//
// handled is false when nothing was sent because the kernel does not
// support sendfile for this pair; the caller then copies. A file that ends
// before the range does yields io.ErrUnexpectedEOF with the count sent.
func sendFile(dst *net.TCPConn, src *os.File, pos int64, n int) (written int64, handled bool, err error) {
	dstConn, err := dst.SyscallConn()
	if err != nil {
		return 0, true, err
	}
	srcConn, err := src.SyscallConn()
	if err != nil {
		return 0, false, nil
	}
	off, remain := pos, n
	var sendErr error
	ctlErr := srcConn.Control(func(infd uintptr) {
		werr := dstConn.Write(func(outfd uintptr) bool {
			for remain > 0 {
				k, e := unix.Sendfile(int(outfd), int(infd), &off, min(remain, maxSendfileChunk))
				if k > 0 {
					remain -= k
					written += int64(k)
				}
				switch {
				case e == unix.EAGAIN:
					return false
				case e == unix.EINTR:
					continue
				case e != nil:
					sendErr = e
					return true
				case k == 0:
					sendErr = io.ErrUnexpectedEOF
					return true
				}
			}
			return true
		})
		if sendErr == nil {
			sendErr = werr
		}
	})
	if ctlErr != nil {
		return written, written > 0, ctlErr
	}
	if written == 0 && unsupported(sendErr) {
		return 0, false, nil
	}
	return written, true, sendErr
}

// unsupported reports the errors with which sendfile declines a descriptor
// pair rather than failing a send; Go's own sendfile falls back on the same.
func unsupported(err error) bool {
	return errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EINVAL) ||
		errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOTSUP)
}

package vfs

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// syncData is fdatasync: it flushes the data and the metadata needed to
// read it back (the size included), skipping timestamps.
func syncData(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	// Control keeps the descriptor from being closed under the call.
	if err := rc.Control(func(fd uintptr) {
		serr = retryEINTR(func() error { return unix.Fdatasync(int(fd)) })
	}); err != nil {
		return err
	}
	if serr != nil {
		return &os.PathError{Op: "fdatasync", Path: f.Name(), Err: serr}
	}
	return nil
}

// allocate is fallocate mode 0, which both reserves the blocks and extends
// the size. File systems without fallocate get the portable zero fill.
func allocate(f *os.File, off, n int64) error {
	if err := checkRange(f.Name(), off, n); err != nil || n == 0 {
		return err
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) {
		ferr = retryEINTR(func() error { return unix.Fallocate(int(fd), 0, off, n) })
	}); err != nil {
		return err
	}
	if errors.Is(ferr, unix.EOPNOTSUPP) || errors.Is(ferr, unix.ENOSYS) {
		return zeroFill(f, off+n)
	}
	if ferr != nil {
		return &os.PathError{Op: "fallocate", Path: f.Name(), Err: ferr}
	}
	return nil
}

func retryEINTR(fn func() error) error {
	for {
		if err := fn(); err != unix.EINTR {
			return err
		}
	}
}

package vfs

import (
	"errors"
	"syscall"
)

var (
	// ErrNoSpace marks a write, allocation, sync or create that failed
	// because the device (or the user's quota) is full. Errors that carry it
	// also still match the underlying errno (syscall.ENOSPC or
	// syscall.EDQUOT), so either test works with errors.Is.
	ErrNoSpace = errors.New("vfs: no space left on device")
	// ErrInvalidRange is returned by Allocate for a negative offset or length.
	ErrInvalidRange = errors.New("vfs: invalid range")
)

// noSpaceError adds ErrNoSpace to an error chain without changing its text
// (the OS error already says "no space left on device" with the path).
type noSpaceError struct{ err error }

func (e *noSpaceError) Error() string   { return e.err.Error() }
func (e *noSpaceError) Unwrap() []error { return []error{ErrNoSpace, e.err} }

// MarkNoSpace makes a full-disk error recognisable as ErrNoSpace whatever
// layer produced it, so that callers can decide on one sentinel instead of
// per-platform errnos: an error matching syscall.ENOSPC or syscall.EDQUOT
// comes back wrapped so that it also matches ErrNoSpace, with its text
// unchanged. Other errors, and nil, pass through unchanged. FS
// implementations call it on what they return.
func MarkNoSpace(err error) error {
	if err == nil || errors.Is(err, ErrNoSpace) {
		return err
	}
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		return &noSpaceError{err: err}
	}
	return err
}

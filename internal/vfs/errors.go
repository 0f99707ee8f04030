package vfs

import (
	"errors"
	"fmt"
	"syscall"
)

var (
	// ErrNoSpace marks a write, allocation, sync or create that failed
	// because the device (or the user's quota) is full. Errors that carry it
	// also still match the underlying errno (syscall.ENOSPC or
	// syscall.EDQUOT), so either test works with errors.Is.
	ErrNoSpace = errors.New("vfs: no space left on device")
	// ErrPowerCut is returned by every call on a FaultFS file handle that
	// was open when FaultFS.PowerCut ran, and by any FaultFS operation that
	// was already under way (for example blocked in its hook) when it ran.
	ErrPowerCut = errors.New("vfs: file handle died in a simulated power cut")
	// ErrCrashed is ErrPowerCut's counterpart for FaultFS.Crash: the handle
	// belonged to a process that was killed; the disk keeps what it wrote.
	ErrCrashed = errors.New("vfs: file handle died in a simulated process crash")
	// ErrShortWrite marks a write that an injected fault tore: only a
	// prefix of the bytes reached the file. See ShortWriteError.
	ErrShortWrite = errors.New("vfs: short write")
	// ErrInvalidRange is returned by Allocate for a negative offset or length.
	ErrInvalidRange = errors.New("vfs: invalid range")
	// ErrRestore is returned by FaultFS.PowerCut when it could not put the
	// disk back into its durable state (for example because a durable file
	// was deleted behind the FaultFS's back); the directory is then in an
	// unspecified state.
	ErrRestore = errors.New("vfs: power cut could not restore the durable state")
)

// ShortWriteError is what a FaultFS hook returns to tear a write: the write
// stores only the first N bytes of its buffer and then fails with this
// error (which matches ErrShortWrite and, if set, Err). N is clamped to
// [0, len(buffer)]. Returned from a hook for any operation other than a
// write, it simply fails that operation.
type ShortWriteError struct {
	// N is how many leading bytes of the buffer reach the file.
	N int
	// Err is the cause reported with the torn write, for example
	// syscall.ENOSPC or syscall.EIO; nil means none beyond ErrShortWrite.
	Err error
}

func (e *ShortWriteError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("vfs: short write: %d bytes written", e.N)
	}
	return fmt.Sprintf("vfs: short write: %d bytes written: %v", e.N, e.Err)
}

// Unwrap lets errors.Is match both ErrShortWrite and the cause.
func (e *ShortWriteError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrShortWrite}
	}
	return []error{ErrShortWrite, e.Err}
}

// noSpaceError adds ErrNoSpace to an error chain without changing its text
// (the OS error already says "no space left on device" with the path).
type noSpaceError struct{ err error }

func (e *noSpaceError) Error() string   { return e.err.Error() }
func (e *noSpaceError) Unwrap() []error { return []error{ErrNoSpace, e.err} }

// mapNoSpace makes a full-disk error recognisable as ErrNoSpace whatever
// layer produced it, so that callers can decide on one sentinel instead of
// per-platform errnos. Other errors, and nil, pass through unchanged.
func mapNoSpace(err error) error {
	if err == nil || errors.Is(err, ErrNoSpace) {
		return err
	}
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		return &noSpaceError{err: err}
	}
	return err
}

package faultfs

import (
	"errors"
	"fmt"
)

var (
	// ErrPowerCut is returned by every call on a FS file handle that
	// was open when FS.PowerCut ran, and by any FS operation that
	// was already under way (for example blocked in its hook) when it ran.
	ErrPowerCut = errors.New("faultfs: file handle died in a simulated power cut")
	// ErrCrashed is ErrPowerCut's counterpart for FS.Crash: the handle
	// belonged to a process that was killed; the disk keeps what it wrote.
	ErrCrashed = errors.New("faultfs: file handle died in a simulated process crash")
	// ErrShortWrite marks a write that an injected fault tore: only a
	// prefix of the bytes reached the file. See ShortWriteError.
	ErrShortWrite = errors.New("faultfs: short write")
	// ErrRestore is returned by FS.PowerCut when it could not put the
	// disk back into its durable state (for example because a durable file
	// was deleted behind the FS's back); the directory is then in an
	// unspecified state.
	ErrRestore = errors.New("faultfs: power cut could not restore the durable state")
)

// ShortWriteError is what a FS hook returns to tear a write: the write
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
		return fmt.Sprintf("faultfs: short write: %d bytes written", e.N)
	}
	return fmt.Sprintf("faultfs: short write: %d bytes written: %v", e.N, e.Err)
}

// Unwrap lets errors.Is match both ErrShortWrite and the cause.
func (e *ShortWriteError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrShortWrite}
	}
	return []error{ErrShortWrite, e.Err}
}

package readpath

import (
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"syscall"
)

// Guard runs fn with debug.SetPanicOnFault(true) on the calling goroutine
// and turns a memory fault inside fn (SIGBUS from a truncated mapped file,
// SIGSEGV at a non-nil address) into an error wrapping ErrFault that names
// the file and offset when the address lies in one of this package's
// mappings. The previous SetPanicOnFault setting is restored.
//
// Only faults are converted: any other panic, including a nil pointer
// dereference (a bug, not an I/O condition), propagates unchanged. The
// protection covers this goroutine only; code in fn that hands mapped bytes
// to another goroutine must guard there too.
func Guard(fn func() error) (err error) {
	old := debug.SetPanicOnFault(true)
	defer func() {
		debug.SetPanicOnFault(old)
		if r := recover(); r != nil {
			addr, ok := faultAddr(r)
			if !ok {
				panic(r)
			}
			err = faultError(addr)
		}
	}()
	return fn()
}

// faultAddr reports whether r is the runtime error SetPanicOnFault raises,
// which is the only kind that carries the faulting address.
func faultAddr(r any) (uintptr, bool) {
	if _, ok := r.(runtime.Error); !ok {
		return 0, false
	}
	a, ok := r.(interface{ Addr() uintptr })
	if !ok {
		return 0, false
	}
	return a.Addr(), true
}

func faultError(addr uintptr) error {
	if name, off, ok := regionAt(addr); ok {
		return fmt.Errorf("%w: %s offset %d (address %#x)", ErrFault, name, off, addr)
	}
	return fmt.Errorf("%w: address %#x", ErrFault, addr)
}

// wrapWriteFault classifies an error from writing mapped memory: the kernel
// reports a fault while copying from the mapping (a write to a socket) as
// EFAULT instead of a signal.
func wrapWriteFault(err error, name string, pos, end int64) error {
	if errors.Is(err, syscall.EFAULT) {
		return fmt.Errorf("%w: writing %s [%d, %d): %w", ErrFault, name, pos, end, err)
	}
	return fmt.Errorf("readpath: write %s [%d, %d): %w", name, pos, end, err)
}

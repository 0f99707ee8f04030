package readpath

import (
	"errors"

	"github.com/foliolog/folio/errs"
)

var (
	// ErrClosed is returned by View and Close once the Source is closed. It
	// matches errs.ErrClosed.
	ErrClosed = errs.New("readpath: source closed", errs.ErrClosed)
	// ErrReleased is returned by Bytes and WriteTo after Release.
	ErrReleased = errors.New("readpath: view released")
	// ErrTruncated means the file no longer holds the view's range (Kafka's
	// "truncated during write" check): it was cut by recovery, retention or an
	// outside process after the view was taken. Nothing past the cut is sent.
	ErrTruncated = errors.New("readpath: file truncated below view")
	// ErrFault means reading mapped memory raised SIGBUS or SIGSEGV, or a
	// system call given mapped memory returned EFAULT: the pages behind the
	// mapping are gone (file truncated, I/O error on a page-in).
	ErrFault = errors.New("readpath: memory fault reading mapped file")
	// ErrBeyondMapping means the range cannot be mapped into this process:
	// its end does not fit the address space, or mmap ran out of address
	// space or map areas (ENOMEM, see vm.max_map_count).
	ErrBeyondMapping = errors.New("readpath: range cannot be mapped")
	// ErrInvalidRange is a negative position, length or map size, or a range
	// whose end overflows int64.
	ErrInvalidRange = errors.New("readpath: invalid range")
	// ErrUnknownKind is a Kind other than Mmap and Sendfile, or a name
	// ParseKind does not know.
	ErrUnknownKind = errors.New("readpath: unknown read path kind")
	// ErrNotMappable means an Mmap source was asked for a File without an
	// operating-system descriptor (File.OS returned nil).
	ErrNotMappable = errors.New("readpath: file has no descriptor to map")
	// ErrNilFile is returned by Open for a nil File.
	ErrNilFile = errors.New("readpath: nil file")
)

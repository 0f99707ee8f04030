// Package vfs is the file layer under Folio's storage packages: a small
// FS/File interface over real files and the operating-system
// implementation (Default). Every storage package takes an FS, so a test
// (or an application) can put another implementation underneath: the
// subpackage faultfs is one that knows what a power cut would take and can
// inject failures.
//
// # Real files only
//
// Every File exposes its *os.File (OS) because the index package maps
// files (edsrzf/mmap-go) and the read path sends them with sendfile; an
// in-memory file system could do neither. faultfs.FS therefore also works
// on real files in real directories, typically a test's t.TempDir().
//
// # Errors
//
// A full device is reported as an error wrapping ErrNoSpace and the errno
// (syscall.ENOSPC or syscall.EDQUOT), whether it came from the OS or from
// an injected fault; MarkNoSpace does the marking for FS implementations. Other errors are the os package's (*os.PathError,
// *os.LinkError), so errors.Is(err, fs.ErrNotExist) and friends work.
//
// Allocate exists so that a file can be mapped and written through the
// mapping without a SIGBUS when the disk fills: on Linux it is fallocate,
// elsewhere it writes zeros past the end of the file (holes already inside
// the file stay holes there).
package vfs

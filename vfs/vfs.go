package vfs

import (
	"fmt"
	"io"
	"os"
)

// FS is the file system the storage packages use.
type FS interface {
	OpenFile(name string, flag int, perm os.FileMode) (File, error)
	Rename(oldpath, newpath string) error
	Remove(name string) error
	MkdirAll(path string, perm os.FileMode) error
	ReadDir(name string) ([]os.DirEntry, error)
	Stat(name string) (os.FileInfo, error)
	// SyncDir fsyncs a directory so that creates, renames and removes in it are durable.
	SyncDir(dir string) error
}

// File is an open file of an FS. Its methods may be called from several
// goroutines at once, with the same caveats as *os.File: Read and Write
// share the file offset, ReadAt and WriteAt do not use it.
type File interface {
	io.Reader
	io.ReaderAt
	io.Writer // at the file offset (O_APPEND files append)
	io.WriterAt
	io.Closer
	// Sync makes the file's content and size durable (fdatasync on Linux,
	// which covers a size change; fsync, F_FULLFSYNC on macOS, elsewhere).
	Sync() error
	Truncate(size int64) error
	// Allocate reserves disk blocks for [off, off+n) and extends the file size to at least off+n,
	// so that writing through a mapping of that range can never SIGBUS on a full disk
	// (Linux: fallocate mode 0; elsewhere: posix_fallocate where available, else write zeros).
	// A full disk returns an error wrapping ErrNoSpace (and syscall.ENOSPC).
	// n == 0 does nothing; a negative off or n returns ErrInvalidRange.
	Allocate(off, n int64) error
	Stat() (os.FileInfo, error)
	// Name returns the name the file was opened with.
	Name() string
	// OS returns the real descriptor, for mmap (edsrzf/mmap-go takes *os.File) and sendfile.
	// Writes through a shared mapping of it are seen by the layer at the next Sync.
	// The caller must not Close it; Close the File instead.
	OS() *os.File
}

// Default is the real operating-system file system.
var Default FS = OSFS{}

// OSFS is the operating system's file system: every call goes straight to
// the os package, with full-disk errors marked ErrNoSpace. Its zero value
// is ready to use; Default holds one.
type OSFS struct{}

// OpenFile opens name like os.OpenFile.
func (OSFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, MarkNoSpace(err)
	}
	return &osFile{f: f}, nil
}

// Rename renames like os.Rename; it is durable only after SyncDir of both
// directories.
func (OSFS) Rename(oldpath, newpath string) error {
	return MarkNoSpace(os.Rename(oldpath, newpath))
}

// Remove removes a file or an empty directory like os.Remove.
func (OSFS) Remove(name string) error { return os.Remove(name) }

// MkdirAll creates a directory and its missing parents like os.MkdirAll.
func (OSFS) MkdirAll(path string, perm os.FileMode) error {
	return MarkNoSpace(os.MkdirAll(path, perm))
}

// ReadDir lists a directory sorted by name like os.ReadDir.
func (OSFS) ReadDir(name string) ([]os.DirEntry, error) { return os.ReadDir(name) }

// Stat describes a file like os.Stat.
func (OSFS) Stat(name string) (os.FileInfo, error) { return os.Stat(name) }

// SyncDir fsyncs dir, which is what makes the creation, renaming and
// removal of its entries durable on Linux file systems.
func (OSFS) SyncDir(dir string) error { return MarkNoSpace(syncDir(dir)) }

// osFile is a File over an *os.File. It does not embed the *os.File so that
// every error path goes through mapNoSpace and the method set stays the
// interface's.
type osFile struct {
	f *os.File
}

func (o *osFile) Read(p []byte) (int, error) { return o.f.Read(p) }

func (o *osFile) ReadAt(p []byte, off int64) (int, error) { return o.f.ReadAt(p, off) }

func (o *osFile) Write(p []byte) (int, error) {
	n, err := o.f.Write(p)
	return n, MarkNoSpace(err)
}

func (o *osFile) WriteAt(p []byte, off int64) (int, error) {
	n, err := o.f.WriteAt(p, off)
	return n, MarkNoSpace(err)
}

func (o *osFile) Close() error { return o.f.Close() }

func (o *osFile) Sync() error { return MarkNoSpace(syncData(o.f)) }

func (o *osFile) Truncate(size int64) error { return MarkNoSpace(o.f.Truncate(size)) }

func (o *osFile) Allocate(off, n int64) error { return MarkNoSpace(allocate(o.f, off, n)) }

func (o *osFile) Stat() (os.FileInfo, error) { return o.f.Stat() }

func (o *osFile) Name() string { return o.f.Name() }

func (o *osFile) OS() *os.File { return o.f }

// checkRange validates Allocate's arguments; the OS calls would otherwise
// fail with a bare EINVAL that does not say which argument was wrong.
func checkRange(name string, off, n int64) error {
	if off < 0 || n < 0 {
		return fmt.Errorf("%w: allocate %s: off=%d n=%d", ErrInvalidRange, name, off, n)
	}
	if off > (1<<63-1)-n {
		return fmt.Errorf("%w: allocate %s: off=%d n=%d overflows", ErrInvalidRange, name, off, n)
	}
	return nil
}

// zeroFill extends f to at least end bytes by writing zeros from its current
// size, which makes the file system allocate the blocks (unlike Truncate,
// which leaves a hole that a later mapped write may fail to fill).
// Holes already inside the file are left alone: they cannot be told apart
// from written zeros without platform calls.
func zeroFill(f *os.File, end int64) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	const chunk = 64 << 10
	zeros := make([]byte, chunk)
	for pos := fi.Size(); pos < end; {
		n := int64(chunk)
		if end-pos < n {
			n = end - pos
		}
		if _, err := f.WriteAt(zeros[:n], pos); err != nil {
			return err
		}
		pos += n
	}
	return nil
}

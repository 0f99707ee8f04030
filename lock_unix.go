//go:build unix

package folio

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// dirLock is the flock on a data directory's LockFile. flock locks belong
// to the open file description, so a second Open in the same process is
// refused just like another process; the kernel drops the lock when the
// holder dies, so a crash never leaves the directory locked.
type dirLock struct {
	f *os.File
}

// lockDir takes the lock on dir or fails with ErrDirLocked naming the
// holder. The lock file goes through the os package, not the vfs layer:
// flock needs a real descriptor and the lock is no part of the data whose
// durability the fault-injecting layer models.
func lockDir(dir string) (*dirLock, error) {
	p := filepath.Join(dir, LockFile)
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("folio: opening lock file %s: %w", p, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		holder := readHolder(f)
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s is held by %s", ErrDirLocked, dir, holder)
		}
		return nil, fmt.Errorf("folio: locking %s: %w", p, err)
	}
	if err := writeHolder(f); err != nil {
		_ = unix.Flock(int(f.Fd()), unix.LOCK_UN)
		f.Close()
		return nil, fmt.Errorf("folio: writing lock file %s: %w", p, err)
	}
	return &dirLock{f: f}, nil
}

// unlock releases the lock. The file stays: removing it would let a
// third Open lock a fresh inode while a second one still waits on the old.
func (l *dirLock) unlock() error {
	err := unix.Flock(int(l.f.Fd()), unix.LOCK_UN)
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	return err
}

func writeHolder(f *os.File) error {
	host, _ := os.Hostname()
	if err := f.Truncate(0); err != nil {
		return err
	}
	_, err := f.WriteAt([]byte(holderLine(os.Getpid(), host)), 0)
	return err
}

func holderLine(pid int, host string) string {
	return fmt.Sprintf("pid=%d host=%s\n", pid, host)
}

// readHolder describes the holder from the lock file's content, as far as
// it can be read: the holder may be between taking the lock and writing.
func readHolder(f *os.File) string {
	buf := make([]byte, 512)
	n, _ := f.ReadAt(buf, 0)
	line := strings.TrimSpace(string(bytes.ToValidUTF8(buf[:n], []byte("?"))))
	if line == "" {
		return "an unknown holder (the lock file is empty)"
	}
	return line
}

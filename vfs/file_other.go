//go:build !linux

package vfs

import "os"

// syncData is fsync (F_FULLFSYNC on macOS, via the os package): there is
// no portable fdatasync.
func syncData(f *os.File) error { return f.Sync() }

// allocate writes zeros past the current size: portable, and it allocates
// the blocks, which is all a later mapped write needs. macOS has no
// posix_fallocate.
func allocate(f *os.File, off, n int64) error {
	if err := checkRange(f.Name(), off, n); err != nil || n == 0 {
		return err
	}
	return zeroFill(f, off+n)
}

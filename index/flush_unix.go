//go:build unix && !linux

package index

import "golang.org/x/sys/unix"

// flushMapping writes back pages dirtied through the mapping. Outside Linux
// fsync is not documented to cover writes made through mmap, so they are
// msync'ed first; b starts at the mapping's (page-aligned) start.
func flushMapping(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	return unix.Msync(b, unix.MS_SYNC)
}

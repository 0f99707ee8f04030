//go:build !unix

package index

import "github.com/edsrzf/mmap-go"

// flushMapping writes back pages dirtied through the mapping before the
// file is fsynced.
func flushMapping(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	return mmap.MMap(b).Flush()
}

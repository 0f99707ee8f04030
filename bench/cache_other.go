//go:build !linux

package main

import "fmt"

// residency needs mincore on a file mapping as Linux offers it; elsewhere
// the report says "residency unknown" instead of guessing.
func residency(path string) (resident, total int64, err error) {
	return 0, 0, fmt.Errorf("%w: mincore of %s", ErrNoCacheControl, path)
}

// evict needs posix_fadvise(POSIX_FADV_DONTNEED), which this platform
// lacks: cold-cache runs cannot be made here.
func evict(path string) error {
	return fmt.Errorf("%w: evict %s", ErrNoCacheControl, path)
}

// nudgeNetwork has nothing to do where eviction is unsupported.
func nudgeNetwork() error { return nil }

// readAheadKiB reads sysfs, which this platform lacks.
func readAheadKiB(dir string) (kib int, ok bool) { return 0, false }

//go:build !linux

package main

import "fmt"

// heldResources needs /proc; elsewhere the partitions table shows n/a.
func heldResources(dir string) (fds, maps int, err error) {
	return 0, 0, fmt.Errorf("bench: counting descriptors and mappings needs /proc")
}

// selfRSS needs /proc; elsewhere the conns table shows n/a.
func selfRSS() (int64, error) {
	return 0, fmt.Errorf("bench: the resident set size needs /proc")
}

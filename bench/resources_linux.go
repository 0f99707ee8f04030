package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// heldResources counts the open descriptors and memory mappings of this
// process that point below dir: what the partitions suite's logs hold,
// apart from everything else the process has open.
func heldResources(dir string) (fds, maps int, err error) {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return 0, 0, fmt.Errorf("bench: list descriptors: %w", err)
	}
	prefix := filepath.Clean(dir) + "/"
	for _, e := range ents {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name()))
		if err != nil {
			continue // closed since the listing
		}
		if strings.HasPrefix(target, prefix) {
			fds++
		}
	}
	b, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return 0, 0, fmt.Errorf("bench: read mappings: %w", err)
	}
	for _, line := range bytes.Split(b, []byte("\n")) {
		// The path is the last field; " (deleted)" may follow it.
		if i := bytes.Index(line, []byte(" "+prefix)); i >= 0 {
			maps++
		}
	}
	return fds, maps, nil
}

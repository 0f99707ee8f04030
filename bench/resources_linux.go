package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
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

// selfRSS is this process's resident set (VmRSS of /proc/self/status), in
// bytes.
func selfRSS() (int64, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, fmt.Errorf("bench: read resident set: %w", err)
	}
	for _, line := range bytes.Split(b, []byte("\n")) {
		if v, ok := bytes.CutPrefix(line, []byte("VmRSS:")); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(string(v)), " kB"), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("bench: parse %q: %w", line, err)
			}
			return kb << 10, nil
		}
	}
	return 0, fmt.Errorf("bench: no VmRSS in /proc/self/status")
}

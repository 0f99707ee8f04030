package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// mincoreChunk bounds one mapping made to ask mincore: huge files are
// inspected piecewise so the check itself costs little address space.
const mincoreChunk = 1 << 30

// residency counts the pages of path resident in the page cache. It maps
// the file without touching it (mincore reports without faulting pages in).
func residency(path string) (resident, total int64, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, fmt.Errorf("bench: mincore %s: %w", path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, 0, fmt.Errorf("bench: mincore %s: %w", path, err)
	}
	size := st.Size()
	page := int64(os.Getpagesize())
	total = (size + page - 1) / page
	vec := make([]byte, (min(size, mincoreChunk)+page-1)/page)
	for off := int64(0); off < size; off += mincoreChunk {
		n := min(size-off, mincoreChunk)
		m, err := unix.Mmap(int(f.Fd()), off, int(n), unix.PROT_READ, unix.MAP_SHARED)
		if err != nil {
			return 0, 0, fmt.Errorf("bench: mincore %s at %d: %w", path, off, err)
		}
		pages := (n + page - 1) / page
		err = mincore(m, vec[:pages])
		unix.Munmap(m)
		if err != nil {
			return 0, 0, fmt.Errorf("bench: mincore %s at %d: %w", path, off, err)
		}
		for _, v := range vec[:pages] {
			resident += int64(v & 1)
		}
	}
	return resident, total, nil
}

// evict drops path's pages from the page cache without privileges: write
// back dirty pages first (fadvise does not free dirty pages), then
// POSIX_FADV_DONTNEED. Pages mapped by any process stay; callers unmap first.
func evict(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("bench: evict %s: %w", path, err)
	}
	defer f.Close()
	if err := unix.Fdatasync(int(f.Fd())); err != nil {
		return fmt.Errorf("bench: evict %s: fdatasync: %w", path, err)
	}
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		return fmt.Errorf("bench: evict %s: fadvise: %w", path, err)
	}
	return nil
}

// mincore is mincore(2), which x/sys/unix does not wrap on Linux: one
// byte per page of b, bit 0 set when the page is resident.
func mincore(b, vec []byte) error {
	if len(b) == 0 {
		return nil
	}
	_, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), uintptr(unsafe.Pointer(&vec[0])))
	if errno != 0 {
		return errno
	}
	return nil
}

// nudgeNetwork runs a few loopback round trips on every CPU this process
// may use. Why: a socket reader frees the buffers of a sendfile(2)
// transfer lazily, on a per-CPU list that the CPU that sent them empties
// only when it next processes received packets (skb_attempt_defer_free,
// Linux 5.19+); until then those buffers pin page-cache pages, and
// POSIX_FADV_DONTNEED cannot drop them. Seen here: a fifth of a file stayed
// resident for seconds after a cold sendfile run. Traffic on each CPU
// empties its list.
func nudgeNetwork() error {
	ln, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return fmt.Errorf("bench: nudge: %w", err)
	}
	defer ln.Close()
	echoed := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			echoed <- err
			return
		}
		_, err = io.Copy(c, c)
		c.Close()
		echoed <- err
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		return fmt.Errorf("bench: nudge: %w", err)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var all unix.CPUSet
	if err := unix.SchedGetaffinity(0, &all); err != nil {
		c.Close()
		return fmt.Errorf("bench: nudge: %w", err)
	}
	buf := make([]byte, 64)
	var rtErr error
	for cpu := 0; cpu < len(all)*64 && rtErr == nil; cpu++ {
		if !all.IsSet(cpu) {
			continue
		}
		var one unix.CPUSet
		one.Set(cpu)
		if err := unix.SchedSetaffinity(0, &one); err != nil {
			continue // a CPU gone offline: nothing queued there to free
		}
		for range 4 {
			if _, rtErr = c.Write(buf); rtErr != nil {
				break
			}
			if _, rtErr = io.ReadFull(c, buf); rtErr != nil {
				break
			}
		}
	}
	serr := unix.SchedSetaffinity(0, &all)
	c.Close()
	<-echoed
	if err := errors.Join(rtErr, serr); err != nil {
		return fmt.Errorf("bench: nudge: %w", err)
	}
	return nil
}

// readAheadKiB is the read-ahead window of the block device holding dir
// (its queue's read_ahead_kb in sysfs). It sets how far a sequential read
// runs ahead and, for a page fault on a file mapping, how much the kernel
// reads around the page it needs, which is what a cold random read through
// mmap pays. ok is false where dir is on no block device sysfs describes
// (tmpfs, overlay, btrfs's anonymous devices).
func readAheadKiB(dir string) (kib int, ok bool) {
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		return 0, false
	}
	dev := fmt.Sprintf("/sys/dev/block/%d:%d", unix.Major(st.Dev), unix.Minor(st.Dev))
	// A partition has no queue of its own; its disk, one level up, has.
	for _, p := range []string{dev + "/queue/read_ahead_kb", dev + "/../queue/read_ahead_kb"} {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			return n, true
		}
	}
	return 0, false
}

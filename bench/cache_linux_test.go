package main

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

func TestResidency(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "data")
	const size = 4<<20 + 100 // a partial last page counts as a page
	b := make([]byte, size)
	for i := range b {
		b[i] = byte(i)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	page := int64(os.Getpagesize())
	frac, err := prepareCache(warmCache, []string{path})
	if err != nil {
		t.Fatal(err)
	}
	if frac != 1 {
		t.Fatalf("after reading the file it is %.3f resident, want 1", frac)
	}
	_, total, err := residency(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := (int64(size) + page - 1) / page; total != want {
		t.Fatalf("total pages %d, want %d", total, want)
	}

	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	frac, err = prepareCache(coldCache, []string{path})
	if err != nil {
		t.Fatal(err)
	}
	if volatileFS(fsName(int64(st.Type))) {
		// tmpfs pages live only in the cache: eviction cannot drop them,
		// and the residency must say so rather than pretend.
		if frac != 1 {
			t.Fatalf("on %s eviction reported %.3f resident, want 1", fsName(int64(st.Type)), frac)
		}
	} else if frac != 0 {
		t.Fatalf("after eviction %.3f resident, want 0", frac)
	}
	if !coldSupported(dir) && !volatileFS(fsName(int64(st.Type))) {
		t.Error("coldSupported is false on Linux on a disk filesystem")
	}

	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if r, tot, err := residency(empty); err != nil || r != 0 || tot != 0 {
		t.Fatalf("empty file: %d/%d, %v", r, tot, err)
	}
	if _, _, err := residency(filepath.Join(dir, "missing")); err == nil {
		t.Fatal("residency of a missing file did not fail")
	}
}

func TestNudgeNetwork(t *testing.T) {
	var before unix.CPUSet
	if err := unix.SchedGetaffinity(0, &before); err != nil {
		t.Fatal(err)
	}
	if err := nudgeNetwork(); err != nil {
		t.Fatal(err)
	}
	var after unix.CPUSet
	if err := unix.SchedGetaffinity(0, &after); err != nil {
		t.Fatal(err)
	}
	if before != after {
		t.Fatalf("nudge left the thread's CPU affinity changed: %v -> %v", before, after)
	}
}

// TestReadAhead: /proc is on no block device, so it has no read-ahead
// window; a temporary directory may or may not, but never a negative one.
func TestReadAhead(t *testing.T) {
	if kib, ok := readAheadKiB("/proc"); ok {
		t.Errorf("/proc has a read-ahead window of %d KiB", kib)
	}
	if kib, ok := readAheadKiB(t.TempDir()); ok && kib < 0 {
		t.Errorf("read-ahead window %d KiB", kib)
	}
}

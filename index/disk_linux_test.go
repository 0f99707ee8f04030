package index

import (
	"os"
	"syscall"
	"testing"
)

// diskBytes is what the file system has allocated to path (st_blocks is in
// 512-byte units whatever the block size).
func diskBytes(t *testing.T, path string) (size, disk int64) {
	t.Helper()
	fi, err := os.Stat(path)
	mustNil(t, "Stat", err)
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		t.Fatalf("no Stat_t for %s", path)
	}
	return fi.Size(), st.Blocks * 512
}

// Disk use follows the entries, one allocation step at a time, not the
// 10 MiB mapping; Seal gives back the part of the last step not used.
func TestDiskUseFollowsEntries(t *testing.T) {
	path := tempPath(t, "d.index")
	x := openOffset(t, path, 0, true, nil)
	defer func() { mustNil(t, "Close", x.Close()) }()
	if size, disk := diskBytes(t, path); size != 0 || disk != 0 {
		t.Fatalf("new index: size %d, disk %d", size, disk)
	}
	const step = AllocStepEntries * OffsetEntrySize
	// The file system rounds to its block and may count extent-tree
	// blocks; a few pages are noise next to a 64 KiB step.
	slack := 4 * int64(os.Getpagesize())
	for _, tc := range []struct {
		entries int64
		steps   int64
	}{{1, 1}, {AllocStepEntries, 1}, {AllocStepEntries + 1, 2}, {5*AllocStepEntries - 7, 5}} {
		for int64(x.Entries()) < tc.entries {
			i := int64(x.Entries())
			mustNil(t, "Append", x.Append(i, i*4096))
		}
		size, disk := diskBytes(t, path)
		if size != tc.steps*step {
			t.Errorf("%d entries: file size %d, want %d", tc.entries, size, tc.steps*step)
		}
		if disk < tc.steps*step || disk > tc.steps*step+slack {
			t.Errorf("%d entries: %d bytes on disk, want %d (fallocate reserves the step)", tc.entries, disk, tc.steps*step)
		}
		if disk >= DefaultMaxIndexBytes/4 {
			t.Errorf("%d entries: disk use %d tracks the mapping, not the entries", tc.entries, disk)
		}
	}
	mustNil(t, "Seal", x.Seal())
	size, disk := diskBytes(t, path)
	if want := int64(x.Entries()) * OffsetEntrySize; size != want || disk < want || disk > want+slack {
		t.Errorf("sealed: size %d disk %d, want %d", size, disk, want)
	}
	// Reactivate maps 10 MiB again but allocates nothing until it must.
	mustNil(t, "Reactivate", x.Reactivate())
	if s2, d2 := diskBytes(t, path); s2 != size || d2 != disk {
		t.Errorf("Reactivate changed the file: size %d disk %d", s2, d2)
	}
	i := int64(x.Entries())
	mustNil(t, "Append", x.Append(i, i*4096))
	if s3, _ := diskBytes(t, path); s3 != size+step {
		t.Errorf("first Append after Reactivate: size %d, want %d", s3, size+step)
	}
}

// The time index's step is whole entries and whole pages, and its last step
// stops at the mapping's end.
func TestTimeIndexAllocationSteps(t *testing.T) {
	path := tempPath(t, "d.timeindex")
	const maxEntries = AllocStepEntries + 100
	x := openTime(t, path, 0, true, &Options{MaxIndexBytes: maxEntries*TimeEntrySize + 5})
	defer func() { mustNil(t, "Close", x.Close()) }()
	mustNil(t, "Append", x.Append(1, 0))
	size, _ := diskBytes(t, path)
	if size != AllocStepEntries*TimeEntrySize || size%int64(os.Getpagesize()) != 0 {
		t.Fatalf("first step: size %d", size)
	}
	for x.Entries() < maxEntries {
		mustNil(t, "Append", x.Append(int64(x.Entries())+1, int64(x.Entries())))
	}
	if size, _ := diskBytes(t, path); size != maxEntries*TimeEntrySize {
		t.Fatalf("full: size %d, want %d", size, maxEntries*TimeEntrySize)
	}
	if !x.Full() {
		t.Fatal("not Full at MaxEntries")
	}
}

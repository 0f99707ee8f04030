package readpath

import (
	"errors"
	"fmt"
	"math"
	"os"
	"sync"
	"syscall"
	"unsafe"

	"github.com/edsrzf/mmap-go"
)

// region is one read-only shared mapping of a file, always from offset 0 so
// that a file position is also an index into data. A Source maps lazily and
// replaces its region with a larger one when a view ends past it; views keep
// the region they were cut from, so a replaced region lives on until its
// last view is released.
type region struct {
	data mmap.MMap // exactly the slice mmap returned: Unmap needs it whole
	name string    // the file's name, for fault reports
	refs int       // guarded by the owning source's stateMu
}

// mapFile maps [0, size) of f read-only. The mapping may extend past EOF:
// Linux and Darwin allow it, and only pages below EOF are ever touched.
func mapFile(f *os.File, name string, size int64) (*region, error) {
	if size > math.MaxInt {
		return nil, fmt.Errorf("%w: %s: %d bytes exceed the address space", ErrBeyondMapping, name, size)
	}
	m, err := mmap.MapRegion(f, int(size), mmap.RDONLY, 0, 0)
	if err != nil {
		if errors.Is(err, syscall.ENOMEM) {
			return nil, fmt.Errorf("%w: %s: map %d bytes: %w", ErrBeyondMapping, name, size, err)
		}
		return nil, fmt.Errorf("readpath: map %s (%d bytes): %w", name, size, err)
	}
	r := &region{data: m, name: name}
	registerRegion(r)
	return r, nil
}

func (r *region) unmap() error {
	unregisterRegion(r)
	if err := r.data.Unmap(); err != nil {
		return fmt.Errorf("readpath: unmap %s: %w", r.name, err)
	}
	return nil
}

// The registry of live regions lets Guard name the file and offset behind
// a faulting address. It is touched on map, unmap and fault only.
// Lock order: a source's stateMu, then regionsMu (mapping and unmapping run
// under stateMu); regionsMu is never held while taking another lock.
var (
	regionsMu sync.Mutex // guards regions
	regions   = map[*region]struct{}{}
)

func registerRegion(r *region) {
	regionsMu.Lock()
	regions[r] = struct{}{}
	regionsMu.Unlock()
	liveMappings.Add(1)
	mappedBytes.Add(int64(len(r.data)))
}

func unregisterRegion(r *region) {
	regionsMu.Lock()
	delete(regions, r)
	regionsMu.Unlock()
	liveMappings.Add(-1)
	mappedBytes.Add(-int64(len(r.data)))
}

// regionAt returns the live region holding addr and addr's file offset.
func regionAt(addr uintptr) (name string, off int64, ok bool) {
	regionsMu.Lock()
	defer regionsMu.Unlock()
	for r := range regions {
		base := uintptr(unsafe.Pointer(unsafe.SliceData(r.data)))
		if addr >= base && addr-base < uintptr(len(r.data)) {
			return r.name, int64(addr - base), true
		}
	}
	return "", 0, false
}

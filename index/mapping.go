package index

import (
	"sync"
	"sync/atomic"

	"github.com/edsrzf/mmap-go"
)

// mapping is one published view of the index: a memory map, the number of
// complete entries in it and who may still be reading it. Readers pin the
// current mapping with acquire/release and never take a lock; whoever
// replaces it (Seal, Reactivate, TruncateTo, Close) publishes the successor
// first and then waits in drain until the last reader of the old one has
// left, so memory is unmapped, and a file shrunk, only when no reader can be
// inside the part that goes away.
type mapping struct {
	// data is the mapping as mmap-go returned it (Unmap needs the original
	// slice), or nil when there is nothing mapped: an empty sealed index, or
	// the empty mapping Close publishes so that later lookups see no entries.
	data mmap.MMap
	// own says whether unmapping data is this mapping's job. TruncateTo on a
	// writable index republishes the same memory under a new count; only the
	// newest holder unmaps it.
	own bool
	// writable: the memory is mapped read-write and Append may write to it.
	writable bool
	// capacity is how many entries fit in data.
	capacity int64

	// n counts the entries readers may look at. The writer stores it only
	// after the entry's bytes are in data, so a reader that loads n sees n
	// whole entries.
	n atomic.Int64

	// pins counts the readers holding the mapping in its low bits and has
	// retiredFlag set once the mapping is replaced. One word for both makes
	// "retired and no readers" a single observable value: with two separate
	// atomics, a reader whose release hit zero could read the flag only
	// later, after another reader had pinned the mapping and the writer had
	// retired it, and would then wake the writer too early.
	pins      atomic.Int64
	drained   chan struct{}
	drainOnce sync.Once
}

// retiredFlag marks a mapping in pins once it has been replaced.
const retiredFlag = 1 << 62

func newMapping(data mmap.MMap, writable bool, capacity, n int64) *mapping {
	m := &mapping{data: data, own: data != nil, writable: writable, capacity: capacity, drained: make(chan struct{})}
	m.n.Store(n)
	return m
}

// release ends a read. The release that leaves a retired mapping without
// readers wakes drain. (A reader that pins a retired mapping only to find it
// replaced, in acquire, may reach that value again; the Once absorbs it.)
func (m *mapping) release() {
	if m.pins.Add(-1) == retiredFlag {
		m.drainOnce.Do(func() { close(m.drained) })
	}
}

// drain marks m retired and waits until no reader holds it. It must be
// called after m has been replaced as the current mapping: from then on
// acquire never hands m out (a reader that raced to pin it sees the swap
// and lets go), so the reader count only falls.
func (m *mapping) drain() {
	if m.pins.Add(retiredFlag) == retiredFlag {
		return
	}
	<-m.drained
}

// unmap releases data if this mapping owns it. Call only after drain.
func (m *mapping) unmap() error {
	if !m.own || m.data == nil {
		return nil
	}
	m.own = false
	return m.data.Unmap()
}

// pinned is the current mapping of an index, swapped atomically.
type pinned struct {
	cur atomic.Pointer[mapping]
}

// acquire pins the current mapping for reading. The increment is checked
// against a second load so that a swap that happened in between is seen,
// which is what lets drain trust a count of zero.
func (p *pinned) acquire() *mapping {
	for {
		m := p.cur.Load()
		m.pins.Add(1)
		if p.cur.Load() == m {
			return m
		}
		m.release()
	}
}

// swap publishes next and waits for the readers of the previous mapping,
// which it returns (drained, not unmapped).
func (p *pinned) swap(next *mapping) *mapping {
	old := p.cur.Swap(next)
	if old != nil {
		old.drain()
	}
	return old
}

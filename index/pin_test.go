package index

import (
	"sync"
	"sync/atomic"
	"testing"
)

// The pin protocol alone, without mmap: a mapping that swap has returned
// (drained) must never be held by a reader. Each mapping carries its id in
// capacity; the writer marks an id dead once swap returns, as if it had
// unmapped it, and readers check that what they hold is alive. This caught
// a release that decided on "zero readers" and "retired" from two separate
// loads.
func TestPinNeverHandsOutDrainedMapping(t *testing.T) {
	const swaps = 30000
	dead := make([]atomic.Bool, swaps+1)
	var p pinned
	p.cur.Store(newMapping(nil, false, 0, 0))
	var done atomic.Bool
	var wg sync.WaitGroup
	var reads atomic.Int64
	for range 3 {
		wg.Go(func() {
			for !done.Load() {
				m := p.acquire()
				for range 8 {
					if dead[m.capacity].Load() {
						t.Errorf("reader holds mapping %d after it was drained", m.capacity)
						m.release()
						return
					}
				}
				m.release()
				reads.Add(1)
			}
		})
	}
	for i := range int64(swaps) {
		old := p.swap(newMapping(nil, false, i+1, 0))
		dead[old.capacity].Store(true)
	}
	done.Store(true)
	wg.Wait()
	t.Logf("%d pinned reads across %d swaps", reads.Load(), swaps)
}

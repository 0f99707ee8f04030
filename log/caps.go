package log

import (
	"container/list"
	"sync"
	"sync/atomic"
)

// DefaultMaxOpenSegments is the cap of a ResourceCaps made with a cap of 0,
// and of the private one a Log gets when Options.Caps is nil.
const DefaultMaxOpenSegments = 1024

// idleCloser is what the caps need from a sealed segment: give back its
// file descriptors and mappings. Views already handed out keep their own.
type idleCloser interface {
	CloseIdle() error
}

// ResourceCaps bounds how many sealed segments, across every Log that shares
// it, hold open files and mappings at once. A sealed segment opens its files
// on first use; when more than the cap are open, the least recently used
// ones that no read is using are closed again. Active segments (one per
// Log) always stay open and are not counted; nor are segments rolled past
// but not yet sealed.
//
// The cap can be exceeded while more segments than the cap are being read
// at the same instant: a segment in use is never closed under its reader.
// A ResourceCaps is safe for concurrent use.
type ResourceCaps struct {
	max int

	// lruMu guards lru, open, and every capEntry's elem and pins.
	lruMu sync.Mutex
	lru   list.List // of *capEntry; front = most recently used
	open  int

	evictions atomic.Int64
}

// capEntry is one segment's membership in a ResourceCaps.
type capEntry struct {
	closer idleCloser
	owner  *atomic.Int64 // the owning Log's count of its open sealed segments

	// closeMu orders an eviction's CloseIdle against forget: once forget
	// returns, no CloseIdle of this entry is running or will run, so the
	// segment can be reactivated or deleted. Lock order: closeMu, lruMu.
	closeMu sync.Mutex
	// eligible: the segment is sealed and may be closed when idle. Written
	// with closeMu and lruMu held; read with either.
	eligible bool

	elem *list.Element // non-nil while counted open; guarded by lruMu
	pins int           // reads in progress; guarded by lruMu
}

// NewResourceCaps returns caps that keep at most maxOpenSegments sealed
// segments open (0 or less means DefaultMaxOpenSegments).
func NewResourceCaps(maxOpenSegments int) *ResourceCaps {
	if maxOpenSegments <= 0 {
		maxOpenSegments = DefaultMaxOpenSegments
	}
	return &ResourceCaps{max: maxOpenSegments}
}

// CapsStats is a snapshot of a ResourceCaps.
type CapsStats struct {
	MaxOpenSegments int   // the cap
	OpenSegments    int   // sealed segments now holding files or mappings
	Evictions       int64 // idle segments closed to stay under the cap
}

// Stats returns the current counts.
func (c *ResourceCaps) Stats() CapsStats {
	c.lruMu.Lock()
	defer c.lruMu.Unlock()
	return CapsStats{MaxOpenSegments: c.max, OpenSegments: c.open, Evictions: c.evictions.Load()}
}

// setEligible makes a sealed segment that holds no files subject to the
// caps: it counts as open from its first use.
func (c *ResourceCaps) setEligible(e *capEntry) {
	e.closeMu.Lock()
	c.lruMu.Lock()
	e.eligible = true
	c.lruMu.Unlock()
	e.closeMu.Unlock()
}

// add makes a segment that was just sealed, and still holds the files it
// was written through, subject to the caps and counts it open.
func (c *ResourceCaps) add(e *capEntry) {
	e.closeMu.Lock()
	c.lruMu.Lock()
	e.eligible = true
	c.touchLocked(e)
	victims := c.evictLocked()
	c.lruMu.Unlock()
	e.closeMu.Unlock()
	c.closeIdle(victims)
}

// acquire marks e in use, so that it is not closed under a read, and most
// recently used. An eligible segment that was not open counts as open from
// now: the read that follows opens its files.
func (c *ResourceCaps) acquire(e *capEntry) {
	c.lruMu.Lock()
	e.pins++
	if e.eligible {
		c.touchLocked(e)
	}
	c.lruMu.Unlock()
}

// release ends a use begun by acquire and closes idle segments beyond the cap.
func (c *ResourceCaps) release(e *capEntry) {
	c.lruMu.Lock()
	e.pins--
	var victims []*capEntry
	if c.open > c.max {
		victims = c.evictLocked()
	}
	c.lruMu.Unlock()
	c.closeIdle(victims)
}

// forget takes e out of the caps without closing it: the caller is about to
// reactivate, delete or close the segment itself. It waits for an eviction
// of e that is under way.
func (c *ResourceCaps) forget(e *capEntry) {
	e.closeMu.Lock()
	c.lruMu.Lock()
	e.eligible = false
	if e.elem != nil {
		c.lru.Remove(e.elem)
		e.elem = nil
		c.open--
		e.owner.Add(-1)
	}
	c.lruMu.Unlock()
	e.closeMu.Unlock()
}

func (c *ResourceCaps) touchLocked(e *capEntry) {
	if e.elem != nil {
		if c.lru.Front() != e.elem {
			c.lru.MoveToFront(e.elem)
		}
		return
	}
	e.elem = c.lru.PushFront(e)
	c.open++
	e.owner.Add(1)
}

// evictLocked unlinks least recently used idle segments until the count is
// back under the cap and returns them for closing outside lruMu, so that one
// slow close does not stall the reads of every log sharing the caps.
func (c *ResourceCaps) evictLocked() []*capEntry {
	var victims []*capEntry
	for el := c.lru.Back(); el != nil && c.open > c.max; {
		e := el.Value.(*capEntry)
		prev := el.Prev()
		if e.pins == 0 {
			c.lru.Remove(el)
			e.elem = nil
			c.open--
			e.owner.Add(-1)
			victims = append(victims, e)
		}
		el = prev
	}
	c.evictions.Add(int64(len(victims)))
	return victims
}

// closeIdle closes evicted segments. A read that picked a victim up again in
// the meantime counts it open again; if this close then lands after that
// read loaded the files, the next read reloads them (views keep their own
// references), and the count is high by one until the next eviction of it.
func (c *ResourceCaps) closeIdle(victims []*capEntry) {
	for _, e := range victims {
		e.closeMu.Lock()
		c.lruMu.Lock()
		still := e.eligible && e.elem == nil && e.pins == 0
		c.lruMu.Unlock()
		if still {
			// Closing an idle descriptor loses nothing: the segment is
			// sealed and synced, and it reloads lazily on next use.
			_ = e.closer.CloseIdle()
		}
		e.closeMu.Unlock()
	}
}

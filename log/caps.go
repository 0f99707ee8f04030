package log

import (
	"container/list"
	"sync"
	"sync/atomic"

	"github.com/foliolog/folio/record"
)

// DefaultMaxOpenSegments is the cap of a ResourceCaps made with a cap of 0,
// and of the private one a Log gets when Options.Caps is nil.
const DefaultMaxOpenSegments = 1024

// DescriptorsPerSegment is how many file descriptors one open segment holds
// at most: the active one's write handle, the read handle its mapping or
// pread goes through, and its two indexes. A sealed one holds the read
// handle alone (its indexes keep only their mappings). A budget of open
// files divided by it is a cap that keeps within it.
const DescriptorsPerSegment = 4

// idleCloser is what the caps need from a segment: give back its file
// descriptors and mappings. Views already handed out keep their own.
type idleCloser interface {
	CloseIdle() error
}

// ResourceCaps bounds how many segments, across every Log that shares it,
// hold open files and mappings at once: sealed ones, the active one of each
// Log, and segments rolled past but not yet sealed. A segment opens its
// files on first use; when more than the cap are open, idle ones not used
// lately are closed again. An active segment closed so (segment.CloseIdle)
// first fsyncs what it holds unsynced, keeps its append state in memory,
// and reopens for writing at the next append or read: ten thousand
// partitions that take a record now and then hold no more descriptors than
// the cap allows.
//
// Which idle segment goes is decided by CLOCK, the usual approximation of
// least recently used: a read only sets its segment's reference bit, and
// the sweep that evicts passes over (and clears) set bits once before it
// takes a segment. A read of a segment that is already open therefore
// takes no lock: every read of every log sharing the caps would otherwise
// meet on one mutex, twice.
//
// The cap can be exceeded while more segments than the cap are being read
// at the same instant: a segment in use is never closed under its reader.
// A ResourceCaps is safe for concurrent use.
type ResourceCaps struct {
	max int

	// ringMu guards ring, hand and every capEntry's elem. open and each
	// entry's counted flag change only with it held, and are read without
	// it by the reads' fast paths.
	ringMu sync.Mutex
	ring   list.List     // of *capEntry: the sealed segments counted open, in CLOCK order
	hand   *list.Element // where the next sweep starts; nil means the front
	open   atomic.Int64  // ring.Len()

	evictions atomic.Int64
}

// capEntry is one segment's membership in a ResourceCaps.
type capEntry struct {
	closer idleCloser
	owner  *atomic.Int64 // the owning Log's count of its open sealed segments

	// closeMu orders an eviction's CloseIdle against forget: once forget
	// returns, no CloseIdle of this entry is running or will run, so the
	// segment can be reactivated or deleted. Lock order: closeMu, ringMu.
	closeMu sync.Mutex
	// eligible: the segment is sealed and may be closed when idle. Written
	// with closeMu and ringMu held; read anywhere.
	eligible atomic.Bool

	elem *list.Element // non-nil while counted open; guarded by ringMu
	// counted is elem != nil, for acquire to read without ringMu. The
	// sweep clears it before it checks pins, and acquire adds its pin
	// before it reads it: of a read and an eviction that race, either
	// the sweep sees the pin and keeps the segment, or the read sees the
	// segment uncounted and counts it again under ringMu.
	counted atomic.Bool
	used    atomic.Bool  // CLOCK reference bit: set by reads, cleared by sweeps
	pins    atomic.Int32 // reads in progress
}

// NewResourceCaps returns caps that keep at most maxOpenSegments segments
// open (0 or less means DefaultMaxOpenSegments).
func NewResourceCaps(maxOpenSegments int) *ResourceCaps {
	if maxOpenSegments <= 0 {
		maxOpenSegments = DefaultMaxOpenSegments
	}
	return &ResourceCaps{max: maxOpenSegments}
}

// CapsStats is a snapshot of a ResourceCaps.
type CapsStats struct {
	MaxOpenSegments int   // the cap
	OpenSegments    int   // segments (active ones too) now holding files or mappings
	Evictions       int64 // idle segments closed to stay under the cap
}

// Stats returns the current counts.
func (c *ResourceCaps) Stats() CapsStats {
	return CapsStats{MaxOpenSegments: c.max, OpenSegments: int(c.open.Load()), Evictions: c.evictions.Load()}
}

// setEligible makes a segment that holds no files subject to the caps: it
// counts as open from its first use.
func (c *ResourceCaps) setEligible(e *capEntry) {
	e.closeMu.Lock()
	c.ringMu.Lock()
	e.eligible.Store(true)
	c.ringMu.Unlock()
	e.closeMu.Unlock()
}

// add makes a segment that holds files (just created, loaded or sealed)
// subject to the caps and counts it open.
func (c *ResourceCaps) add(e *capEntry) {
	e.closeMu.Lock()
	c.ringMu.Lock()
	e.eligible.Store(true)
	c.touchLocked(e)
	victims := c.evictLocked()
	c.ringMu.Unlock()
	e.closeMu.Unlock()
	c.closeIdle(victims)
}

// acquire marks e in use, so that it is not closed under a read, and
// recently used. An eligible segment that was not open counts as open from
// now: the read that follows opens its files. Only that case takes ringMu.
func (c *ResourceCaps) acquire(e *capEntry) {
	e.pins.Add(1)
	if !e.eligible.Load() {
		return
	}
	if e.counted.Load() {
		if !e.used.Load() {
			// Stored only when clear, which for a segment read often is
			// once per sweep: the other reads only load it.
			e.used.Store(true)
		}
		return
	}
	c.ringMu.Lock()
	if e.eligible.Load() {
		c.touchLocked(e)
	}
	c.ringMu.Unlock()
}

// release ends a use begun by acquire and closes idle segments beyond the cap.
func (c *ResourceCaps) release(e *capEntry) {
	e.pins.Add(-1)
	if c.open.Load() <= int64(c.max) {
		return
	}
	c.ringMu.Lock()
	victims := c.evictLocked()
	c.ringMu.Unlock()
	c.closeIdle(victims)
}

// forget takes e out of the caps without closing it: the caller is about to
// reactivate, delete or close the segment itself. It waits for an eviction
// of e that is under way.
func (c *ResourceCaps) forget(e *capEntry) {
	e.closeMu.Lock()
	c.ringMu.Lock()
	e.eligible.Store(false)
	if e.elem != nil {
		c.unlinkLocked(e)
	}
	c.ringMu.Unlock()
	e.closeMu.Unlock()
}

// touchLocked marks e used and counts it open if it was not. A segment new
// to the ring goes just behind the hand, so that the sweep reaches it last.
func (c *ResourceCaps) touchLocked(e *capEntry) {
	e.used.Store(true)
	if e.elem != nil {
		return
	}
	if c.hand != nil {
		e.elem = c.ring.InsertBefore(e, c.hand)
	} else {
		e.elem = c.ring.PushBack(e)
	}
	e.counted.Store(true)
	c.open.Add(1)
	e.owner.Add(1)
}

// unlinkLocked takes e out of the ring and the open counts.
func (c *ResourceCaps) unlinkLocked(e *capEntry) {
	if c.hand == e.elem {
		c.hand = e.elem.Next()
	}
	c.ring.Remove(e.elem)
	e.elem = nil
	e.counted.Store(false)
	c.open.Add(-1)
	e.owner.Add(-1)
}

// evictLocked sweeps the ring until the count is back under the cap and
// returns the segments it took out, for closing outside ringMu, so that one
// slow close does not stall the reads of every log sharing the caps. Two
// turns of the hand suffice: the first clears every reference bit it
// passes, so the second takes every idle segment it meets. Segments being
// read are passed over; if all of them are, the cap stays exceeded until
// a read ends.
func (c *ResourceCaps) evictLocked() []*capEntry {
	var victims []*capEntry
	for steps := 2 * c.ring.Len(); steps > 0 && c.open.Load() > int64(c.max); steps-- {
		el := c.hand
		if el == nil {
			el = c.ring.Front()
		}
		c.hand = el.Next()
		e := el.Value.(*capEntry)
		if e.used.Load() {
			e.used.Store(false)
			continue
		}
		// Uncount first, then look for a pin (see capEntry.counted).
		e.counted.Store(false)
		if e.pins.Load() != 0 {
			e.counted.Store(true)
			continue
		}
		c.unlinkLocked(e)
		victims = append(victims, e)
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
		c.ringMu.Lock()
		still := e.eligible.Load() && e.elem == nil && e.pins.Load() == 0
		c.ringMu.Unlock()
		if still {
			// Closing an idle descriptor loses nothing: the segment is
			// sealed and synced, and it reloads lazily on next use.
			_ = e.closer.CloseIdle()
		}
		e.closeMu.Unlock()
	}
}

// activateActive reopens the active segment for appending (the first write
// after a clean open) under the caps, which count it open from then on.
// appendMu must be held.
func (l *Log) activateActive() error {
	e := l.active
	l.caps.acquire(&e.capEntry)
	defer l.caps.release(&e.capEntry)
	return e.seg.Activate()
}

// appendActive appends b to the active segment under the caps: the
// segment is counted open (an append reopens one closed while idle) and
// marked used, and it is not closed while the append runs. appendMu must
// be held.
func (l *Log) appendActive(b record.Batch) (int64, error) {
	e := l.active
	l.caps.acquire(&e.capEntry)
	defer l.caps.release(&e.capEntry)
	return e.seg.Append(b)
}

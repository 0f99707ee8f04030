package index

import "github.com/foliolog/folio/vfs"

// table is what the offset and time indexes share above the core: entries
// of one fixed layout, read, searched and cut the same way. OffsetIndex and
// TimeIndex embed it and add what differs: their Append checks and the key
// each lookup searches by.
type table[E any] struct {
	c *core
	l *layout[E]
}

// layout describes one kind of entry.
type layout[E any] struct {
	size int
	// decode returns entry i of d for a segment with base offset base.
	decode func(d []byte, i int, base int64) E
	// offset returns entry i's offset, the key TruncateTo cuts by.
	offset func(d []byte, i int, base int64) int64
	// none is what lookups return when no entry qualifies.
	none func(base int64) E
	// sanity is the open-time check of the first and last entries.
	sanity sanityFunc
}

// openTable opens the index file at path with layout l; see OpenOffset.
func openTable[E any](fsys vfs.FS, path string, base int64, writable bool, opts *Options, l *layout[E]) (table[E], error) {
	c, err := openCore(fsys, path, base, writable, opts, l.size, l.sanity)
	if err != nil {
		return table[E]{}, err
	}
	return table[E]{c: c, l: l}, nil
}

// memTable returns an in-memory index with layout l holding entries, which
// add appends in order (with Append's checks); see NewOffsetInMemory.
func memTable[E any](name string, base int64, entries []E, opts *Options, l *layout[E], add func(table[E], E) error) (table[E], error) {
	c, err := newMemCore(name, base, opts, l.size, make([]byte, len(entries)*l.size))
	if err != nil {
		return table[E]{}, err
	}
	t := table[E]{c: c, l: l}
	for _, e := range entries {
		if err := add(t, e); err != nil {
			return table[E]{}, err
		}
	}
	return t, nil
}

func (x *table[E]) entryAt(d []byte, i int) E { return x.l.decode(d, i, x.c.base) }

func (x *table[E]) none() E { return x.l.none(x.c.base) }

// floor returns the entry with the largest key at or below target, or
// none; key reads entry i's key from d.
func (x *table[E]) floor(target int64, key func(d []byte, i int) int64) E {
	e := x.none()
	_ = x.c.read(func(d []byte, n int) {
		if i := floorSlot(n, x.c.warm, func(i int) int64 { return key(d, i) }, target); i >= 0 {
			e = x.entryAt(d, i)
		}
	})
	return e
}

// ceil returns the entry with the smallest key at or above target, and
// false when there is none.
func (x *table[E]) ceil(target int64, key func(d []byte, i int) int64) (E, bool) {
	e, ok := x.none(), false
	_ = x.c.read(func(d []byte, n int) {
		if i := ceilSlot(n, x.c.warm, func(i int) int64 { return key(d, i) }, target); i >= 0 {
			e, ok = x.entryAt(d, i), true
		}
	})
	return e, ok
}

func (x *table[E]) offsetKey(d []byte, i int) int64 { return x.l.offset(d, i, x.c.base) }

// entry returns entry i, or none outside [0, Entries()) and after Close.
func (x *table[E]) entry(i int) E {
	e := x.none()
	_ = x.c.read(func(d []byte, n int) {
		if i >= 0 && i < n {
			e = x.entryAt(d, i)
		}
	})
	return e
}

// lastEntry returns the newest entry, or none and false when the index is
// empty or closed.
func (x *table[E]) lastEntry() (E, bool) {
	e, ok := x.none(), false
	_ = x.c.read(func(d []byte, n int) {
		if n > 0 {
			e, ok = x.entryAt(d, n-1), true
		}
	})
	return e, ok
}

// Entries is the number of entries lookups see (0 after Close).
func (x *table[E]) Entries() int { return x.c.entries() }

// MaxEntries is how many entries the index can hold: MaxIndexBytes over
// the entry size while writable, Entries() once sealed (0 after Close).
func (x *table[E]) MaxEntries() int { return x.c.maxEntries() }

// Full reports whether an Append that adds an entry would fail with
// ErrFull (always true once sealed or closed): the segment rolls when an
// index is full.
func (x *table[E]) Full() bool { return x.c.full() }

// Writable reports whether the index accepts Append (not sealed, not
// closed).
func (x *table[E]) Writable() bool { return x.c.writable() }

// SizeBytes is the size of the entries, Entries() times the entry size:
// the file's size once sealed or closed. While writable the file may be up
// to one allocation step (AllocStepEntries) longer.
func (x *table[E]) SizeBytes() int64 { return x.c.sizeBytes() }

// BaseOffset is the segment's base offset the entries are relative to.
func (x *table[E]) BaseOffset() int64 { return x.c.base }

// Path is the index file's current path (an in-memory index's name).
func (x *table[E]) Path() string { return x.c.name() }

// TruncateTo drops every entry with an offset at or above offset, for a
// segment whose log is being cut there. It works writable or sealed; a
// sealed index's file shrinks with it (and stays sealed: call Reactivate to
// append again). Readers that looked at the dropped entries finish before
// the space is reused.
func (x *table[E]) TruncateTo(offset int64) error {
	return x.c.truncate(func(d []byte, n int) int {
		if i := ceilSlot(n, x.c.warm, func(i int) int64 { return x.offsetKey(d, i) }, offset); i >= 0 {
			return i
		}
		return n
	})
}

// Reset drops every entry, as before a rebuild from the log.
func (x *table[E]) Reset() error {
	return x.c.truncate(func([]byte, int) int { return 0 })
}

// Seal makes the index read-only when its segment rolls: it trims the file
// to its entries (giving back the allocation ahead of the writer), fsyncs
// it, remaps the entries read-only at that size and closes the file
// descriptor. Lookups continue throughout. Sealing a sealed index does
// nothing. If trimming or fsync fails the error is returned and the index
// is read-only anyway; its file may then fail the sanity check at the next
// open, and be rebuilt.
func (x *table[E]) Seal() error { return x.c.seal() }

// Reactivate makes a sealed index writable again, mapped at MaxIndexBytes
// (used when truncation makes a sealed segment the active one again). It
// reopens the file by its path. Reactivating a writable index does
// nothing.
func (x *table[E]) Reactivate() error { return x.c.reactivate() }

// Sync makes the appended entries durable (fsync; msync first outside
// Linux). It does not block Append. On a sealed index it does nothing:
// Seal already synced it.
func (x *table[E]) Sync() error { return x.c.sync() }

// Rename moves the index file (e.g. to its .deleted or .swap name); later
// reopens use the new path.
func (x *table[E]) Rename(newPath string) error { return x.c.rename(newPath) }

// Close waits for in-flight lookups, unmaps the index and, if writable,
// trims the file to its entries (without fsync: call Sync first for that).
// Lookups after Close answer as for an empty index; every other method
// returns ErrClosed, and so does a second Close.
func (x *table[E]) Close() error { return x.c.close() }

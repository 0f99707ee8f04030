package index

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"github.com/edsrzf/mmap-go"

	"github.com/foliolog/folio/errs"
	"github.com/foliolog/folio/vfs"
)

// core is the machinery the offset and time indexes share: a file of
// fixed-size entries, mapped at its capacity while writable and at its size
// while sealed, with disk allocated ahead of the writer.
type core struct {
	fs        vfs.FS
	base      int64
	entrySize int
	warm      int   // warm-section length in entries: warmBytes / entrySize
	maxBytes  int64 // Options.MaxIndexBytes rounded down to entrySize

	// pinned holds the current mapping; readers pin it without locks.
	pinned

	// writeMu is the appender's lock. It guards every change to the entries
	// and to the index's state: allocated, swaps of the mapping, and (with
	// fileMu) f, path and closed. Append holds it for one entry;
	// Seal, Reactivate, TruncateTo, Rename and Close for their whole run.
	// Readers never take it.
	writeMu   sync.Mutex
	allocated int64 // bytes of the file backed by allocated blocks (writable only)

	// fileMu guards the lifetime of the open file handle. Sync holds it
	// shared while it fsyncs, so Append (which needs only writeMu) goes on
	// during a flush; f, path and closed change only with writeMu and fileMu
	// both held exclusively, so either lock suffices to read them.
	// Lock order: writeMu before fileMu. Nobody waits for readers to drain
	// while holding fileMu.
	fileMu sync.RWMutex
	f      vfs.File // open while writable; nil while sealed or closed
	path   string
	closed bool

	// mem: the entries live in heap memory only (newMemCore), never in a
	// file: mappings hold heap slices (own false), growth reallocates
	// instead of allocating disk, and nothing is flushed.
	mem bool
}

// newMemCore returns the core of an empty in-memory index whose first
// entries go into buf (zeroed, a whole number of entries).
func newMemCore(name string, base int64, opts *Options, entrySize int, buf []byte) (*core, error) {
	o := opts.withDefaults()
	if err := o.validate(entrySize); err != nil {
		return nil, err
	}
	if base < 0 {
		return nil, fmt.Errorf("%w: %s: base offset %d is negative", ErrOutOfRange, name, base)
	}
	c := &core{
		fs:        vfs.Default, // never used: nothing is opened
		base:      base,
		entrySize: entrySize,
		warm:      warmBytes / entrySize,
		maxBytes:  o.MaxIndexBytes - o.MaxIndexBytes%int64(entrySize),
		path:      name,
		mem:       true,
	}
	capacity := c.maxBytes / int64(entrySize)
	m := newMapping(buf, true, capacity, 0)
	m.own = false
	c.allocated = int64(len(buf))
	c.cur.Store(m)
	return c, nil
}

// sanityFunc checks an index's first and last entries (equal slices when it
// holds one) in O(1); n is the number of entries.
type sanityFunc func(first, last []byte, n int64) error

func openCore(fsys vfs.FS, path string, base int64, writable bool, opts *Options, entrySize int, sanity sanityFunc) (*core, error) {
	o := opts.withDefaults()
	if err := o.validate(entrySize); err != nil {
		return nil, err
	}
	if base < 0 {
		return nil, fmt.Errorf("%w: %s: base offset %d is negative", ErrOutOfRange, path, base)
	}
	if fsys == nil {
		fsys = vfs.Default
	}
	c := &core{
		fs:        fsys,
		base:      base,
		entrySize: entrySize,
		warm:      warmBytes / entrySize,
		maxBytes:  o.MaxIndexBytes - o.MaxIndexBytes%int64(entrySize),
		path:      path,
	}
	flag := os.O_RDONLY
	if writable {
		flag = os.O_RDWR | os.O_CREATE
	}
	f, err := fsys.OpenFile(path, flag, 0o644)
	if err != nil {
		if pe, ok := errors.AsType[*os.PathError](err); ok && pe.Path == path {
			return nil, fmt.Errorf("index: %w", err) // it names the file already
		}
		return nil, fmt.Errorf("index: open %s: %w", path, err)
	}
	m, err := c.mapOpened(f, writable, sanity)
	if err != nil || !writable {
		// A sealed index keeps only its mapping, as Kafka does: no file
		// descriptor per sealed segment.
		if cerr := f.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("index: close %s: %w", path, cerr)
		}
		if err != nil {
			if m != nil {
				err = errors.Join(err, m.unmap())
			}
			return nil, err
		}
	} else {
		c.f = f
	}
	c.cur.Store(m)
	return c, nil
}

// mapOpened checks the opened file and maps it.
func (c *core) mapOpened(f vfs.File, writable bool, sanity sanityFunc) (*mapping, error) {
	size, err := c.checkFile(f, sanity)
	if err != nil {
		return nil, err
	}
	n := size / int64(c.entrySize)
	if !writable {
		data, err := c.mapFile(f, size, false)
		if err != nil {
			return nil, err
		}
		return newMapping(data, false, n, n), nil
	}
	// An index written under a larger MaxIndexBytes keeps all its entries;
	// it is simply full.
	mapLen := max(c.maxBytes, size)
	data, err := c.mapFile(f, mapLen, true)
	if err != nil {
		return nil, err
	}
	c.allocated = size
	return newMapping(data, true, mapLen/int64(c.entrySize), n), nil
}

// checkFile is the O(1) open-time sanity check: the size is whole entries
// and the first and last entries pass sanity. It reads them with ReadAt, so
// a bad file is never mapped.
//
// A file that shrinks between the size read and the last entry's read
// (a reader opening a live writer's index as the writer seals and trims
// it) is checked again at its new size; one that keeps shrinking is
// corrupt, which its users answer by rebuilding it.
func (c *core) checkFile(f vfs.File, sanity sanityFunc) (int64, error) {
	for range 3 {
		size, err := c.checkFileOnce(f, sanity)
		if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
			return size, err
		}
	}
	return 0, errs.Corruptf(ErrCorrupt, c.path, -1, "it kept shrinking while its last entry was read")
}

func (c *core) checkFileOnce(f vfs.File, sanity sanityFunc) (int64, error) {
	st, err := f.Stat()
	if err != nil {
		return 0, fmt.Errorf("index: stat %s: %w", c.path, err)
	}
	size := st.Size()
	es := int64(c.entrySize)
	if size%es != 0 {
		return 0, errs.Corruptf(ErrCorrupt, c.path, -1, "size %d is not a multiple of the %d-byte entry", size, es)
	}
	if size > maxFileBytes {
		return 0, errs.Corruptf(ErrCorrupt, c.path, -1, "size %d is above the %d bytes an index can address", size, int64(maxFileBytes))
	}
	n := size / es
	if n == 0 {
		return 0, nil
	}
	buf := make([]byte, 2*es)
	first, last := buf[:es], buf[es:]
	if _, err := f.ReadAt(first, 0); err != nil {
		return 0, fmt.Errorf("index: read %s at 0: %w", c.path, err)
	}
	if _, err := f.ReadAt(last, size-es); err != nil {
		return 0, fmt.Errorf("index: read %s at %d: %w", c.path, size-es, err)
	}
	if err := sanity(first, last, n); err != nil {
		return 0, errs.Corruptf(ErrCorrupt, c.path, -1, "%d entries: %w", n, err)
	}
	return size, nil
}

// maxFileBytes bounds an index file so that entry arithmetic stays in int on
// every platform and a mapping length fits mmap.
const maxFileBytes = 1<<31 - 1

// mapFile maps the first length bytes of f; length 0 maps nothing.
func (c *core) mapFile(f vfs.File, length int64, writable bool) (mmap.MMap, error) {
	if length == 0 {
		return nil, nil // mmap refuses zero-length mappings
	}
	osf := f.OS()
	if osf == nil {
		return nil, fmt.Errorf("index: %s: the file system gives no OS file to map", c.path)
	}
	prot := mmap.RDONLY
	if writable {
		prot = mmap.RDWR
	}
	data, err := mmap.MapRegion(osf, int(length), prot, 0, 0)
	if err != nil {
		return nil, fmt.Errorf("index: mmap %s (%d bytes): %w", c.path, length, err)
	}
	return data, nil
}

// name is the current path, for errors raised outside writeMu.
func (c *core) name() string {
	c.fileMu.RLock()
	defer c.fileMu.RUnlock()
	return c.path
}

// faultsCaught counts memory faults turned into errors, process-wide. The
// tests check it stays zero where the swap protocol should make faults
// impossible (a lookup hiding a fault would otherwise look like an empty
// index).
var faultsCaught atomic.Int64

// endFaultGuard is deferred right after debug.SetPanicOnFault(true) around
// code that touches m's memory. A fault inside m (the file was shrunk by
// someone else, or the disk returned an I/O error for a mapped page)
// becomes an error wrapping ErrCorrupt; any other panic, including a fault
// elsewhere, goes on.
func (c *core) endFaultGuard(old bool, m *mapping, err *error) {
	debug.SetPanicOnFault(old)
	r := recover()
	if r == nil {
		return
	}
	if f, ok := r.(interface{ Addr() uintptr }); ok && m.data != nil {
		start := uintptr(unsafe.Pointer(unsafe.SliceData(m.data)))
		if a := f.Addr(); a >= start && a < start+uintptr(len(m.data)) {
			faultsCaught.Add(1)
			*err = errs.Corruptf(ErrCorrupt, c.name(), int64(a-start), "memory fault reading the mapping (file shrunk underneath, or I/O error)")
			return
		}
	}
	panic(r)
}

// read pins the current mapping and runs fn on its bytes and entry count.
// After Close fn sees no entries. The bytes are valid only during fn.
func (c *core) read(fn func(data []byte, n int)) (err error) {
	m := c.acquire()
	defer m.release()
	defer c.endFaultGuard(debug.SetPanicOnFault(true), m, &err)
	fn(m.data, int(m.n.Load()))
	return nil
}

// appendEntry adds one entry. check sees the last entry (nil when empty)
// and may refuse the entry or ask to skip it; put encodes it into dst.
func (c *core) appendEntry(check func(last []byte) (skip bool, err error), put func(dst []byte)) error {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	if c.closed {
		return fmt.Errorf("%w: %s", ErrClosed, c.path)
	}
	m := c.cur.Load()
	if !m.writable {
		return fmt.Errorf("%w: %s", ErrReadOnly, c.path)
	}
	return c.appendLocked(m, check, put)
}

func (c *core) appendLocked(m *mapping, check func(last []byte) (bool, error), put func(dst []byte)) (err error) {
	defer c.endFaultGuard(debug.SetPanicOnFault(true), m, &err)
	es := int64(c.entrySize)
	n := m.n.Load()
	var last []byte
	if n > 0 {
		last = m.data[(n-1)*es : n*es]
	}
	skip, err := check(last)
	if err != nil {
		return fmt.Errorf("%w (%s, entry %d)", err, c.path, n)
	}
	if skip {
		return nil
	}
	if n >= m.capacity {
		return fmt.Errorf("%w: %s: %d entries", ErrFull, c.path, n)
	}
	end := (n + 1) * es
	if end > c.allocated {
		if c.mem {
			m = c.growMemLocked(m)
		} else if err := c.growLocked(m); err != nil {
			return err
		}
	}
	put(m.data[n*es : end])
	m.n.Store(n + 1)
	return nil
}

// growLocked allocates the next AllocStepEntries entries of disk (fewer at
// the end of the mapping). fallocate both reserves the blocks and extends
// the file, so the pages the writer is about to touch are backed: a full
// disk is an error here instead of a SIGBUS on the store.
func (c *core) growLocked(m *mapping) error {
	es := int64(c.entrySize)
	step := min(AllocStepEntries*es, m.capacity*es-c.allocated)
	if err := c.f.Allocate(c.allocated, step); err != nil {
		if errors.Is(err, vfs.ErrNoSpace) || errors.Is(err, syscall.ENOSPC) {
			return fmt.Errorf("%w: %s: allocating %d bytes at %d: %w", ErrNoSpace, c.path, step, c.allocated, err)
		}
		return fmt.Errorf("index: %s: allocating %d bytes at %d: %w", c.path, step, c.allocated, err)
	}
	c.allocated += step
	return nil
}

// growMemLocked gives an in-memory index room for more entries: it
// publishes a copy of m's entries in a buffer twice as large (up to the
// capacity) and returns it. Readers of m finish on the old buffer, which
// the garbage collector takes once they are gone.
func (c *core) growMemLocked(m *mapping) *mapping {
	es := int64(c.entrySize)
	size := min(max(2*c.allocated, memStepEntries*es), m.capacity*es)
	data := make([]byte, size)
	n := m.n.Load()
	copy(data, m.data[:n*es])
	next := newMapping(data, true, m.capacity, n)
	next.own = false
	c.swap(next)
	c.allocated = size
	return next
}

// flushRange is the part of m that holds entries, widened to whole pages
// (msync wants a page-aligned start; the mapping starts on one).
func (c *core) flushRange(m *mapping) []byte {
	end := m.n.Load() * int64(c.entrySize)
	page := int64(os.Getpagesize())
	end = min((end+page-1)/page*page, int64(len(m.data)))
	return m.data[:end]
}

// seal trims the file to its entries, makes them durable and remaps them
// read-only; see OffsetIndex.Seal.
func (c *core) seal() error {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	if c.closed {
		return fmt.Errorf("%w: %s", ErrClosed, c.path)
	}
	m := c.cur.Load()
	if !m.writable {
		return nil
	}
	n := m.n.Load()
	size := n * int64(c.entrySize)
	if c.mem {
		next := newMapping(m.data[:size:size], false, n, n)
		next.own = false
		c.swap(next)
		c.allocated = 0
		return nil
	}
	// Map the entries read-only before the file shrinks: the new mapping
	// ends at the new size, so truncating never cuts a page it covers.
	data, err := c.mapFile(c.f, size, false)
	if err != nil {
		return err
	}
	if err := flushMapping(c.flushRange(m)); err != nil {
		if data != nil {
			_ = data.Unmap() // never published: nobody reads it
		}
		return fmt.Errorf("index: %s: msync: %w", c.path, err)
	}
	old := c.swap(newMapping(data, false, n, n))
	errs := []error{old.unmap()}

	c.fileMu.Lock()
	defer c.fileMu.Unlock()
	if err := c.f.Truncate(size); err != nil {
		errs = append(errs, fmt.Errorf("index: %s: trim to %d bytes: %w", c.path, size, err))
	} else if err := c.f.Sync(); err != nil {
		errs = append(errs, fmt.Errorf("index: %s: fsync: %w", c.path, err))
	}
	errs = append(errs, c.f.Close())
	c.f = nil
	c.allocated = 0
	return errors.Join(errs...)
}

// reactivate maps a sealed index writable again at MaxIndexBytes.
func (c *core) reactivate() error {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	if c.closed {
		return fmt.Errorf("%w: %s", ErrClosed, c.path)
	}
	m := c.cur.Load()
	if m.writable {
		return nil
	}
	if c.mem {
		return fmt.Errorf("%w: %s: reactivate", ErrInMemory, c.path)
	}
	f, err := c.fs.OpenFile(c.path, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("index: reopen %s: %w", c.path, err)
	}
	next, err := c.remapWritable(f, m.n.Load())
	if err != nil {
		return errors.Join(err, f.Close())
	}
	old := c.swap(next)
	uerr := old.unmap()
	c.fileMu.Lock()
	c.f = f
	c.fileMu.Unlock()
	return uerr
}

func (c *core) remapWritable(f vfs.File, n int64) (*mapping, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("index: stat %s: %w", c.path, err)
	}
	size, es := st.Size(), int64(c.entrySize)
	// A sealed file is exactly its entries, or longer if its trim failed;
	// shorter means someone else cut it.
	if size%es != 0 || size < n*es || size > maxFileBytes {
		return nil, errs.Corruptf(ErrCorrupt, c.path, -1, "size %d for %d entries of %d bytes", size, n, es)
	}
	mapLen := max(c.maxBytes, size)
	data, err := c.mapFile(f, mapLen, true)
	if err != nil {
		return nil, err
	}
	c.allocated = size
	return newMapping(data, true, mapLen/es, n), nil
}

// truncate keeps the first entries that keep() reports (given the pinned
// bytes and count) and drops the rest.
func (c *core) truncate(keep func(data []byte, n int) int) (err error) {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	if c.closed {
		return fmt.Errorf("%w: %s", ErrClosed, c.path)
	}
	m := c.cur.Load()
	n := m.n.Load()
	k := n
	if err := func() (err error) {
		defer c.endFaultGuard(debug.SetPanicOnFault(true), m, &err)
		k = int64(keep(m.data, int(n)))
		return nil
	}(); err != nil {
		return err
	}
	if k >= n {
		return nil
	}
	es := int64(c.entrySize)
	if m.writable {
		// Same memory, smaller count. Readers that loaded the old count
		// hold m; once they are gone the dropped entries can be zeroed and
		// later overwritten without a reader seeing a torn entry.
		next := newMapping(m.data, true, m.capacity, k)
		next.own, m.own = m.own, false
		c.swap(next)
		// Zeroed, a crash leaves the tail as zeros, which the open-time
		// check rejects, rather than stale entries past the log's end.
		return c.zero(next, k*es, n*es)
	}
	if c.mem {
		next := newMapping(m.data[:k*es:k*es], false, k, k)
		next.own = false
		c.swap(next)
		return nil
	}
	// Sealed: the file must shrink to stay exactly its entries.
	f, err := c.fs.OpenFile(c.path, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("index: reopen %s: %w", c.path, err)
	}
	data, err := c.mapFile(f, k*es, false)
	if err != nil {
		return errors.Join(err, f.Close())
	}
	old := c.swap(newMapping(data, false, k, k))
	errs := []error{old.unmap()}
	if err := f.Truncate(k * es); err != nil {
		errs = append(errs, fmt.Errorf("index: %s: truncate to %d bytes: %w", c.path, k*es, err))
	} else if err := f.Sync(); err != nil {
		errs = append(errs, fmt.Errorf("index: %s: fsync: %w", c.path, err))
	}
	errs = append(errs, f.Close())
	return errors.Join(errs...)
}

func (c *core) zero(m *mapping, from, to int64) (err error) {
	defer c.endFaultGuard(debug.SetPanicOnFault(true), m, &err)
	clear(m.data[from:to])
	return nil
}

// sync makes the entries durable; see OffsetIndex.Sync.
func (c *core) sync() error {
	c.fileMu.RLock()
	defer c.fileMu.RUnlock()
	if c.closed {
		return fmt.Errorf("%w: %s", ErrClosed, c.path)
	}
	if c.f == nil {
		return nil // sealed: Seal made it durable, nothing has changed since
	}
	m := c.acquire()
	err := flushMapping(c.flushRange(m))
	m.release()
	if err != nil {
		return fmt.Errorf("index: %s: msync: %w", c.path, err)
	}
	if err := c.f.Sync(); err != nil {
		return fmt.Errorf("index: %s: fsync: %w", c.path, err)
	}
	return nil
}

// rename moves the file; the open handle (if any) follows it, and later
// reopens (Reactivate, TruncateTo on a sealed index) use the new path.
func (c *core) rename(newPath string) error {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	if c.closed {
		return fmt.Errorf("%w: %s", ErrClosed, c.path)
	}
	if c.mem {
		return fmt.Errorf("%w: %s: rename", ErrInMemory, c.path)
	}
	if err := c.fs.Rename(c.path, newPath); err != nil {
		return fmt.Errorf("index: rename %s to %s: %w", c.path, newPath, err)
	}
	c.fileMu.Lock()
	c.path = newPath
	c.fileMu.Unlock()
	return nil
}

// close unmaps the index once its readers are gone and, if writable, trims
// the file to its entries; see OffsetIndex.Close.
func (c *core) close() error {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	if c.closed {
		return fmt.Errorf("%w: %s", ErrClosed, c.path)
	}
	m := c.cur.Load()
	var errs []error
	if m.writable && !c.mem {
		if err := flushMapping(c.flushRange(m)); err != nil {
			errs = append(errs, fmt.Errorf("index: %s: msync: %w", c.path, err))
		}
	}
	old := c.swap(newMapping(nil, false, 0, 0)) // later lookups: no entries
	errs = append(errs, old.unmap())

	c.fileMu.Lock()
	defer c.fileMu.Unlock()
	if c.f != nil {
		size := old.n.Load() * int64(c.entrySize)
		if err := c.f.Truncate(size); err != nil {
			errs = append(errs, fmt.Errorf("index: %s: trim to %d bytes: %w", c.path, size, err))
		}
		errs = append(errs, c.f.Close())
		c.f = nil
	}
	c.closed = true
	return errors.Join(errs...)
}

func (c *core) entries() int { return int(c.cur.Load().n.Load()) }

func (c *core) maxEntries() int { return int(c.cur.Load().capacity) }

func (c *core) full() bool {
	m := c.cur.Load()
	return m.n.Load() >= m.capacity
}

func (c *core) sizeBytes() int64 { return c.cur.Load().n.Load() * int64(c.entrySize) }

func (c *core) writable() bool { return c.cur.Load().writable }

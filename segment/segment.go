package segment

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/foliolog/folio/errs"
	"github.com/foliolog/folio/index"
	"github.com/foliolog/folio/readpath"
	"github.com/foliolog/folio/vfs"
)

// Segment is one log segment: a .log of RecordBatch v2 batches with
// ascending offsets, and its sparse .index and .timeindex. One goroutine
// appends (or calls the other writing methods) at a time; any number read
// concurrently with it. See the package documentation for the model.
type Segment struct {
	fs       vfs.FS
	dir      string
	base     int64
	opts     Options
	logPath  string
	offPath  string
	timePath string

	// tip is the published append state. The appender stores a new one
	// after the batch's bytes are written and before it indexes the batch;
	// readers load it after their index lookups, so every index entry they
	// saw describes bytes below tip.size.
	tip      atomic.Pointer[tip]
	rebuilds atomic.Int64
	created  atomic.Int64 // UnixNano of Create/Open, or of a truncation to empty
	sealed   atomic.Bool  // written with appendMu held
	// ro and follow are set by OpenReadOnly (see readonly.go): the segment
	// never writes, and a followed one tracks a writer's active segment.
	ro, follow bool
	failed     atomic.Pointer[error]
	// unsynced: a batch was written since the last fsync of the .log. Sync
	// of an active segment closed idle (CloseIdle) with it set opens the
	// .log to fsync it: there is no handle to fsync through.
	unsynced atomic.Bool

	// appendMu serialises the writing methods (Append, Seal, Activate,
	// TruncateTo, Recover, Close, Delete, CloseIdle and index repairs) and
	// guards sinceIndex. Readers take it only to rebuild an index they
	// found wrong. Lock order: appendMu, then resMu.
	appendMu   sync.Mutex
	sinceIndex int64 // bytes appended since the last index entry (Kafka's bytesSinceLastIndexEntry)

	// resMu guards the open files (files), deleted and inodeSources;
	// closed is stored with both locks held and may be read with either or
	// none. Readers hold it shared for the length of one lookup or read; methods
	// that replace or close files hold it exclusively (with appendMu, except
	// for a reader's lazy load of a sealed segment). The active segment's
	// files are never nil and never replaced without appendMu, so Append
	// reads them holding appendMu alone.
	resMu   sync.RWMutex
	files   *files
	closed  atomic.Bool
	deleted bool
	// inodeSources are the sources (open, or closed with views still
	// unreleased) that read the .log inode now at logPath. A truncation in
	// place is safe only when none but drained ones remain.
	inodeSources []*sourceFile
}

// tip is an immutable snapshot of the append state.
type tip struct {
	size  int64 // bytes of whole batches in the .log
	next  int64 // last offset + 1; the base offset when empty
	maxTs int64 // largest batch MaxTimestamp, index.NoTimestamp when none
	// maxTsOffset is the last offset of the first batch holding maxTs
	// (Kafka's offsetOfMaxTimestampSoFar), -1 when none.
	maxTsOffset int64
}

// files are a loaded segment's open resources.
type files struct {
	log  vfs.File        // read-write handle while active; nil while sealed
	read *sourceFile     // the file src owns; header scans of a sealed segment use it
	src  readpath.Source // nil for an empty sealed .log
	hdr  *headerMap      // header scans' view of src's mapping; nil unless ReadPath is Mmap
	off  *index.OffsetIndex
	time *index.TimeIndex
	gen  uint64      // bumped by every rebuild of off and time
	id   os.FileInfo // read-only segments: the .log loaded, to notice its replacement
	// checked is how far reads from the start of a sealed segment have
	// checked the index entries they passed over (see checkEntries); nil
	// when nothing is left to check: indexes this process wrote or
	// rebuilt, or checked to the end.
	checked atomic.Pointer[indexCheck]
}

// headerMap is a view of a Mmap Source's whole mapping that readers'
// header scans read from instead of calling pread (see scanner). It is
// taken by the first scan that wants it (so a loaded segment that is never
// read maps nothing) and released with the Source, before the Source
// closes: it holds the file's last reference no longer than the Source.
type headerMap struct {
	src  readpath.Source
	size int64 // bytes the view covers: the active segment's map size, a sealed one's file size
	once sync.Once
	view *readpath.View
	data []byte // nil when the view could not be taken: scans then use pread
}

// bytes returns the mapping from position 0, or nil. Only the bytes below
// the published size may be touched, inside readpath.Guard.
func (m *headerMap) bytes() []byte {
	m.once.Do(func() {
		if m.size <= 0 || m.size > MaxSegmentBytesLimit {
			return
		}
		v, err := m.src.View(0, int(m.size))
		if err != nil {
			// Out of address space or map areas: scans fall back to pread,
			// and the read itself reports the failure if it recurs.
			return
		}
		b, err := v.Bytes()
		if err != nil {
			v.Release()
			return
		}
		m.view, m.data = v, b
	})
	return m.data
}

// release gives the view back. resMu must be held exclusively, so no scan
// is running or can start on m.
func (m *headerMap) release() {
	if m.view != nil {
		m.view.Release()
		m.view, m.data = nil, nil
	}
}

// sourceFile is the file handed to a readpath.Source. The Source closes it
// when it is closed and its last view released, so Close marks the moment
// no view of this descriptor's inode is left.
type sourceFile struct {
	vfs.File
	once    sync.Once
	drainCh chan struct{}
}

func newSourceFile(f vfs.File) *sourceFile {
	return &sourceFile{File: f, drainCh: make(chan struct{})}
}

func (f *sourceFile) Close() error {
	err := f.File.Close()
	f.once.Do(func() { close(f.drainCh) })
	return err
}

func (f *sourceFile) drained() bool {
	select {
	case <-f.drainCh:
		return true
	default:
		return false
	}
}

// Create makes a new, empty, active segment with base offset base in dir
// (which must exist): it creates the .log (ErrExists if present), replaces
// any index files left from an earlier segment at that offset, and fsyncs
// the directory so that the new names survive a power cut. A nil fsys
// means vfs.Default. If Create fails it removes what it created.
func Create(fsys vfs.FS, dir string, base int64, opts *Options) (*Segment, error) {
	s, err := newSegment(fsys, dir, base, opts)
	if err != nil {
		return nil, err
	}
	lf, err := s.fs.OpenFile(s.logPath, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("%w: %s", ErrExists, s.logPath)
		}
		return nil, openError("create", s.logPath, err)
	}
	f := &files{log: lf}
	fail := func(err error) (*Segment, error) {
		// Leave nothing behind that would make a retry fail with ErrExists.
		errs := []error{err, s.closeFiles(f)}
		for _, p := range []string{s.logPath, s.offPath, s.timePath} {
			if rerr := s.fs.Remove(p); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
				errs = append(errs, fmt.Errorf("segment: remove %s: %w", p, rerr))
			}
		}
		return nil, errors.Join(errs...)
	}
	if err := s.freshIndexes(f); err != nil {
		return fail(err)
	}
	if err := s.openSource(f, true); err != nil {
		return fail(err)
	}
	if err := s.fs.SyncDir(s.dir); err != nil {
		return fail(fmt.Errorf("segment: sync dir %s: %w", s.dir, err))
	}
	s.files = f
	s.tip.Store(&tip{next: base, maxTs: index.NoTimestamp, maxTsOffset: -1})
	return s, nil
}

// Open returns the existing segment with base offset base in dir without
// touching the disk: its files are opened, and its indexes checked, on
// first use. The segment is sealed (read-only) until Activate; Recover
// first if it may hold a torn or corrupt tail. A nil fsys means
// vfs.Default. Open fails only on bad arguments.
func Open(fsys vfs.FS, dir string, base int64, opts *Options) (*Segment, error) {
	s, err := newSegment(fsys, dir, base, opts)
	if err != nil {
		return nil, err
	}
	s.sealed.Store(true)
	return s, nil
}

func newSegment(fsys vfs.FS, dir string, base int64, opts *Options) (*Segment, error) {
	o, err := opts.resolve()
	if err != nil {
		return nil, err
	}
	if base < 0 {
		return nil, fmt.Errorf("segment: base offset %d is negative", base)
	}
	if fsys == nil {
		fsys = vfs.Default
	}
	s := &Segment{
		fs:       fsys,
		dir:      filepath.Clean(dir),
		base:     base,
		opts:     o,
		logPath:  LogPath(dir, base),
		offPath:  IndexPath(dir, base),
		timePath: TimeIndexPath(dir, base),
	}
	s.created.Store(time.Now().UnixNano())
	return s, nil
}

// BaseOffset is the segment's first possible offset, fixed by its name.
func (s *Segment) BaseOffset() int64 { return s.base }

// Dir is the directory holding the segment's files.
func (s *Segment) Dir() string { return s.dir }

// Created is when this process created or opened the segment (or truncated
// it to empty), Kafka's LogSegment.created; a roll by age should prefer the
// first batch's timestamp when there is one.
func (s *Segment) Created() time.Time { return time.Unix(0, s.created.Load()) }

// Sealed reports whether the segment is read-only: after Seal, and from
// Open until Activate.
func (s *Segment) Sealed() bool { return s.sealed.Load() }

// IndexRebuilds counts how often this segment rebuilt its indexes from the
// .log because one was missing or failed a check, at load or in use.
// Recover's rebuild, which is unconditional, is not counted.
func (s *Segment) IndexRebuilds() int64 { return s.rebuilds.Load() }

// Loaded reports whether the segment holds open files and mappings; the
// log's resource caps count these and call CloseIdle on sealed segments.
func (s *Segment) Loaded() bool {
	s.resMu.RLock()
	defer s.resMu.RUnlock()
	return s.files != nil
}

// NextOffset is the offset the next batch may start at: the last offset
// plus one, or the base offset when the segment is empty. It loads a
// sealed segment.
func (s *Segment) NextOffset() (int64, error) {
	t, err := s.loadedTip()
	if err != nil {
		return 0, err
	}
	return t.next, nil
}

// Size is the size of the .log's whole batches in bytes. It loads a sealed
// segment.
func (s *Segment) Size() (int64, error) {
	t, err := s.loadedTip()
	if err != nil {
		return 0, err
	}
	return t.size, nil
}

// MaxTimestamp is the largest batch MaxTimestamp in the segment, or
// index.NoTimestamp (-1) when there is none; retention by time uses it. It
// loads a sealed segment. For a sealed segment it comes from the time
// index's last entry and the batches after the last offset-index entry, as
// in Kafka; see the package documentation's caveats.
func (s *Segment) MaxTimestamp() (int64, error) {
	t, err := s.loadedTip()
	if err != nil {
		return 0, err
	}
	return t.maxTs, nil
}

func (s *Segment) loadedTip() (*tip, error) {
	s.resMu.RLock()
	if s.files == nil && !s.sealed.Load() && !s.closed.Load() {
		// An active segment closed idle keeps its append state in memory:
		// asking for it opens nothing.
		if t := s.tip.Load(); t != nil {
			s.resMu.RUnlock()
			return t, nil
		}
	}
	s.resMu.RUnlock()
	if _, err := s.acquire(); err != nil {
		return nil, err
	}
	defer s.resMu.RUnlock()
	return s.tip.Load(), nil
}

// acquire returns the loaded files with resMu held shared, loading a sealed
// segment first. The caller releases resMu.RUnlock unless err != nil.
func (s *Segment) acquire() (*files, error) {
	for {
		s.resMu.RLock()
		if s.closed.Load() {
			s.resMu.RUnlock()
			return nil, fmt.Errorf("%w: %s", ErrClosed, s.logPath)
		}
		if f := s.files; f != nil {
			return f, nil
		}
		s.resMu.RUnlock()

		var err error
		if s.sealed.Load() || s.ro {
			s.resMu.Lock()
			err = s.loadLocked()
			s.resMu.Unlock()
		} else {
			// An active segment closed idle: reopening it for writing
			// needs the append lock, which comes first.
			s.appendMu.Lock()
			s.resMu.Lock()
			err = s.reloadLocked()
			s.resMu.Unlock()
			s.appendMu.Unlock()
		}
		if err != nil {
			return nil, err
		}
	}
}

// reloadLocked gives the segment its files back if it has none: a sealed
// one loads them read-only, an active one that CloseIdle closed reopens
// for writing the way Activate does after a clean open, and keeps the
// append state it had in memory (the reopened files must agree with it).
// appendMu and resMu must be held exclusively.
func (s *Segment) reloadLocked() error {
	if s.files != nil || s.closed.Load() || s.sealed.Load() || s.ro || s.failure() != nil {
		return s.loadLocked()
	}
	t, since := s.tip.Load(), s.sinceIndex
	if err := s.activateLocked(); err != nil {
		if f := s.files; f != nil && f.log == nil {
			// Loaded but not reopened for writing: give the read-only
			// files back, so that the segment stays closed idle (Append
			// needs a write handle) and a later use retries.
			err = errors.Join(err, s.closeFiles(f))
			s.files = nil
		}
		return err
	}
	if nt := s.tip.Load(); nt.size != t.size || nt.next != t.next {
		// The .log changed while nothing of this process held it open.
		return s.fail(errs.Corruptf(ErrCorrupt, s.logPath, t.size,
			"reopened with %d bytes up to offset %d, closed idle with %d bytes up to offset %d", nt.size, nt.next, t.size, t.next))
	}
	s.tip.Store(t)
	s.sinceIndex = since
	return nil
}

// loadLocked opens a sealed segment's files: the .log for reading, and the
// indexes read-only after their sanity check, rebuilding any that fails it
// or whose last entries do not match the log. resMu must be held
// exclusively.
func (s *Segment) loadLocked() error {
	if s.closed.Load() {
		return fmt.Errorf("%w: %s", ErrClosed, s.logPath)
	}
	if s.files != nil {
		return nil
	}
	if s.ro {
		return s.loadReadOnlyLocked()
	}
	f := &files{}
	if err := s.openSource(f, false); err != nil {
		return err
	}
	size, err := s.fileSize(f.scanFile())
	if err != nil {
		return errors.Join(err, s.closeFiles(f))
	}
	t, err := s.openIndexes(f, size, false)
	if err != nil {
		return errors.Join(err, s.closeFiles(f))
	}
	if f.gen == 0 {
		// Indexes from the disk that passed the open's O(1) check and
		// matched the log at their last entries: the entries before
		// those are checked by the reads that walk the segment.
		f.checked.Store(&indexCheck{last: s.base - 1})
	}
	s.files = f
	s.tip.Store(t)
	return nil
}

// openIndexes opens both indexes of f (writable or read-only) and derives
// the tip of a .log of size bytes from them; indexes that are missing, fail
// their sanity check, or whose last entries do not match the log are
// rebuilt from the log (and counted in IndexRebuilds): on disk, or in
// memory for a segment opened by OpenReadOnly, which never writes.
func (s *Segment) openIndexes(f *files, size int64, writable bool) (*tip, error) {
	c := s.pinned(f, &tip{size: size})
	defer c.free()
	var err error
	f.off, err = index.OpenOffset(s.fs, s.offPath, s.base, writable, s.indexOpts())
	if err == nil {
		f.time, err = index.OpenTime(s.fs, s.timePath, s.base, writable, s.indexOpts())
	}
	if err == nil {
		t, rerr := c.restore(false)
		if rerr == nil {
			return t, nil
		}
		if !errors.Is(rerr, errStaleIndex) {
			return nil, rerr
		}
	} else if !errors.Is(err, index.ErrCorrupt) && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	s.rebuilds.Add(1)
	var x *indexer
	if s.ro {
		x, err = s.rebuildInMemory(f, c.sc)
	} else {
		x, err = s.rebuildIndexes(f, c.sc, !writable)
	}
	if err != nil {
		return nil, err
	}
	return &x.t, nil
}

// scanFile is the handle header scans read through: the write handle of the
// active segment, else the file the Source owns (open until the Source is
// closed, which happens only with resMu held exclusively).
func (f *files) scanFile() vfs.File {
	if f.log != nil {
		return f.log
	}
	if f.read != nil {
		return f.read.File
	}
	return nil
}

func (s *Segment) indexOpts() *index.Options {
	return &index.Options{MaxIndexBytes: s.opts.MaxIndexBytes}
}

func (s *Segment) fileSize(f vfs.File) (int64, error) {
	if f == nil {
		// An empty sealed .log is not kept open; stat it by name.
		fi, err := s.fs.Stat(s.logPath)
		if err != nil {
			return 0, fmt.Errorf("segment: stat %s: %w", s.logPath, err)
		}
		return fi.Size(), nil
	}
	fi, err := f.Stat()
	if err != nil {
		return 0, fmt.Errorf("segment: stat %s: %w", s.logPath, err)
	}
	if fi.Size() > MaxSegmentBytesLimit {
		return 0, errs.Corruptf(ErrCorrupt, s.logPath, -1, "%d bytes, above the %d a segment can index", fi.Size(), MaxSegmentBytesLimit)
	}
	return fi.Size(), nil
}

// openSource opens the .log for reading and puts a Source on it: mapped at
// MaxSegmentBytes for the active segment so that the mapping covers it as
// it grows, at the file's size for a sealed one. A sealed empty .log gets
// no Source (nothing can be read from it) and keeps no descriptor.
func (s *Segment) openSource(f *files, active bool) error {
	rf, err := s.fs.OpenFile(s.logPath, os.O_RDONLY, 0)
	if err != nil {
		return openError("open", s.logPath, err)
	}
	mapSize := int64(0) // the file's size at the first view
	hdrSize := int64(0)
	if active {
		size, err := s.fileSize(rf)
		if err != nil {
			return errors.Join(err, rf.Close())
		}
		mapSize = max(s.opts.MaxSegmentBytes, size)
		hdrSize = mapSize
	} else {
		fi, err := rf.Stat()
		if err != nil {
			return errors.Join(fmt.Errorf("segment: stat %s: %w", s.logPath, err), rf.Close())
		}
		if fi.Size() == 0 {
			return rf.Close()
		}
		hdrSize = fi.Size()
	}
	sf := newSourceFile(rf)
	src, err := readpath.Open(s.opts.ReadPath, sf, mapSize)
	if err != nil {
		return errors.Join(fmt.Errorf("segment: %s: %w", s.logPath, err), rf.Close())
	}
	f.read, f.src = sf, src
	if s.opts.ReadPath == readpath.Mmap {
		f.hdr = &headerMap{src: src, size: hdrSize}
	}
	s.pruneSources()
	s.inodeSources = append(s.inodeSources, sf)
	return nil
}

// pruneSources forgets the sources whose last view is released, and
// reports whether any other remains.
func (s *Segment) pruneSources() (live bool) {
	kept := s.inodeSources[:0]
	for _, sf := range s.inodeSources {
		if !sf.drained() {
			kept = append(kept, sf)
		}
	}
	clear(s.inodeSources[len(kept):])
	s.inodeSources = kept
	return len(kept) > 0
}

// closeSource closes f's Source. Views already handed out stay valid; the
// descriptor closes with the last of them.
func (s *Segment) closeSource(f *files) error {
	if f.src == nil {
		return nil
	}
	if f.hdr != nil {
		f.hdr.release()
		f.hdr = nil
	}
	err := f.src.Close()
	f.src, f.read = nil, nil
	if err != nil {
		return fmt.Errorf("segment: close reader of %s: %w", s.logPath, err)
	}
	return nil
}

// dropFilesLocked handles a failed rebuild of f's indexes (err): if it got
// as far as closing them, f can no longer serve lookups, so it is closed
// and forgotten. Readers then load the segment afresh, and an active
// segment stops taking writes (ErrFailed) until Recover. If the indexes
// are still open (the rebuild failed before touching them), f stays.
// appendMu and resMu must be held exclusively.
func (s *Segment) dropFilesLocked(f *files, err error) error {
	if f.off != nil && f.time != nil {
		return err
	}
	if !s.sealed.Load() && !errors.Is(err, ErrFailed) {
		err = s.fail(err)
	}
	cerr := s.closeFiles(f)
	if s.files == f {
		s.files = nil
	}
	return errors.Join(err, cerr)
}

// closeFiles closes everything f holds. Views stay valid.
func (s *Segment) closeFiles(f *files) error {
	var errs []error
	errs = append(errs, s.closeSource(f))
	if f.off != nil {
		errs = append(errs, f.off.Close())
		f.off = nil
	}
	if f.time != nil {
		errs = append(errs, f.time.Close())
		f.time = nil
	}
	if f.log != nil {
		if err := f.log.Close(); err != nil {
			errs = append(errs, fmt.Errorf("segment: close %s: %w", s.logPath, err))
		}
		f.log = nil
	}
	return errors.Join(errs...)
}

// Activate makes a sealed segment the active one again, so that Append
// accepts batches: the log calls it on its last segment after Open (and
// Recover, if the shutdown was unclean). It reopens the .log for writing,
// grows the indexes back to MaxIndexBytes and maps the .log at
// MaxSegmentBytes. The append state comes from the indexes' last entries
// and a scan of the batches after them, not from a scan of the segment.
// Activating an active segment does nothing.
func (s *Segment) Activate() error {
	s.appendMu.Lock()
	defer s.appendMu.Unlock()
	s.resMu.Lock()
	defer s.resMu.Unlock()
	if s.closed.Load() {
		return fmt.Errorf("%w: %s", ErrClosed, s.logPath)
	}
	if s.ro {
		return s.readOnlyErr("activate")
	}
	if !s.sealed.Load() {
		return nil
	}
	return s.activateLocked()
}

// activateLocked turns the loaded or unloaded sealed segment into the
// active one. appendMu and resMu must be held exclusively.
func (s *Segment) activateLocked() error {
	if err := s.loadLocked(); err != nil {
		return err
	}
	f := s.files
	lf, err := s.fs.OpenFile(s.logPath, os.O_RDWR, 0)
	if err != nil {
		return openError("open for writing", s.logPath, err)
	}
	// A sealed segment's Source maps the file at its sealed size; the
	// active one maps MaxSegmentBytes so appends need no remap.
	nf := &files{log: lf, off: f.off, time: f.time}
	if err := s.openSource(nf, true); err != nil {
		return errors.Join(err, lf.Close())
	}
	if err := errors.Join(f.off.Reactivate(), f.time.Reactivate()); err != nil {
		return errors.Join(err, s.closeSource(nf), lf.Close())
	}
	oldErr := s.closeSource(f)
	s.files = nf
	t := s.tip.Load()
	s.sinceIndex = t.size
	if e, ok := nf.off.LastEntry(); ok {
		s.sinceIndex = t.size - e.Position
	}
	s.sealed.Store(false)
	return oldErr
}

// Seal makes the active segment read-only when the log rolls past it: it
// adds the final time-index entry (the maximum timestamp so far), fsyncs
// the .log, trims and fsyncs both indexes and closes the write handle.
// Sealing a sealed segment does nothing.
func (s *Segment) Seal() error {
	s.appendMu.Lock()
	defer s.appendMu.Unlock()
	if err := s.checkClosed(); err != nil {
		return err
	}
	if s.ro {
		return s.readOnlyErr("seal")
	}
	if s.sealed.Load() {
		return nil
	}
	if err := s.failure(); err != nil {
		return err
	}
	if s.files == nil {
		// Closed idle: reopen, so that sealing trims and fsyncs as always.
		s.resMu.Lock()
		err := s.reloadLocked()
		s.resMu.Unlock()
		if err != nil {
			return err
		}
	}
	f := s.files
	t := s.tip.Load()
	if t.maxTs > index.NoTimestamp {
		if err := f.time.Append(t.maxTs, t.maxTsOffset); err != nil && !errors.Is(err, index.ErrFull) {
			return s.fail(fmt.Errorf("segment: final time index entry of %s: %w", s.logPath, err))
		}
	}
	if err := f.log.Sync(); err != nil {
		return s.fail(fmt.Errorf("segment: fsync %s: %w", s.logPath, err))
	}
	// Lookups go on while the indexes trim and remap themselves; only the
	// write handle, which readers may be scanning through, needs resMu.
	err := errors.Join(f.off.Seal(), f.time.Seal())
	s.resMu.Lock()
	defer s.resMu.Unlock()
	if cerr := f.log.Close(); cerr != nil {
		err = errors.Join(err, fmt.Errorf("segment: close %s: %w", s.logPath, cerr))
	}
	f.log = nil
	s.sealed.Store(true)
	return err
}

// Sync makes every appended batch durable: fsync of the .log, then of both
// indexes. It does not take the append lock, so appends go on meanwhile
// (those are covered only by a later Sync). A failed fsync of the .log makes
// the segment fail-stop (ErrFailed). Sync of a sealed segment does nothing:
// Seal synced it.
func (s *Segment) Sync() error {
	s.resMu.RLock()
	defer s.resMu.RUnlock()
	f, err := s.syncLogLocked()
	if err != nil || f == nil {
		return err
	}
	// The indexes are not authoritative (recovery rebuilds them), so a
	// failed index fsync is reported without stopping appends.
	return errors.Join(f.off.Sync(), f.time.Sync())
}

// SyncLog makes every appended batch durable like Sync, but fsyncs only the
// .log, not the indexes: the cost of a group commit is then one fsync. A
// failed fsync makes the segment fail-stop (ErrFailed), as with Sync. SyncLog
// of a sealed segment does nothing: Seal synced it.
//
// Leaving the indexes to the page cache is safe for a caller that, like the
// log, recovers after an unclean shutdown every segment from the one holding
// its recovery point on, and only moves the recovery point past a segment
// once Seal has fsynced it: the active segment's indexes, which are the
// only ones SyncLog leaves unsynced, are then always rebuilt from the .log
// before they are used again (Recover), and a sealed segment's indexes
// were made durable by Seal. Indexes are never authoritative: whatever a
// power cut leaves of them is checked against the .log, and rebuilt if it
// does not match.
func (s *Segment) SyncLog() error {
	s.resMu.RLock()
	defer s.resMu.RUnlock()
	_, err := s.syncLogLocked()
	return err
}

// syncLogLocked fsyncs the active segment's .log and returns its files, or
// nil files when there is nothing to sync (sealed or not loaded). resMu
// must be held shared, which keeps the write handle open.
func (s *Segment) syncLogLocked() (*files, error) {
	if s.closed.Load() {
		return nil, fmt.Errorf("%w: %s", ErrClosed, s.logPath)
	}
	f := s.files
	if f == nil && !s.sealed.Load() && !s.ro && s.unsynced.Load() {
		return nil, s.syncIdleLocked()
	}
	if f == nil || f.log == nil {
		return nil, nil
	}
	if err := s.failure(); err != nil {
		return nil, err
	}
	// Cleared before the fsync: a batch written meanwhile sets it again.
	s.unsynced.Store(false)
	if err := f.log.Sync(); err != nil {
		return nil, s.fail(fmt.Errorf("segment: fsync %s: %w", s.logPath, err))
	}
	return f, nil
}

// syncIdleLocked fsyncs the .log of an active segment closed idle with
// batches written since the last fsync: through a handle opened for it, as
// fsync makes durable what was written to the file through any handle.
// resMu must be held (shared is enough: reopening takes it exclusively).
func (s *Segment) syncIdleLocked() error {
	if err := s.failure(); err != nil {
		return err
	}
	s.unsynced.Store(false)
	lf, err := s.fs.OpenFile(s.logPath, os.O_RDWR, 0)
	if err != nil {
		// Not fail-stop: nothing is lost yet, and the next Sync retries.
		s.unsynced.Store(true)
		return openError("open for fsync", s.logPath, err)
	}
	err = lf.Sync()
	cerr := lf.Close()
	if err != nil {
		return s.fail(fmt.Errorf("segment: fsync %s: %w", s.logPath, err))
	}
	if cerr != nil {
		return fmt.Errorf("segment: close %s: %w", s.logPath, cerr)
	}
	return nil
}

// CloseIdle releases the segment's open files and mappings; the next read
// loads them again. Views already handed out stay valid. An active segment
// gets its final time-index entry first, as at Close, and no fsync: it
// stays active, keeps its append state in memory, and the next Append,
// Seal or read reopens its files for writing, while a Sync in the meantime
// opens the .log only to fsync it, if batches were written since the last
// one. It does nothing to a segment that is not loaded, nor to a failed or
// read-only active one.
func (s *Segment) CloseIdle() error {
	s.appendMu.Lock()
	defer s.appendMu.Unlock()
	s.resMu.Lock()
	defer s.resMu.Unlock()
	if s.closed.Load() {
		return fmt.Errorf("%w: %s", ErrClosed, s.logPath)
	}
	if s.files == nil {
		return nil
	}
	if !s.sealed.Load() {
		return s.parkLocked()
	}
	err := s.closeFiles(s.files)
	s.files = nil
	return err
}

// parkLocked closes the active segment's files the way Close does (the
// final time-index entry, trimmed indexes, no fsync) and keeps the append
// state in memory: the segment stays active, the next Append or read
// reopens it (reloadLocked), and a Sync fsyncs its .log by name
// (syncIdleLocked). A read-only or failed segment, or one whose handle the
// readers' index repair dropped, is left as it is. appendMu and resMu must
// be held exclusively.
func (s *Segment) parkLocked() error {
	f := s.files
	if s.ro || s.failure() != nil || f.log == nil {
		return nil
	}
	var err error
	if t := s.tip.Load(); t.maxTs > index.NoTimestamp {
		if aerr := f.time.Append(t.maxTs, t.maxTsOffset); aerr != nil && !errors.Is(aerr, index.ErrFull) {
			err = fmt.Errorf("segment: final time index entry of %s: %w", s.logPath, aerr)
		}
	}
	s.files = nil
	if err = errors.Join(err, s.closeFiles(f)); err != nil {
		// The files are closed whatever failed; what is on disk is
		// checked again when the segment reopens.
		return s.fail(err)
	}
	return nil
}

// Close releases the segment's files. An active segment first gets the
// final time-index entry, as in Kafka, and its indexes are trimmed; Close
// does not fsync (call Sync or Seal first). Views already handed out stay
// valid until released. Close is idempotent; every other method then
// returns ErrClosed (Delete still removes the files).
func (s *Segment) Close() error {
	s.appendMu.Lock()
	defer s.appendMu.Unlock()
	s.resMu.Lock()
	defer s.resMu.Unlock()
	if s.closed.Load() {
		return nil
	}
	return s.closeLocked()
}

func (s *Segment) closeLocked() error {
	s.closed.Store(true)
	f := s.files
	if f == nil {
		return nil
	}
	s.files = nil
	var err error
	if !s.sealed.Load() && s.failure() == nil {
		if t := s.tip.Load(); t.maxTs > index.NoTimestamp {
			if aerr := f.time.Append(t.maxTs, t.maxTsOffset); aerr != nil && !errors.Is(aerr, index.ErrFull) {
				err = fmt.Errorf("segment: final time index entry of %s: %w", s.logPath, aerr)
			}
		}
	}
	return errors.Join(err, s.closeFiles(f))
}

// Delete removes the segment's files the crash-safe way: close them, rename
// each to its name plus DeletedSuffix, fsync the directory, then unlink.
// Readers holding views keep reading the unlinked file's bytes until they
// release them. A crash between the steps leaves .deleted files for the
// log's startup to remove. Delete works on a closed segment too; afterwards
// every method returns ErrClosed.
func (s *Segment) Delete() error {
	s.appendMu.Lock()
	defer s.appendMu.Unlock()
	s.resMu.Lock()
	defer s.resMu.Unlock()
	if s.deleted {
		return fmt.Errorf("%w: %s", ErrClosed, s.logPath)
	}
	if s.ro {
		return s.readOnlyErr("delete")
	}
	var errs []error
	if !s.closed.Load() {
		errs = append(errs, s.closeLocked())
	}
	s.deleted = true
	paths := []string{s.logPath, s.offPath, s.timePath}
	var renamed []string
	for _, p := range paths {
		if err := s.fs.Rename(p, p+DeletedSuffix); err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, fmt.Errorf("segment: delete %s: %w", p, err))
			}
			continue
		}
		renamed = append(renamed, p+DeletedSuffix)
	}
	if err := s.fs.SyncDir(s.dir); err != nil {
		// Without a durable rename the unlink could be seen before it;
		// leave the .deleted files for the log's startup to remove.
		return errors.Join(append(errs, fmt.Errorf("segment: sync dir %s: %w", s.dir, err))...)
	}
	for _, p := range append(renamed, s.logPath+TruncateSuffix) {
		if err := s.fs.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("segment: remove %s: %w", p, err))
		}
	}
	return errors.Join(errs...)
}

func (s *Segment) checkClosed() error {
	if s.closed.Load() {
		return fmt.Errorf("%w: %s", ErrClosed, s.logPath)
	}
	return nil
}

// fail records err as the reason the segment stopped accepting writes (the
// first one wins) and returns it wrapped in ErrFailed.
func (s *Segment) fail(err error) error {
	werr := fmt.Errorf("%w: %w", ErrFailed, err)
	s.failed.CompareAndSwap(nil, &werr)
	return werr
}

// failure returns the recorded write failure, or nil.
func (s *Segment) failure() error {
	if p := s.failed.Load(); p != nil {
		return *p
	}
	return nil
}

func (s *Segment) String() string { return s.logPath }

package log

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/foliolog/folio/index"
	"github.com/foliolog/folio/readpath"
	"github.com/foliolog/folio/record"
	"github.com/foliolog/folio/segment"
	"github.com/foliolog/folio/vfs"
)

// A read-only log (Options.ReadOnly) does not use package segment: a
// segment loads by checking its indexes and rebuilds (writes) any that
// fails, and the live writer's active index, preallocated with a zeroed
// tail, always fails. roSeg reads a segment's files with pread and read-only
// mappings only, treats every index entry as a hint that it checks against
// the .log before use, and never writes, creates, renames or removes
// anything.

var (
	// errSegGone: the roSeg was dropped (by Refresh or Close) after the
	// caller took the view that holds it. The caller looks again.
	errSegGone = errors.New("log: segment dropped from the read-only view")
	// errNotInSegment: no batch of the segment below the limit holds the
	// offset (it is past the segment's visible end, or in a gap).
	errNotInSegment = errors.New("log: offset not in segment")
)

// roSeg is one segment of a read-only log.
type roSeg struct {
	capEntry
	fs       vfs.FS
	base     int64
	path     string
	offPath  string
	timePath string
	kind     readpath.Kind
	mapSize  int64 // mmap size of the source (see load)

	// filesMu guards files and gone: held shared by a read for as long as it
	// uses the files (up to taking its view), exclusively to open or close
	// them.
	filesMu sync.RWMutex
	files   *roFiles
	gone    bool
}

// roFiles are a loaded roSeg's open files. A reload (after CloseIdle) gets
// new ones, so nothing learnt about one inode outlives its handles.
type roFiles struct {
	log  vfs.File // owned by src; read through while src is open
	src  readpath.Source
	id   os.FileInfo // identity of the .log opened, for Refresh
	size int64       // .log size when opened: the limit of a segment that is not the last
	off  vfs.File    // nil when missing
	time vfs.File    // nil when missing
	// hint is where the batch after the last one a read returned starts,
	// so that a consumer reading on does not search the index each time.
	hint atomic.Pointer[roHint]
}

type roHint struct {
	offset int64 // the offset after the last batch read
	pos    int64 // where the next batch starts
}

// roEnd is a position in a segment's .log at a batch boundary and the
// offset the batch there would start at or after.
type roEnd struct {
	pos  int64
	next int64
}

func newROSeg(fsys vfs.FS, dir string, base int64, kind readpath.Kind, mapSize int64, owner *atomic.Int64) *roSeg {
	s := &roSeg{
		fs:       fsys,
		base:     base,
		path:     segment.LogPath(dir, base),
		offPath:  segment.IndexPath(dir, base),
		timePath: segment.TimeIndexPath(dir, base),
		kind:     kind,
		mapSize:  mapSize,
	}
	s.capEntry = capEntry{closer: s, owner: owner}
	return s
}

// acquire returns the loaded files with filesMu held shared, loading them
// first if needed. The caller calls filesMu.RUnlock unless err != nil.
func (s *roSeg) acquire() (*roFiles, error) {
	for {
		s.filesMu.RLock()
		if s.gone {
			s.filesMu.RUnlock()
			return nil, fmt.Errorf("%w: %s", errSegGone, s.path)
		}
		if f := s.files; f != nil {
			return f, nil
		}
		s.filesMu.RUnlock()

		s.filesMu.Lock()
		var err error
		if !s.gone && s.files == nil {
			s.files, err = s.open()
		}
		s.filesMu.Unlock()
		if err != nil {
			return nil, err
		}
	}
}

// open opens the .log and the indexes O_RDONLY. A missing index is no
// error: lookups then scan from the start. A missing .log is (it wraps
// fs.ErrNotExist): the writer deleted the segment.
func (s *roSeg) open() (*roFiles, error) {
	lf, err := s.fs.OpenFile(s.path, os.O_RDONLY, 0)
	if err != nil {
		return nil, fmt.Errorf("log: open %s: %w", s.path, err)
	}
	fi, err := lf.Stat()
	if err != nil {
		return nil, errors.Join(fmt.Errorf("log: stat %s: %w", s.path, err), lf.Close())
	}
	// The last segment is mapped at its maximum size so that the mapping
	// covers it as the writer appends (the bytes are read only below the
	// valid end); any other at its size on first view.
	src, err := readpath.Open(s.kind, lf, s.mapSize)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("log: %s: %w", s.path, err), lf.Close())
	}
	f := &roFiles{log: lf, src: src, id: fi, size: fi.Size()}
	if f.off, err = s.openIndex(s.offPath); err == nil {
		f.time, err = s.openIndex(s.timePath)
	}
	if err != nil {
		return nil, errors.Join(err, closeFiles(f))
	}
	return f, nil
}

func (s *roSeg) openIndex(path string) (vfs.File, error) {
	f, err := s.fs.OpenFile(path, os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("log: open %s: %w", path, err)
	}
	return f, nil
}

// closeFiles closes everything f holds; views already handed out keep the
// .log open until released.
func closeFiles(f *roFiles) error {
	var errs []error
	if f.src != nil {
		errs = append(errs, f.src.Close())
	}
	for _, x := range []vfs.File{f.off, f.time} {
		if x != nil {
			errs = append(errs, x.Close())
		}
	}
	return errors.Join(errs...)
}

// CloseIdle gives the files back (the caps evict idle segments); the next
// read opens them again.
func (s *roSeg) CloseIdle() error {
	s.filesMu.Lock()
	defer s.filesMu.Unlock()
	if s.files == nil {
		return nil
	}
	err := closeFiles(s.files)
	s.files = nil
	return err
}

// close drops the segment for good: later reads get errSegGone.
func (s *roSeg) close() error {
	s.filesMu.Lock()
	defer s.filesMu.Unlock()
	s.gone = true
	if s.files == nil {
		return nil
	}
	err := closeFiles(s.files)
	s.files = nil
	return err
}

// loaded reports whether the files are open.
func (s *roSeg) loaded() bool {
	s.filesMu.RLock()
	defer s.filesMu.RUnlock()
	return s.files != nil
}

// loadedSize returns the .log's size as opened, if it is open.
func (s *roSeg) loadedSize() (int64, bool) {
	s.filesMu.RLock()
	defer s.filesMu.RUnlock()
	if s.files == nil {
		return 0, false
	}
	return s.files.size, true
}

// read returns a view of whole batches starting with the one holding
// offset, as many as fit in maxBytes and at least that one, all below limit
// (limit < 0: the .log's size when opened). errNotInSegment means no batch
// below limit holds offset.
func (s *roSeg) read(offset int64, maxBytes int, limit int64) (*readpath.View, error) {
	f, err := s.acquire()
	if err != nil {
		return nil, err
	}
	defer s.filesMu.RUnlock()
	if limit < 0 {
		limit = f.size
	}
	sc := s.newScan(f, limit)
	defer sc.free()
	pos, h, err := s.locate(f, &sc, offset)
	if err != nil {
		return nil, err
	}
	n := int64(h.Size())
	last := h.LastOffset()
	for p := pos + n; p < limit; {
		nh, err := sc.header(p)
		if err != nil || n+int64(nh.Size()) > int64(maxBytes) {
			// A bad batch after the first is reported by the read that
			// starts at it.
			break
		}
		n += int64(nh.Size())
		last = nh.LastOffset()
		p += int64(nh.Size())
	}
	v, err := f.src.View(pos, int(n))
	if err != nil {
		return nil, fmt.Errorf("log: read %s at %d: %w", s.path, pos, err)
	}
	f.hint.Store(&roHint{offset: last + 1, pos: pos + n})
	return v, nil
}

// locate returns the position and header of the first batch below sc's
// limit whose last offset reaches offset, starting from the read hint or
// the offset index.
func (s *roSeg) locate(f *roFiles, sc *roScan, offset int64) (int64, record.Batch, error) {
	if h := f.hint.Load(); h != nil && h.offset == offset {
		if pos, hdr, err := walkTo(sc, h.pos, offset); err == nil {
			return pos, hdr, nil
		}
		// Past this segment's end, or a stale hint (a writer that
		// truncated in place and wrote again): ask the index.
	}
	start := int64(0)
	if e, ok, err := s.lookupOffset(f, sc, offset); err != nil {
		return 0, nil, err
	} else if ok {
		start = e.Position
	}
	return walkTo(sc, start, offset)
}

// walkTo walks batch headers from pos (a batch boundary) to the first batch
// whose last offset reaches offset; errNotInSegment if none below the
// limit does.
func walkTo(sc *roScan, pos, offset int64) (int64, record.Batch, error) {
	for pos < sc.limit {
		h, err := sc.header(pos)
		if err != nil {
			return 0, nil, err
		}
		if h.LastOffset() >= offset {
			return pos, h, nil
		}
		pos += int64(h.Size())
	}
	return 0, nil, errNotInSegment
}

// lookupOffset returns the offset-index entry with the largest offset at or
// below offset that checks out against the .log below sc's limit: its
// position holds a batch whose last offset is the entry's. It tries the
// two entries before a failing one, then gives up (the caller scans from
// position 0).
func (s *roSeg) lookupOffset(f *roFiles, sc *roScan, offset int64) (index.OffsetEntry, bool, error) {
	if f.off == nil || offset-s.base > math.MaxInt32 {
		return index.OffsetEntry{}, false, nil
	}
	rel := uint32(max(offset-s.base, 0))
	below := func(e []byte) bool {
		return binary.BigEndian.Uint32(e[:4]) <= rel && int64(binary.BigEndian.Uint32(e[4:])) < sc.limit
	}
	i, err := searchEntries(f.off, index.OffsetEntrySize, below)
	if err != nil {
		return index.OffsetEntry{}, false, fmt.Errorf("log: read %s: %w", s.offPath, err)
	}
	return s.checkedOffsetEntry(f, sc, i, below)
}

// checkedOffsetEntry returns the first of entries i, i-1, i-2 that still
// satisfies below and checks out against the .log. (Damaged entries can
// make the search land on garbage, after entries that do not satisfy
// below.)
func (s *roSeg) checkedOffsetEntry(f *roFiles, sc *roScan, i int64, below func([]byte) bool) (index.OffsetEntry, bool, error) {
	var buf [index.OffsetEntrySize]byte
	for k := i; k >= 0 && k > i-3; k-- {
		ok, err := readEntry(f.off, index.OffsetEntrySize, k, buf[:])
		if err != nil {
			return index.OffsetEntry{}, false, fmt.Errorf("log: read %s: %w", s.offPath, err)
		}
		if !ok || !below(buf[:]) {
			continue
		}
		e := index.OffsetEntry{
			Offset:   s.base + int64(binary.BigEndian.Uint32(buf[:4])),
			Position: int64(binary.BigEndian.Uint32(buf[4:])),
		}
		if e.Position >= sc.limit {
			continue
		}
		if h, err := sc.header(e.Position); err == nil && h.LastOffset() == e.Offset {
			return e, true, nil
		}
	}
	return index.OffsetEntry{}, false, nil
}

// offsetForTime returns the base offset of the first batch below limit
// whose MaxTimestamp is at or after ts (ok false if none).
func (s *roSeg) offsetForTime(ts int64, limit int64) (offset int64, ok bool, err error) {
	f, err := s.acquire()
	if err != nil {
		return 0, false, err
	}
	defer s.filesMu.RUnlock()
	if limit < 0 {
		limit = f.size
	}
	sc := s.newScan(f, limit)
	defer sc.free()
	start, err := s.timeStart(f, &sc, ts)
	if err != nil {
		return 0, false, err
	}
	for pos := start; pos < limit; {
		h, err := sc.header(pos)
		if err != nil {
			return 0, false, err
		}
		if h.MaxTimestamp() >= ts {
			return h.BaseOffset(), true, nil
		}
		pos += int64(h.Size())
	}
	return 0, false, nil
}

// timeStart returns where a search for ts can start: the batch of the
// time-index entry with the largest timestamp below ts, if the entry checks
// out (its offset is the last offset of a batch whose MaxTimestamp is the
// entry's timestamp); no batch before that one reaches ts. Else 0.
func (s *roSeg) timeStart(f *roFiles, sc *roScan, ts int64) (int64, error) {
	if f.time == nil {
		return 0, nil
	}
	below := func(e []byte) bool { return int64(binary.BigEndian.Uint64(e[:8])) < ts }
	i, err := searchEntries(f.time, index.TimeEntrySize, below)
	if err != nil {
		return 0, fmt.Errorf("log: read %s: %w", s.timePath, err)
	}
	var buf [index.TimeEntrySize]byte
	for k := i; k >= 0 && k > i-3; k-- {
		ok, err := readEntry(f.time, index.TimeEntrySize, k, buf[:])
		if err != nil {
			return 0, fmt.Errorf("log: read %s: %w", s.timePath, err)
		}
		if !ok || !below(buf[:]) {
			continue
		}
		entryTs := int64(binary.BigEndian.Uint64(buf[:8]))
		entryOff := s.base + int64(binary.BigEndian.Uint32(buf[8:]))
		pos, h, err := s.locate(f, sc, entryOff)
		if err == nil && h.LastOffset() == entryOff && h.MaxTimestamp() == entryTs {
			return pos, nil
		}
	}
	return 0, nil
}

// searchEntries returns the largest i such that entry i of the index file f
// is not all zero and below(entry) holds, or -1. Entries are fixed-size
// records; valid ones hold strictly increasing keys, so below holds for a
// prefix of them. All-zero entries, what a live writer's preallocated tail
// holds, count as above every key, as do entries past the file's end (a
// seal may trim the file meanwhile): both come after the valid ones. The
// search narrows the range with one pread per step until it fits a block,
// then reads that block at once: about log2(entries/searchBlock)+1 reads.
func searchEntries(f vfs.File, size int, below func(e []byte) bool) (int64, error) {
	fi, err := f.Stat()
	if err != nil {
		return -1, err
	}
	// Entries below lo satisfy the predicate, entries from hi on do not.
	lo, hi := int64(0), fi.Size()/int64(size)
	buf := make([]byte, size)
	for hi-lo > searchBlock {
		mid := lo + (hi-lo)/2
		ok, err := readEntry(f, size, mid, buf)
		if err != nil {
			return -1, err
		}
		if ok && below(buf) {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	block := make([]byte, (hi-lo)*int64(size))
	n, err := f.ReadAt(block, lo*int64(size))
	if n < len(block) && err != nil && !errors.Is(err, io.EOF) {
		return -1, err
	}
	k := sort.Search(n/size, func(k int) bool {
		e := block[k*size : (k+1)*size]
		return !nonZero(e) || !below(e)
	})
	return lo + int64(k) - 1, nil
}

// searchBlock is how many index entries searchEntries reads at once when
// the range it searches is that small: 4 KiB of offset entries.
const searchBlock = 512

func nonZero(e []byte) bool {
	for _, c := range e {
		if c != 0 {
			return true
		}
	}
	return false
}

// readEntry reads entry i of an index file into buf and reports whether it
// is a real entry: whole, and not all zero.
func readEntry(f vfs.File, size int, i int64, buf []byte) (bool, error) {
	n, err := f.ReadAt(buf[:size], i*int64(size))
	if n < size {
		if err == nil || errors.Is(err, io.EOF) {
			return false, nil
		}
		return false, err
	}
	return nonZero(buf[:size]), nil
}

// findEnd finds the end of the valid batches of the last segment, whose
// .log is size bytes now: from the last offset-index entry that checks out
// (or from the start) it walks batches with every check of recovery, CRC
// included, and stops at the first that fails or is not whole yet. A live
// writer's batch being written is such a batch: it becomes visible at a
// later Refresh.
func (s *roSeg) findEnd(f *roFiles, size int64) (roEnd, error) {
	f.hint.Store(nil) // a fresh look: what was read before may be gone
	if f.off != nil {
		sc := s.newScan(f, size)
		// The last entry that points into the file: after a cut (the
		// writer truncated) later entries point past its end.
		inFile := func(e []byte) bool { return int64(binary.BigEndian.Uint32(e[4:])) < size }
		i, err := searchEntries(f.off, index.OffsetEntrySize, inFile)
		var e index.OffsetEntry
		var ok bool
		if err == nil {
			e, ok, err = s.checkedOffsetEntry(f, &sc, i, inFile)
		}
		sc.free()
		if err != nil {
			return roEnd{}, fmt.Errorf("log: read %s: %w", s.offPath, err)
		}
		if ok {
			end, err := s.walkValid(f, roEnd{pos: e.Position, next: -1}, size)
			if err != nil || end.pos > e.Position {
				return end, err
			}
			// The indexed batch itself fails: look from the start.
		}
	}
	return s.walkValid(f, roEnd{pos: 0, next: s.base}, size)
}

// walkValid walks whole batches from from.pos up to size, checking each as
// recovery does (header, whole, CRC, offsets ascending from from.next,
// within the segment's relative-offset and position range), and returns
// the end after the last one that passes. from.next < 0 means the offset
// the first batch starts at is unknown (any offset from the base passes).
func (s *roSeg) walkValid(f *roFiles, from roEnd, size int64) (roEnd, error) {
	end := from
	var buf []byte
	for end.pos+record.HeaderSize <= size {
		var hdr [record.HeaderSize]byte
		n, err := f.log.ReadAt(hdr[:], end.pos)
		if n < len(hdr) {
			if err != nil && !errors.Is(err, io.EOF) {
				return end, fmt.Errorf("log: read %s at %d: %w", s.path, end.pos, err)
			}
			break
		}
		bsize, err := record.CheckHeader(hdr[:])
		if err != nil || end.pos+int64(bsize) > size || end.pos+int64(bsize) > math.MaxInt32 {
			break
		}
		if cap(buf) < bsize {
			buf = make([]byte, bsize)
		}
		buf = buf[:bsize]
		if n, err := f.log.ReadAt(buf, end.pos); n < bsize {
			if err != nil && !errors.Is(err, io.EOF) {
				return end, fmt.Errorf("log: read %s at %d: %w", s.path, end.pos, err)
			}
			break
		}
		b := record.Batch(buf)
		if b.Validate() != nil ||
			b.BaseOffset() < max(s.base, end.next) ||
			b.LastOffset()-s.base > math.MaxInt32 ||
			int64(b.NumRecords()) > int64(b.LastOffsetDelta())+1 {
			break
		}
		end = roEnd{pos: end.pos + int64(bsize), next: b.LastOffset() + 1}
	}
	if end.next < 0 {
		// Not even the first batch passed; the caller starts over.
		end.next = s.base
	}
	return end, nil
}

// roScan reads batch headers of one .log below a limit through a
// read-ahead window, so that walking an index interval of small batches
// costs a pread or two, not one per batch. It never faults, whatever the
// file holds.
type roScan struct {
	f     vfs.File
	path  string
	limit int64
	bp    *[]byte
	win   []byte
	off   int64
}

const roScanWindow = 8 << 10

var roWindowPool = sync.Pool{New: func() any { b := make([]byte, roScanWindow); return &b }}

func (s *roSeg) newScan(f *roFiles, limit int64) roScan {
	return roScan{f: f.log, path: s.path, limit: limit}
}

func (sc *roScan) free() {
	if sc.bp != nil {
		roWindowPool.Put(sc.bp)
		sc.bp, sc.win = nil, nil
	}
}

// header returns the header of the batch at pos once it passes the checks
// a header allows and ends by the limit. It is valid until the next call.
func (sc *roScan) header(pos int64) (record.Batch, error) {
	if pos < 0 || sc.limit-pos < record.HeaderSize {
		return nil, fmt.Errorf("%w: %s: %d bytes left at position %d, a batch header needs %d",
			ErrCorrupt, sc.path, max(sc.limit-pos, 0), pos, record.HeaderSize)
	}
	if pos < sc.off || pos+record.HeaderSize > sc.off+int64(len(sc.win)) {
		if sc.bp == nil {
			sc.bp = roWindowPool.Get().(*[]byte)
		}
		buf := (*sc.bp)[:min(int64(roScanWindow), sc.limit-pos)]
		n, err := sc.f.ReadAt(buf, pos)
		if n < record.HeaderSize {
			sc.win = nil
			if err == nil || errors.Is(err, io.EOF) {
				return nil, fmt.Errorf("%w: %s: file ends at %d, below the %d bytes it had", ErrCorrupt, sc.path, pos+int64(n), sc.limit)
			}
			return nil, fmt.Errorf("log: read %s at %d: %w", sc.path, pos, err)
		}
		sc.win, sc.off = buf[:n], pos
	}
	i := pos - sc.off
	h := record.Batch(sc.win[i : i+record.HeaderSize])
	size, err := record.CheckHeader(h)
	if err != nil {
		return nil, fmt.Errorf("%w: %s at position %d: %w", ErrCorrupt, sc.path, pos, err)
	}
	if int64(size) > sc.limit-pos {
		return nil, fmt.Errorf("%w: %s at position %d: batch of %d bytes runs past the end at %d",
			ErrCorrupt, sc.path, pos, size, sc.limit)
	}
	return h, nil
}

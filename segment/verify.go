package segment

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/foliolog/folio/errs"
	"github.com/foliolog/folio/index"
	"github.com/foliolog/folio/record"
	"github.com/foliolog/folio/vfs"
)

// Report is what Verify found in one segment's files.
type Report struct {
	// Base is the segment's base offset.
	Base int64
	// LogBytes is the size of the .log when Verify looked at it.
	LogBytes int64
	// ValidBytes is the end of the valid prefix: what Recover would keep.
	// Batches, LastOffset and MaxTimestamp describe that prefix
	// (LastOffset is Base-1 and MaxTimestamp index.NoTimestamp when it is
	// empty).
	ValidBytes   int64
	Batches      int
	LastOffset   int64
	MaxTimestamp int64
	// OffsetEntries and TimeEntries count the entries checked in the
	// .index and the .timeindex; ZeroOffsetEntries and ZeroTimeEntries the
	// all-zero entries after them, which are disk an active segment's index
	// allocated ahead of its writer (or that a crash left unwritten), not
	// entries.
	OffsetEntries, TimeEntries         int
	ZeroOffsetEntries, ZeroTimeEntries int
	// Problems lists everything found wrong, in file order: .log first,
	// then .index, then .timeindex.
	Problems []Problem
}

// OK reports whether Verify found no problem.
func (r *Report) OK() bool { return len(r.Problems) == 0 }

// Problem is one thing Verify found wrong, and where.
type Problem struct {
	// Path is the file.
	Path string
	// Position is the byte position in that file: of the batch in a .log,
	// of the entry in an index file.
	Position int64
	// Entry is the entry's number in an index file (from 0), -1 for a .log
	// problem or one about a whole index file.
	Entry int
	// Err says what is wrong. A .log problem wraps ErrCorrupt, an index
	// problem index.ErrCorrupt; a missing index file wraps fs.ErrNotExist.
	Err error
}

func (p Problem) Error() string {
	if p.Entry >= 0 {
		return fmt.Sprintf("%s: entry %d at position %d: %v", p.Path, p.Entry, p.Position, p.Err)
	}
	return fmt.Sprintf("%s at position %d: %v", p.Path, p.Position, p.Err)
}

func (p Problem) Unwrap() error { return p.Err }

// Verify checks the files of the segment with base offset base in dir and
// reports every problem it finds, changing nothing: it opens each file
// O_RDONLY, reads with pread only, and maps nothing, so it is safe beside
// a live writer and on a read-only file system. A nil fsys means
// vfs.Default.
//
// The .log is checked batch by batch with Recover's rule (see the package
// documentation): the first batch that fails ends the valid prefix
// (ValidBytes, what Recover would keep). Verify goes on past a batch whose
// header still frames it (a bad CRC, offsets that do not ascend, too many
// records), to report the problems after it too, and stops where the
// framing breaks (no whole header, bad magic or length, a batch running
// past the end of the file).
//
// Every index entry is checked as the segment checks an entry it uses: an
// offset entry must point at a batch of the valid prefix other than the
// first whose last offset is the entry's offset; a time entry's offset
// must be the last offset of a batch of the valid prefix whose
// MaxTimestamp is the entry's timestamp; offset entries must ascend
// strictly with positions that do not go down, time entries must have
// strictly rising timestamps and offsets that do not go down, and every
// relative offset must be at least 0. All-zero entries at the end of an
// index file are counted as preallocated space, not checked. Sparse
// entries are hints: Verify does not require an entry where the index rule
// would have put one.
//
// Beside a live writer, the last batch may be caught half written, and
// reported as a problem. Verify returns an error, not a Report, only when
// the .log cannot be read (missing, or an I/O error).
func Verify(fsys vfs.FS, dir string, base int64) (Report, error) {
	s, err := newSegment(fsys, dir, base, nil)
	if err != nil {
		return Report{}, err
	}
	r := Report{Base: base, LastOffset: base - 1, MaxTimestamp: index.NoTimestamp}
	offs, err := s.readOffsetEntries(&r)
	if err != nil {
		return r, err
	}
	times, err := s.readTimeEntries(&r)
	if err != nil {
		return r, err
	}
	m := newEntryMatcher(offs, times)
	if err := s.verifyLog(&r, m); err != nil {
		return r, err
	}
	r.Problems = append(r.Problems, m.problems(s, &r)...)
	rank := map[string]int{s.logPath: 0, s.offPath: 1, s.timePath: 2}
	slices.SortStableFunc(r.Problems, func(a, b Problem) int {
		if d := rank[a.Path] - rank[b.Path]; d != 0 {
			return d
		}
		return cmp.Compare(a.Position, b.Position)
	})
	return r, nil
}

// verifyLog checks the .log's batches, collecting problems in r and
// showing each batch of the valid prefix to m.
func (s *Segment) verifyLog(r *Report, m *entryMatcher) error {
	f, err := s.fs.OpenFile(s.logPath, os.O_RDONLY, 0)
	if err != nil {
		return fmt.Errorf("segment: verify: open %s: %w", s.logPath, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("segment: verify: stat %s: %w", s.logPath, err)
	}
	size := fi.Size()
	r.LogBytes = size
	q := newSeqReader(f, size)
	defer q.free()
	var hdr [record.HeaderSize]byte
	pos, prevLast, gapFree := int64(0), s.base-1, true
	inPrefix := true
	for pos < size {
		n, cause, err := s.checkBatch(q, pos, prevLast, gapFree, hdr[:])
		if err != nil {
			return fmt.Errorf("segment: verify %s: %w", s.logPath, err)
		}
		if cause != nil {
			r.Problems = append(r.Problems, Problem{Path: s.logPath, Position: pos, Entry: -1, Err: logProblem(cause)})
			if inPrefix {
				inPrefix = false
				r.ValidBytes = pos
			}
			if n == 0 {
				return nil // the framing is gone: nothing after it can be found
			}
			pos += int64(n)
			continue
		}
		h := record.Batch(hdr[:])
		if inPrefix {
			r.Batches++
			r.LastOffset = h.LastOffset()
			r.MaxTimestamp = max(r.MaxTimestamp, h.MaxTimestamp())
			m.batch(pos, h)
		}
		gapFree = gapFree && h.BaseOffset() == prevLast+1
		prevLast = h.LastOffset()
		pos += int64(n)
	}
	if inPrefix {
		r.ValidBytes = pos
	}
	return nil
}

// indexEntryProblem builds an index problem wrapping index.ErrCorrupt.
func indexEntryProblem(path string, i, entrySize int, format string, args ...any) Problem {
	return Problem{
		Path:     path,
		Position: int64(i) * int64(entrySize),
		Entry:    i,
		Err:      fmt.Errorf("%w: %s", index.ErrCorrupt, fmt.Sprintf(format, args...)),
	}
}

// readIndexFile reads the index file at path whole, O_RDONLY, and returns
// its complete entries with the all-zero ones at the end cut off (and
// counted in *zeros). A missing file, or a size that is not whole entries,
// is a problem added to r.
func (s *Segment) readIndexFile(r *Report, path string, entrySize int, zeros *int) ([]byte, error) {
	f, err := s.fs.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			r.Problems = append(r.Problems, Problem{Path: path, Entry: -1, Err: fmt.Errorf("segment: index file missing (the segment rebuilds it from the .log): %w", err)})
			return nil, nil
		}
		return nil, fmt.Errorf("segment: verify: open %s: %w", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("segment: verify: stat %s: %w", path, err)
	}
	size := fi.Size()
	if size > MaxSegmentBytesLimit {
		// No index of a segment's batches can be this large (Kafka's int32
		// positions); do not read gigabytes to say so.
		r.Problems = append(r.Problems, Problem{Path: path, Entry: -1, Err: fmt.Errorf("%w: %d bytes, more than any segment's index", index.ErrCorrupt, size)})
		return nil, nil
	}
	data := make([]byte, size)
	if n, err := f.ReadAt(data, 0); n < len(data) {
		if err == nil || errors.Is(err, io.EOF) {
			// Cut while being read: check what was there.
			data = data[:n]
		} else {
			return nil, fmt.Errorf("segment: verify: read %s: %w", path, err)
		}
	}
	if rest := len(data) % entrySize; rest != 0 {
		whole := len(data) - rest
		r.Problems = append(r.Problems, Problem{Path: path, Position: int64(whole), Entry: -1,
			Err: fmt.Errorf("%w: %d bytes after the last whole %d-byte entry", index.ErrCorrupt, rest, entrySize)})
		data = data[:whole]
	}
	end := len(data)
	for end >= entrySize && allZero(data[end-entrySize:end]) {
		end -= entrySize
	}
	*zeros = (len(data) - end) / entrySize
	return data[:end], nil
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// readOffsetEntries reads the .index and checks its entries' own order,
// returning them for the check against the .log.
func (s *Segment) readOffsetEntries(r *Report) ([]index.OffsetEntry, error) {
	const es = index.OffsetEntrySize
	data, err := s.readIndexFile(r, s.offPath, es, &r.ZeroOffsetEntries)
	if err != nil || data == nil {
		return nil, err
	}
	out := make([]index.OffsetEntry, 0, len(data)/es)
	prevRel, prevPos := int64(-1), int64(-1)
	for i := 0; i*es < len(data); i++ {
		b := data[i*es:]
		rel := int64(int32(binary.BigEndian.Uint32(b)))
		pos := int64(int32(binary.BigEndian.Uint32(b[4:])))
		switch {
		case rel < 0:
			r.Problems = append(r.Problems, indexEntryProblem(s.offPath, i, es, "relative offset %d is below the base", rel))
		case pos < 0:
			r.Problems = append(r.Problems, indexEntryProblem(s.offPath, i, es, "position %d is negative", pos))
		case rel <= prevRel:
			r.Problems = append(r.Problems, indexEntryProblem(s.offPath, i, es, "offset %d is not above the previous entry's %d", s.base+rel, s.base+prevRel))
		case pos < prevPos:
			r.Problems = append(r.Problems, indexEntryProblem(s.offPath, i, es, "position %d is below the previous entry's %d", pos, prevPos))
		}
		prevRel, prevPos = max(prevRel, rel), max(prevPos, pos)
		out = append(out, index.OffsetEntry{Offset: s.base + rel, Position: pos})
	}
	r.OffsetEntries = len(out)
	return out, nil
}

// readTimeEntries is readOffsetEntries for the .timeindex.
func (s *Segment) readTimeEntries(r *Report) ([]index.TimeEntry, error) {
	const es = index.TimeEntrySize
	data, err := s.readIndexFile(r, s.timePath, es, &r.ZeroTimeEntries)
	if err != nil || data == nil {
		return nil, err
	}
	out := make([]index.TimeEntry, 0, len(data)/es)
	prevTs, prevRel := int64(0), int64(-1)
	for i := 0; i*es < len(data); i++ {
		b := data[i*es:]
		ts := int64(binary.BigEndian.Uint64(b))
		rel := int64(int32(binary.BigEndian.Uint32(b[8:])))
		switch {
		case rel < 0:
			r.Problems = append(r.Problems, indexEntryProblem(s.timePath, i, es, "relative offset %d is below the base", rel))
		case i > 0 && ts <= prevTs:
			r.Problems = append(r.Problems, indexEntryProblem(s.timePath, i, es, "timestamp %d is not above the previous entry's %d", ts, prevTs))
		case rel < prevRel:
			r.Problems = append(r.Problems, indexEntryProblem(s.timePath, i, es, "offset %d is below the previous entry's %d", s.base+rel, s.base+prevRel))
		}
		if i == 0 || ts > prevTs {
			prevTs = ts
		}
		prevRel = max(prevRel, rel)
		out = append(out, index.TimeEntry{Timestamp: ts, Offset: s.base + rel})
	}
	r.TimeEntries = len(out)
	return out, nil
}

// entryMatcher checks index entries against the batches of the valid
// prefix in one pass over the .log: the entries are visited in the order
// the batches come (offset entries by position, time entries by offset;
// both rise along the valid prefix), whatever order the files hold them in.
type entryMatcher struct {
	offs     []index.OffsetEntry
	offOrder []int // entry numbers by position
	offNext  int
	offOK    []bool

	times     []index.TimeEntry
	timeOrder []int // entry numbers by offset
	timeNext  int
	timeOK    []bool
}

func newEntryMatcher(offs []index.OffsetEntry, times []index.TimeEntry) *entryMatcher {
	m := &entryMatcher{offs: offs, times: times, offOK: make([]bool, len(offs)), timeOK: make([]bool, len(times))}
	m.offOrder = make([]int, len(offs))
	for i := range m.offOrder {
		m.offOrder[i] = i
	}
	slices.SortStableFunc(m.offOrder, func(a, b int) int { return cmp.Compare(offs[a].Position, offs[b].Position) })
	m.timeOrder = make([]int, len(times))
	for i := range m.timeOrder {
		m.timeOrder[i] = i
	}
	slices.SortStableFunc(m.timeOrder, func(a, b int) int { return cmp.Compare(times[a].Offset, times[b].Offset) })
	return m
}

// batch shows m the valid batch h at pos; batches come in log order.
func (m *entryMatcher) batch(pos int64, h record.Batch) {
	for ; m.offNext < len(m.offOrder); m.offNext++ {
		i := m.offOrder[m.offNext]
		if m.offs[i].Position > pos {
			break
		}
		m.offOK[i] = m.offs[i].Position == pos && offsetEntryFits(m.offs[i], h)
	}
	for ; m.timeNext < len(m.timeOrder); m.timeNext++ {
		i := m.timeOrder[m.timeNext]
		if m.times[i].Offset > h.LastOffset() {
			break
		}
		m.timeOK[i] = timeEntryFits(m.times[i], h)
	}
}

// problems returns a problem for every entry that no batch of the valid
// prefix matched.
func (m *entryMatcher) problems(s *Segment, r *Report) []Problem {
	var out []Problem
	for i, e := range m.offs {
		if !m.offOK[i] {
			out = append(out, indexEntryProblem(s.offPath, i, index.OffsetEntrySize,
				"entry (offset %d, position %d) is not the start of a batch of the valid prefix (%d bytes) ending at that offset (the first batch, at 0, is never indexed)",
				e.Offset, e.Position, r.ValidBytes))
		}
	}
	for i, e := range m.times {
		if !m.timeOK[i] {
			out = append(out, indexEntryProblem(s.timePath, i, index.TimeEntrySize,
				"entry (timestamp %d, offset %d) matches no batch of the valid prefix ending at that offset with that max timestamp",
				e.Timestamp, e.Offset))
		}
	}
	return out
}

// logProblem is the Err of a .log Problem: cause, matching ErrCorrupt. A
// cause that is already a lower layer's corruption (record's, naming its
// batch) speaks for itself; the class is added without words.
func logProblem(cause error) error {
	if errors.Is(cause, errs.ErrCorrupt) {
		return errs.Mark(cause, ErrCorrupt)
	}
	return fmt.Errorf("%w: %w", ErrCorrupt, cause)
}

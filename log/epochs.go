package log

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/foliolog/folio/errs"
	"github.com/foliolog/folio/readpath"
	"github.com/foliolog/folio/record"
	"github.com/foliolog/folio/vfs"
	"github.com/twmb/franz-go/pkg/kerr"
)

// EpochCheckpointFile is the name of a log's leader-epoch checkpoint in its
// directory, Kafka's leader-epoch-checkpoint in Kafka's text format: a
// version line "0", a count line, then one "epoch startOffset" line per
// leader epoch, in rising order of both.
const EpochCheckpointFile = "leader-epoch-checkpoint"

// UndefinedEpoch and UndefinedOffset are what EndOffsetForEpoch answers
// when it knows no answer (Kafka's UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET).
const (
	UndefinedEpoch  int32 = -1
	UndefinedOffset int64 = -1
)

// maxEpochFileBytes bounds what ParseEpochCheckpoint reads: a file larger
// than this is not one the log wrote (a million epochs would be smaller).
const maxEpochFileBytes = 32 << 20

// EpochEntry is one leader epoch and the first offset appended in it.
type EpochEntry struct {
	Epoch       int32
	StartOffset int64
}

// ErrBadEpochCheckpoint is the class of a leader-epoch checkpoint that does
// not parse; it matches ErrCorrupt.
var ErrBadEpochCheckpoint = errs.New("log: bad leader-epoch checkpoint", ErrCorrupt)

// ParseEpochCheckpoint parses the bytes of a leader-epoch checkpoint file:
// version 0, a count, and exactly that many "epoch offset" lines (a final
// newline optional), with epochs and start offsets non-negative and
// strictly rising. Anything else is an error wrapping
// ErrBadEpochCheckpoint; it never panics.
func ParseEpochCheckpoint(data []byte) ([]EpochEntry, error) {
	bad := func(format string, args ...any) ([]EpochEntry, error) {
		return nil, fmt.Errorf("%w: %s", ErrBadEpochCheckpoint, fmt.Sprintf(format, args...))
	}
	if len(data) > maxEpochFileBytes {
		return bad("%d bytes", len(data))
	}
	lines := bytes.Split(data, []byte{'\n'})
	if n := len(lines); n > 0 && len(lines[n-1]) == 0 {
		lines = lines[:n-1] // the last line's newline
	}
	if len(lines) < 2 {
		return bad("%d lines, need a version and a count", len(lines))
	}
	if string(lines[0]) != "0" {
		return bad("version %.20q, want 0", lines[0])
	}
	count, err := strconv.Atoi(string(lines[1]))
	if err != nil || count < 0 || strconv.Itoa(count) != string(lines[1]) {
		return bad("count %.20q", lines[1])
	}
	if count != len(lines)-2 {
		return bad("count %d, %d entry lines", count, len(lines)-2)
	}
	entries := make([]EpochEntry, 0, count)
	for i, ln := range lines[2:] {
		ep, off, ok := bytes.Cut(ln, []byte{' '})
		if !ok {
			return bad("entry %d: %.40q is not \"epoch offset\"", i, ln)
		}
		e, err1 := strconv.ParseInt(string(ep), 10, 32)
		o, err2 := strconv.ParseInt(string(off), 10, 64)
		if err1 != nil || err2 != nil || e < 0 || o < 0 ||
			strconv.FormatInt(e, 10) != string(ep) || strconv.FormatInt(o, 10) != string(off) {
			return bad("entry %d: %.40q is not \"epoch offset\"", i, ln)
		}
		if i > 0 && (int32(e) <= entries[i-1].Epoch || o <= entries[i-1].StartOffset) {
			return bad("entry %d: epoch %d at %d does not rise above epoch %d at %d", i, e, o, entries[i-1].Epoch, entries[i-1].StartOffset)
		}
		entries = append(entries, EpochEntry{Epoch: int32(e), StartOffset: o})
	}
	return entries, nil
}

// FormatEpochCheckpoint returns the bytes of a leader-epoch checkpoint of
// entries (ParseEpochCheckpoint's inverse).
func FormatEpochCheckpoint(entries []EpochEntry) []byte {
	b := make([]byte, 0, 8+len(entries)*16)
	b = append(b, "0\n"...)
	b = strconv.AppendInt(b, int64(len(entries)), 10)
	b = append(b, '\n')
	for _, e := range entries {
		b = strconv.AppendInt(b, int64(e.Epoch), 10)
		b = append(b, ' ')
		b = strconv.AppendInt(b, e.StartOffset, 10)
		b = append(b, '\n')
	}
	return b
}

// epochCache is the log's leader-epoch cache (Kafka's
// LeaderEpochFileCache): the epochs seen, each with its start offset.
// mu is a leaf lock; it may be taken with appendMu held. The entries are
// changed under appendMu as well (so an append, a truncation and a flush
// see them in one order with the offsets), and written to the file under
// syncMu, before the fsync that makes the records they describe durable:
// the file never lags the durable end (see persistEpochs).
type epochCache struct {
	mu      sync.Mutex
	entries []EpochEntry
	dirty   bool // entries differ from the file
	// latest is the last entry's epoch (UndefinedEpoch when empty), for
	// the append path's check without the lock.
	latest atomic.Int32
}

func (c *epochCache) setLatestLocked() {
	if n := len(c.entries); n > 0 {
		c.latest.Store(c.entries[n-1].Epoch)
	} else {
		c.latest.Store(UndefinedEpoch)
	}
}

// assign records that epoch starts at offset, as Kafka's assign does:
// nothing if epoch is the latest and starts at or before offset; otherwise
// every entry whose epoch is not below epoch, or whose start is not below
// offset, is dropped (they are no longer in the lineage) and the new one
// appended.
func (c *epochCache) assign(epoch int32, offset int64) {
	if epoch < 0 || offset < 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if n := len(c.entries); n > 0 && c.entries[n-1].Epoch == epoch && c.entries[n-1].StartOffset <= offset {
		return
	}
	c.entries = slices.DeleteFunc(c.entries, func(e EpochEntry) bool {
		return e.Epoch >= epoch || e.StartOffset >= offset
	})
	c.entries = append(c.entries, EpochEntry{Epoch: epoch, StartOffset: offset})
	c.dirty = true
	c.setLatestLocked()
}

// truncateFromEnd drops the epochs that start at or after end (the log was
// cut there). It reports whether anything changed.
func (c *epochCache) truncateFromEnd(end int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := len(c.entries)
	c.entries = slices.DeleteFunc(c.entries, func(e EpochEntry) bool { return e.StartOffset >= end })
	if len(c.entries) == n {
		return false
	}
	c.dirty = true
	c.setLatestLocked()
	return true
}

// truncateFromStart moves the cache's start up to start (the log start
// moved): the entries starting below it go but the last of them, which now
// starts at start, unless an entry starts there already.
func (c *epochCache) truncateFromStart(start int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	i := 0
	for i < len(c.entries) && c.entries[i].StartOffset < start {
		i++
	}
	if i == 0 {
		return
	}
	last := c.entries[i-1]
	rest := c.entries[i:]
	if len(rest) == 0 || rest[0].StartOffset > start {
		last.StartOffset = start
		rest = append([]EpochEntry{last}, rest...)
	}
	c.entries = rest
	c.dirty = true
	c.setLatestLocked()
}

func (c *epochCache) clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.entries) > 0 {
		c.entries = nil
		c.dirty = true
	}
	c.setLatestLocked()
}

// snapshotDirty returns a copy of the entries if they differ from the
// file, and marks them written; a failed write calls markDirty.
func (c *epochCache) snapshotDirty() ([]EpochEntry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.dirty {
		return nil, false
	}
	c.dirty = false
	return slices.Clone(c.entries), true
}

func (c *epochCache) markDirty() {
	c.mu.Lock()
	c.dirty = true
	c.mu.Unlock()
}

func (c *epochCache) all() []EpochEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.entries)
}

// LeaderEpochs returns the log's leader-epoch cache: every leader epoch in
// its lineage with the first offset appended in it, oldest first. A
// read-only log has none.
func (l *Log) LeaderEpochs() []EpochEntry {
	if l.ro != nil {
		return nil
	}
	return l.epochs.all()
}

// LatestEpoch returns the latest leader epoch in the log's lineage, or
// UndefinedEpoch when it has none.
func (l *Log) LatestEpoch() int32 {
	if l.ro != nil {
		return UndefinedEpoch
	}
	return l.epochs.latest.Load()
}

// EndOffsetForEpoch answers Kafka's OffsetForLeaderEpoch for this log: the
// largest epoch in the lineage not above epoch, and the offset where it
// ends (the start of the next epoch of the lineage, or the log end for the
// latest epoch). For an epoch below every known one it answers epoch with
// the first known start offset (the records before were deleted); for
// UndefinedEpoch, an epoch above the latest, or an empty cache it answers
// (UndefinedEpoch, UndefinedOffset). These are Kafka's semantics
// (LeaderEpochFileCache.endOffsetFor), with which a follower finds where
// its log diverges from the leader's (KIP-101, KIP-279).
func (l *Log) EndOffsetForEpoch(epoch int32) (int32, int64) {
	if l.ro != nil || epoch < 0 {
		return UndefinedEpoch, UndefinedOffset
	}
	c := &l.epochs
	c.mu.Lock()
	defer c.mu.Unlock()
	n := len(c.entries)
	if n == 0 {
		return UndefinedEpoch, UndefinedOffset
	}
	if c.entries[n-1].Epoch == epoch {
		return epoch, l.end.Load()
	}
	// The first entry with an epoch above the one asked for.
	hi, _ := slices.BinarySearchFunc(c.entries, epoch+1, func(e EpochEntry, t int32) int {
		switch {
		case e.Epoch < t:
			return -1
		case e.Epoch > t:
			return 1
		}
		return 0
	})
	if hi == n {
		return UndefinedEpoch, UndefinedOffset
	}
	if hi == 0 {
		return epoch, c.entries[0].StartOffset
	}
	return c.entries[hi-1].Epoch, c.entries[hi].StartOffset
}

// epochPath is the checkpoint file's path.
func (l *Log) epochPath() string { return filepath.Join(l.dir, EpochCheckpointFile) }

// persistEpochs writes the epoch cache to its file if it changed since the
// last write: tmp + fsync + rename + fsync of the directory, so that after a
// power cut the file is the old one or the new one, whole. syncMu must be
// held (one writer); appendMu must not.
func (l *Log) persistEpochs() error {
	// Two group commits may flush at once (syncMu held shared): one
	// writer at a time, and a flush that finds nothing dirty returns only
	// once the write of the one that took the dirty state is durable.
	l.epochFileMu.Lock()
	defer l.epochFileMu.Unlock()
	entries, dirty := l.epochs.snapshotDirty()
	if !dirty {
		return nil
	}
	if err := l.beforeWrite(); err != nil {
		l.epochs.markDirty()
		return err
	}
	if err := vfs.ReplaceFile(l.fs, l.epochPath()+".tmp", l.epochPath(), FormatEpochCheckpoint(entries)); err != nil {
		l.epochs.markDirty()
		return fmt.Errorf("log: writing %s: %w", l.epochPath(), err)
	}
	return nil
}

// readEpochFile reads and parses the checkpoint; a missing file is an
// error wrapping fs.ErrNotExist, a damaged one an *errs.Corruption naming
// it.
func (l *Log) readEpochFile() ([]EpochEntry, error) {
	path := l.epochPath()
	f, err := l.fs.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Size() > maxEpochFileBytes {
		return nil, errs.Corruptf(ErrBadEpochCheckpoint, path, -1, "%d bytes", fi.Size())
	}
	data := make([]byte, fi.Size())
	if _, err := io.ReadFull(io.NewSectionReader(f, 0, fi.Size()), data); err != nil {
		return nil, fmt.Errorf("log: reading %s: %w", path, err)
	}
	entries, err := ParseEpochCheckpoint(data)
	if err != nil {
		return nil, errs.Corrupt(ErrBadEpochCheckpoint, path, -1, err)
	}
	return entries, nil
}

// loadEpochs fills the epoch cache at Open, once the segments are in place:
// from the checkpoint file, cut to the log's range; after an unclean
// shutdown the batches from the recovery point on are scanned for epochs
// the file does not have yet (the file is written before every fsync that
// moves the recovery point, so what it lacks lies above it). A missing
// file (a log from before the cache) or a damaged one is rebuilt from all
// the log's batches, the damage reported in Recovery().EpochCheckpoint.
// The result is written at the next flush, not here.
func (l *Log) loadEpochs(st State) {
	l.epochs.latest.Store(UndefinedEpoch)
	entries, err := l.readEpochFile()
	start, end := l.LogStartOffset(), l.LogEndOffset()
	from := min(max(st.RecoveryPoint, start), end)
	switch {
	case err == nil:
		l.epochs.mu.Lock()
		l.epochs.entries = entries
		l.epochs.setLatestLocked()
		l.epochs.mu.Unlock()
		if st.Clean {
			from = end
		}
	case errors.Is(err, fs.ErrNotExist):
		from = start
		l.epochs.markDirty()
	default:
		l.recovery.EpochCheckpoint = err
		from = start
		l.epochs.markDirty()
	}
	l.epochs.truncateFromEnd(end)
	l.epochs.truncateFromStart(start)
	if from < end {
		l.scanEpochs(from)
	}
	l.recovery.EpochsRebuilt = err != nil
	// Append stamps the lineage's latest epoch until SetLeaderEpoch says
	// otherwise, never a lower one (which would cut the lineage).
	l.epoch.Store(max(l.epochs.latest.Load(), 0))
}

// scanEpochs assigns the leader epochs of the batches from offset from to
// the log end. A read error ends the scan: recovery has cut the log to its
// valid batches, so one is damage found later by readers too.
func (l *Log) scanEpochs(from int64) {
	pos := from
	for pos < l.LogEndOffset() {
		v, err := l.ReadBounded(pos, 1<<20, BoundLogEnd)
		if err != nil {
			return
		}
		var hdrs []record.Batch
		gerr := readpath.Guard(func() error {
			buf, err := v.Bytes()
			if err != nil {
				return err
			}
			for len(buf) >= record.HeaderSize {
				size, err := record.CheckHeader(buf)
				if err != nil || size > len(buf) {
					return fmt.Errorf("batch header: %v", err)
				}
				hdrs = append(hdrs, record.Batch(buf[:record.HeaderSize:record.HeaderSize]))
				buf = buf[size:]
			}
			for _, h := range hdrs {
				if h.LastOffset() >= pos {
					l.epochs.assign(h.PartitionLeaderEpoch(), h.BaseOffset())
					pos = h.LastOffset() + 1
				}
			}
			return nil
		})
		v.Release()
		if gerr != nil || len(hdrs) == 0 {
			return
		}
	}
}

// ErrEpochRegressed is returned by SetLeaderEpoch for an epoch below the
// latest in the log's lineage, and by AppendFollower for a batch stamped
// with one: leader epochs only rise along a log. Kafka:
// FENCED_LEADER_EPOCH.
var ErrEpochRegressed = errs.New("log: leader epoch below the log's latest", kerr.FencedLeaderEpoch)

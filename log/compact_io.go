package log

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/foliolog/folio/errs"
	"github.com/foliolog/folio/index"
	"github.com/foliolog/folio/record"
	"github.com/foliolog/folio/segment"
	"github.com/foliolog/folio/vfs"
)

// batchReader reads a segment's .log batch by batch through its own
// read-only descriptor and a buffer, with pread only. The cleaner reads
// sealed segments this way rather than through views: it reads each once,
// front to back, and a descriptor pins the inode, so what it reads is one
// version of the file even if the log replaces or deletes it meanwhile.
type batchReader struct {
	f      vfs.File
	path   string
	base   int64 // the segment's base offset
	size   int64 // bytes to read: the file's size when opened
	pos    int64 // position of the next batch
	prev   int64 // last offset of the previous batch
	buf    []byte
	bufPos int64 // file position of buf[0]
	bufLen int   // valid bytes in buf
	// tolerant ends the walk at the first batch that does not frame (the
	// tail of a segment still being written) instead of reporting it.
	tolerant bool
}

func openBatchReader(fsys vfs.FS, dir string, base int64, bufSize int) (*batchReader, error) {
	path := segment.LogPath(dir, base)
	f, err := fsys.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, fmt.Errorf("log: compaction: open %s: %w", path, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("log: compaction: stat %s: %w", path, err)
	}
	// A small segment needs no more buffer than its size; a batch larger
	// than the buffer grows it (fill).
	buf := make([]byte, max(min(int64(bufSize), fi.Size()), record.HeaderSize))
	return &batchReader{f: f, path: path, base: base, size: fi.Size(), prev: base - 1, buf: buf}, nil
}

func (r *batchReader) close() error { return r.f.Close() }

// more reports whether another batch may follow.
func (r *batchReader) more() bool { return r.pos+record.HeaderSize <= r.size }

// fill makes buf hold at least n bytes from pos (fewer at the end of the
// file), growing it for a batch larger than the buffer.
func (r *batchReader) fill(pos int64, n int) error {
	if pos >= r.bufPos && pos+int64(n) <= r.bufPos+int64(r.bufLen) {
		return nil
	}
	if n > len(r.buf) {
		r.buf = make([]byte, n)
	}
	want := int(min(int64(len(r.buf)), r.size-pos))
	got, err := r.f.ReadAt(r.buf[:want], pos)
	if err != nil && !(errors.Is(err, io.EOF) && got == want) {
		r.bufLen = 0
		return fmt.Errorf("log: compaction: read %s at %d: %w", r.path, pos, err)
	}
	r.bufPos, r.bufLen = pos, got
	return nil
}

// next returns the next batch, whole and checked (header, size, CRC,
// offsets ascending within the segment), and its position; io.EOF after the
// last one. With headerOnly it returns just the 61-byte header (checked as
// far as a header can be) and skips the records without reading them. The
// bytes are valid until the next call.
func (r *batchReader) next(headerOnly bool) (record.Batch, int64, error) {
	if !r.more() {
		if r.pos != r.size && !r.tolerant {
			return nil, r.pos, r.corrupt(r.pos, fmt.Errorf("%d stray bytes at the end", r.size-r.pos))
		}
		return nil, r.pos, io.EOF
	}
	pos := r.pos
	if err := r.fill(pos, record.HeaderSize); err != nil {
		return nil, pos, err
	}
	at := int(pos - r.bufPos)
	hdr := record.Batch(r.buf[at : at+record.HeaderSize])
	size, err := record.CheckHeader(hdr)
	if err == nil && pos+int64(size) > r.size {
		err = fmt.Errorf("batch of %d bytes runs past the end (%d)", size, r.size)
	}
	if err == nil && (hdr.BaseOffset() <= r.prev || hdr.BaseOffset() < r.base) {
		err = fmt.Errorf("base offset %d does not follow %d", hdr.BaseOffset(), r.prev)
	}
	if err != nil {
		if r.tolerant {
			r.size = pos
			return nil, pos, io.EOF
		}
		c := r.corrupt(pos, err)
		if size > 0 {
			c.AtOffset(hdr.BaseOffset())
		}
		return nil, pos, c
	}
	r.prev = hdr.LastOffset()
	r.pos = pos + int64(size)
	if headerOnly {
		return hdr, pos, nil
	}
	if err := r.fill(pos, size); err != nil {
		return nil, pos, err
	}
	at = int(pos - r.bufPos)
	b := record.Batch(r.buf[at : at+size])
	if err := b.Validate(); err != nil {
		return nil, pos, r.corrupt(pos, err).AtOffset(b.BaseOffset())
	}
	return b, pos, nil
}

// corrupt reports damage found at pos of the reader's file.
func (r *batchReader) corrupt(pos int64, err error) *errs.Corruption {
	return errs.Corrupt(ErrCorrupt, r.path, pos, err)
}

// batchErr reports err, met while working on the batch with base offset
// offset at pos of the reader's file: as damage there when it is about the
// bytes (it matches errs.ErrCorrupt), else as an error naming the batch.
func (r *batchReader) batchErr(pos, offset int64, err error) error {
	if errors.Is(err, errs.ErrCorrupt) {
		return errs.Corrupt(ErrCorrupt, r.path, pos, err).AtOffset(offset)
	}
	return fmt.Errorf("log: compaction: %s at byte %d (offset %d): %w", r.path, pos, offset, err)
}

// chainGap reports that the segments from base first to base last end at
// offset end although the next segment starts at next: the offsets of
// sealed segments run on without a gap, so the last segment lost batches.
func chainGap(dir string, first, last, end, next int64) error {
	return errs.Corruptf(ErrCorrupt, segment.LogPath(dir, last), -1,
		"compaction: segments %d to %d end at offset %d, the next starts at %d", first, last, end, next).AtOffset(end)
}

// Names of the files a cleaning writes and renames (Kafka's rules; see
// swap in compact.go).
func cleanedName(base int64, suffix string) string {
	return segment.FileName(base, suffix+cleanedSuffix)
}

// segSuffixes are a segment's three files, .log last: the steps of a swap
// rename it last, so that its .log name marks a step as done (Open treats
// index files left behind as derived data).
var segSuffixes = [3]string{segment.IndexSuffix, segment.TimeIndexSuffix, segment.LogSuffix}

// cleanedWriter writes one cleaned segment: the .log.cleaned file and both
// indexes (.index.cleaned, .timeindex.cleaned), the indexes by the segment
// package's index rule (see its documentation), so that the segment opens
// with them as they are, without a rebuild.
type cleanedWriter struct {
	fs       vfs.FS
	dir      string
	base     int64
	f        vfs.File
	w        *bufio.Writer
	off      *index.OffsetIndex
	tm       *index.TimeIndex
	interval int64
	pos      int64
	since    int64 // bytes since the last offset-index entry
	maxTs    int64
	maxTsOff int64
	last     int64 // last offset written
	batches  int
}

// createCleaned starts the cleaned segment with base offset base in dir,
// replacing what an earlier failed cleaning may have left. bufSize bounds
// the write buffer.
func createCleaned(fsys vfs.FS, dir string, base int64, segOpts *segment.Options, bufSize int) (*cleanedWriter, error) {
	w := &cleanedWriter{fs: fsys, dir: dir, base: base, interval: int64(segOpts.IndexIntervalBytes), maxTs: index.NoTimestamp, maxTsOff: -1, last: base - 1}
	for _, suf := range segSuffixes {
		// A failed pass removes its files, and Open removes any a crash
		// left, so there is rarely anything to remove.
		path := filepath.Join(dir, cleanedName(base, suf))
		if _, err := fsys.Stat(path); errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err := fsys.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("log: compaction: remove leftover: %w", err)
		}
	}
	path := filepath.Join(dir, cleanedName(base, segment.LogSuffix))
	f, err := fsys.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, fmt.Errorf("log: compaction: create %s: %w", path, err)
	}
	w.f = f
	w.w = bufio.NewWriterSize(f, bufSize)
	iopts := &index.Options{MaxIndexBytes: segOpts.MaxIndexBytes}
	if w.off, err = index.OpenOffset(fsys, filepath.Join(dir, cleanedName(base, segment.IndexSuffix)), base, true, iopts); err != nil {
		w.abort()
		return nil, fmt.Errorf("log: compaction: %w", err)
	}
	if w.tm, err = index.OpenTime(fsys, filepath.Join(dir, cleanedName(base, segment.TimeIndexSuffix)), base, true, iopts); err != nil {
		w.abort()
		return nil, fmt.Errorf("log: compaction: %w", err)
	}
	return w, nil
}

// append writes one batch (offsets ascending, checked by the caller's
// reader) and indexes it.
func (w *cleanedWriter) append(b record.Batch) error {
	size := int64(len(b))
	if w.pos+size > segment.MaxSegmentBytesLimit {
		return fmt.Errorf("log: compaction: cleaned segment %d would pass %d bytes", w.base, int64(segment.MaxSegmentBytesLimit))
	}
	if ts := b.MaxTimestamp(); ts > w.maxTs {
		w.maxTs, w.maxTsOff = ts, b.LastOffset()
	}
	if w.since > w.interval {
		w.since = 0
		// A full index takes no more entries; lookups then scan further,
		// as the segment's own rebuild would leave it.
		if !w.off.Full() {
			if err := w.off.Append(b.LastOffset(), w.pos); err != nil {
				return fmt.Errorf("log: compaction: index %d: %w", w.base, err)
			}
			if err := w.appendTime(); err != nil {
				return err
			}
		}
	}
	w.since += size
	if _, err := w.w.Write(b); err != nil {
		return fmt.Errorf("log: compaction: write cleaned segment %d: %w", w.base, err)
	}
	w.pos += size
	w.last = b.LastOffset()
	w.batches++
	return nil
}

func (w *cleanedWriter) appendTime() error {
	if w.maxTs <= index.NoTimestamp || w.tm.Full() {
		return nil
	}
	if last, ok := w.tm.LastEntry(); ok && last.Timestamp >= w.maxTs {
		return nil
	}
	if err := w.tm.Append(w.maxTs, w.maxTsOff); err != nil {
		return fmt.Errorf("log: compaction: time index %d: %w", w.base, err)
	}
	return nil
}

// finish makes the cleaned files complete and durable: the .log flushed,
// fsynced and given mtime as its modification time (the time it was last
// cleaned, which tombstone retention reads), the final time-index entry
// added, both indexes sealed (trimmed and fsynced) and closed.
//
// The time is set on the real file, outside the vfs layer, which models
// contents and names but not times, and made durable by an fsync of the
// descriptor itself: the layer's Sync is an fdatasync, which need not
// write a time.
func (w *cleanedWriter) finish(mtime time.Time) error {
	if err := w.w.Flush(); err != nil {
		return fmt.Errorf("log: compaction: write cleaned segment %d: %w", w.base, err)
	}
	if err := w.f.Sync(); err != nil {
		return fmt.Errorf("log: compaction: fsync cleaned segment %d: %w", w.base, err)
	}
	if err := os.Chtimes(w.f.OS().Name(), mtime, mtime); err != nil {
		return fmt.Errorf("log: compaction: set the time of cleaned segment %d: %w", w.base, err)
	}
	if err := w.f.OS().Sync(); err != nil {
		return fmt.Errorf("log: compaction: fsync cleaned segment %d: %w", w.base, err)
	}
	err := w.f.Close()
	w.f = nil
	if err != nil {
		return fmt.Errorf("log: compaction: close cleaned segment %d: %w", w.base, err)
	}
	if err := w.appendTime(); err != nil {
		return err
	}
	for _, x := range []interface {
		Seal() error
		Close() error
	}{w.off, w.tm} {
		if err := x.Seal(); err != nil {
			return fmt.Errorf("log: compaction: seal index of %d: %w", w.base, err)
		}
		if err := x.Close(); err != nil {
			return fmt.Errorf("log: compaction: close index of %d: %w", w.base, err)
		}
	}
	w.off, w.tm = nil, nil
	return nil
}

// abort closes whatever is open; the caller removes the files.
func (w *cleanedWriter) abort() {
	if w.f != nil {
		_ = w.f.Close()
		w.f = nil
	}
	if w.off != nil {
		_ = w.off.Close()
		w.off = nil
	}
	if w.tm != nil {
		_ = w.tm.Close()
		w.tm = nil
	}
}

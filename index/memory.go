package index

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/foliolog/folio/vfs"
)

// An index in memory holds its entries in heap memory and has no file: a
// segment read beside a writer in another process (segment.OpenReadOnly)
// keeps there the index it rebuilt from its .log, since it must not write.
// It behaves as a file-backed one (Append, lookups, Seal, TruncateTo,
// Reset, Close; Sync does nothing) except that Rename and Reactivate
// return ErrInMemory.

// memStepEntries is the smallest buffer an in-memory index grows to: 4 KiB
// of offset entries. It doubles from there.
const memStepEntries = 512

// NewOffsetInMemory returns an in-memory offset index for the segment whose
// first offset is baseOffset, holding entries, which must be in the order
// Append requires (it appends them). name stands for the index in errors.
// Its capacity is Options.MaxIndexBytes/8 entries, as a file's.
func NewOffsetInMemory(name string, baseOffset int64, entries []OffsetEntry, opts *Options) (*OffsetIndex, error) {
	t, err := memTable(name, baseOffset, entries, opts, offsetLayout, func(t table[OffsetEntry], e OffsetEntry) error {
		return (&OffsetIndex{t}).Append(e.Offset, e.Position)
	})
	if err != nil {
		return nil, err
	}
	return &OffsetIndex{t}, nil
}

// NewTimeInMemory is NewOffsetInMemory for a time index.
func NewTimeInMemory(name string, baseOffset int64, entries []TimeEntry, opts *Options) (*TimeIndex, error) {
	t, err := memTable(name, baseOffset, entries, opts, timeLayout, func(t table[TimeEntry], e TimeEntry) error {
		return (&TimeIndex{t}).Append(e.Timestamp, e.Offset)
	})
	if err != nil {
		return nil, err
	}
	return &TimeIndex{t}, nil
}

// ReadOffsetEntries reads the offset index file at path with pread (it maps
// nothing and writes nothing) and returns its longest prefix of entries in
// the order Append requires, stopping at the first entry that breaks it or
// is all zero: what the file of a live writer holds, whose preallocated
// tail is zeros and whose last entry may be half written. The entries are
// hints: the caller checks them against the .log. A missing file is an
// error matching fs.ErrNotExist.
func ReadOffsetEntries(fsys vfs.FS, path string, baseOffset int64) ([]OffsetEntry, error) {
	return readEntries(fsys, path, baseOffset, offsetLayout, func(prev *OffsetEntry, e OffsetEntry) bool {
		if e.Offset < baseOffset || e.Position < 0 {
			return false
		}
		return prev == nil || (e.Offset > prev.Offset && e.Position >= prev.Position)
	})
}

// ReadTimeEntries is ReadOffsetEntries for a time index: timestamps
// strictly increasing, offsets not decreasing.
func ReadTimeEntries(fsys vfs.FS, path string, baseOffset int64) ([]TimeEntry, error) {
	return readEntries(fsys, path, baseOffset, timeLayout, func(prev *TimeEntry, e TimeEntry) bool {
		if e.Offset < baseOffset || e.Timestamp <= NoTimestamp {
			return false
		}
		return prev == nil || (e.Timestamp > prev.Timestamp && e.Offset >= prev.Offset)
	})
}

// readEntries returns the entries of layout l in the file at path, in
// order, as far as each is not all zero and in order after the one before
// it (prev nil for the first).
func readEntries[E any](fsys vfs.FS, path string, base int64, l *layout[E], inOrder func(prev *E, e E) bool) ([]E, error) {
	var out []E
	err := readPrefix(fsys, path, l.size, func(b []byte) bool {
		e := l.decode(b, 0, base)
		var prev *E
		if n := len(out); n > 0 {
			prev = &out[n-1]
		}
		if !inOrder(prev, e) {
			return false
		}
		out = append(out, e)
		return true
	})
	return out, err
}

// readPrefix calls take for each whole entry of the file at path, in
// order, until it returns false or an entry is all zero.
func readPrefix(fsys vfs.FS, path string, size int, take func(e []byte) bool) error {
	if fsys == nil {
		fsys = vfs.Default
	}
	f, err := fsys.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		if pe, ok := errors.AsType[*os.PathError](err); ok && pe.Path == path {
			return fmt.Errorf("index: %w", err) // it names the file already
		}
		return fmt.Errorf("index: open %s: %w", path, err)
	}
	defer f.Close() // read-only: closing loses nothing
	zero := make([]byte, size)
	buf := make([]byte, 64*size*16)
	for pos := int64(0); ; {
		n, err := f.ReadAt(buf, pos)
		n -= n % size
		for i := 0; i < n; i += size {
			e := buf[i : i+size]
			if bytes.Equal(e, zero) || !take(e) {
				return nil
			}
		}
		pos += int64(n)
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("index: read %s at %d: %w", path, pos, err)
		}
		if n == 0 {
			return nil
		}
	}
}

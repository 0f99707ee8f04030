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
	c, err := newMemCore(name, baseOffset, opts, OffsetEntrySize, make([]byte, len(entries)*OffsetEntrySize))
	if err != nil {
		return nil, err
	}
	x := &OffsetIndex{c: c}
	for _, e := range entries {
		if err := x.Append(e.Offset, e.Position); err != nil {
			return nil, err
		}
	}
	return x, nil
}

// NewTimeInMemory is NewOffsetInMemory for a time index.
func NewTimeInMemory(name string, baseOffset int64, entries []TimeEntry, opts *Options) (*TimeIndex, error) {
	c, err := newMemCore(name, baseOffset, opts, TimeEntrySize, make([]byte, len(entries)*TimeEntrySize))
	if err != nil {
		return nil, err
	}
	x := &TimeIndex{c: c}
	for _, e := range entries {
		if err := x.Append(e.Timestamp, e.Offset); err != nil {
			return nil, err
		}
	}
	return x, nil
}

// ReadOffsetEntries reads the offset index file at path with pread (it maps
// nothing and writes nothing) and returns its longest prefix of entries in
// the order Append requires, stopping at the first entry that breaks it or
// is all zero: what the file of a live writer holds, whose preallocated
// tail is zeros and whose last entry may be half written. The entries are
// hints: the caller checks them against the .log. A missing file is an
// error matching fs.ErrNotExist.
func ReadOffsetEntries(fsys vfs.FS, path string, baseOffset int64) ([]OffsetEntry, error) {
	var out []OffsetEntry
	err := readPrefix(fsys, path, OffsetEntrySize, func(e []byte) bool {
		rel, pos := decodeOffsetEntry(e)
		x := OffsetEntry{Offset: baseOffset + int64(rel), Position: int64(pos)}
		if rel < 0 || pos < 0 {
			return false
		}
		if n := len(out); n > 0 && (x.Offset <= out[n-1].Offset || x.Position < out[n-1].Position) {
			return false
		}
		out = append(out, x)
		return true
	})
	return out, err
}

// ReadTimeEntries is ReadOffsetEntries for a time index: timestamps
// strictly increasing, offsets not decreasing.
func ReadTimeEntries(fsys vfs.FS, path string, baseOffset int64) ([]TimeEntry, error) {
	var out []TimeEntry
	err := readPrefix(fsys, path, TimeEntrySize, func(e []byte) bool {
		ts, rel := decodeTimeEntry(e)
		x := TimeEntry{Timestamp: ts, Offset: baseOffset + int64(rel)}
		if rel < 0 || ts <= NoTimestamp {
			return false
		}
		if n := len(out); n > 0 && (x.Timestamp <= out[n-1].Timestamp || x.Offset < out[n-1].Offset) {
			return false
		}
		out = append(out, x)
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

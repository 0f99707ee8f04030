package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sort"

	"github.com/foliolog/folio/index"
)

// maxIndexBytes bounds what is read of an index file; the log package maps
// active indexes at 10 MiB by default, and a larger configured size is rare.
const maxIndexBytes = 256 << 20

// offsetEntry is one entry of a .index file: the last offset of a batch,
// absolute, and the batch's position in the .log.
type offsetEntry struct {
	Offset int64
	Pos    int64
}

// timeEntry is one entry of a .timeindex file: a batch's max timestamp and
// its last offset, absolute.
type timeEntry struct {
	Timestamp int64
	Offset    int64
}

// indexFile is what a read of an index file found.
type indexFile struct {
	Path string
	// Missing is set when the file does not exist (the owner rebuilds it).
	Missing bool
	// Size is the file's size; Spare the bytes of all-zero entries at its
	// end: space an active index allocated ahead of its writer, which no
	// entry uses. The first batch of a segment is never indexed, so a real
	// offset entry is never all zeros.
	Size, Spare int64
	// Problems are what the file's own structure breaks: a size that is not
	// whole entries, a used entry after unused space.
	Problems []string
}

// readOffsetIndex reads a .index file whole.
func readOffsetIndex(path string, base int64) ([]offsetEntry, indexFile, error) {
	data, info, err := readIndexFile(path, index.OffsetEntrySize)
	if err != nil || info.Missing {
		return nil, info, err
	}
	n := len(data) / index.OffsetEntrySize
	out := make([]offsetEntry, 0, n)
	for i := 0; i < n; i++ {
		e := data[i*index.OffsetEntrySize:]
		out = append(out, offsetEntry{
			Offset: base + int64(binary.BigEndian.Uint32(e)),
			Pos:    int64(binary.BigEndian.Uint32(e[4:])),
		})
	}
	return out, info, nil
}

// readTimeIndex reads a .timeindex file whole.
func readTimeIndex(path string, base int64) ([]timeEntry, indexFile, error) {
	data, info, err := readIndexFile(path, index.TimeEntrySize)
	if err != nil || info.Missing {
		return nil, info, err
	}
	n := len(data) / index.TimeEntrySize
	out := make([]timeEntry, 0, n)
	for i := 0; i < n; i++ {
		e := data[i*index.TimeEntrySize:]
		out = append(out, timeEntry{
			Timestamp: int64(binary.BigEndian.Uint64(e)),
			Offset:    base + int64(binary.BigEndian.Uint32(e[8:])),
		})
	}
	return out, info, nil
}

// readIndexFile returns the used entries of an index file (whole entries up
// to the first all-zero one) and what it found about the rest.
func readIndexFile(path string, entrySize int) ([]byte, indexFile, error) {
	info := indexFile{Path: path}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		info.Missing = true
		return nil, info, nil
	}
	if err != nil {
		return nil, info, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, info, err
	}
	info.Size = st.Size()
	if info.Size > maxIndexBytes {
		info.Problems = append(info.Problems, fmt.Sprintf("%d bytes, more than an index file has; not read", info.Size))
		return nil, info, nil
	}
	data := make([]byte, info.Size)
	n, err := f.ReadAt(data, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, info, fmt.Errorf("reading %s: %w", path, err)
	}
	data = data[:n] // shorter if a live Broker trimmed the index (a seal) meanwhile
	if r := len(data) % entrySize; r != 0 {
		info.Problems = append(info.Problems, fmt.Sprintf("size %d is not a whole number of %d-byte entries", len(data), entrySize))
		data = data[:len(data)-r]
	}
	entries := len(data) / entrySize
	used := 0
	for used < entries && !allZero(data[used*entrySize:(used+1)*entrySize]) {
		used++
	}
	for i := used; i < entries; i++ {
		if !allZero(data[i*entrySize : (i+1)*entrySize]) {
			info.Problems = append(info.Problems, fmt.Sprintf("entry %d (position %d) follows unused all-zero entries", i, i*entrySize))
			break
		}
	}
	info.Spare = int64(len(data) - used*entrySize)
	return data[:used*entrySize], info, nil
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// lookupOffset returns the entry with the largest offset at or below
// offset, and false if there is none. entries must be ascending; an index
// that is not (damaged) still gives an entry that the caller checks
// against the log before trusting it.
func lookupOffset(entries []offsetEntry, offset int64) (offsetEntry, bool) {
	i := sort.Search(len(entries), func(i int) bool { return entries[i].Offset > offset })
	if i == 0 {
		return offsetEntry{}, false
	}
	return entries[i-1], true
}

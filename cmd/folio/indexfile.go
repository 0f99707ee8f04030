package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
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

// readOffsetIndex reads the used entries of a .index file: whole entries up
// to the first all-zero one. An active index has disk allocated ahead of
// its writer, all zeros, and no real entry is all zeros (the first batch of
// a segment is never indexed, so no entry has position 0). The entries are
// hints for where to start reading: the caller checks the one it uses
// against the log (seekChecked), so a damaged index costs a longer scan,
// never a wrong record. A missing or oversized file has no entries.
func readOffsetIndex(path string, base int64) ([]offsetEntry, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.Size() > maxIndexBytes {
		return nil, nil
	}
	data := make([]byte, st.Size())
	n, err := f.ReadAt(data, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	data = data[:n] // shorter if a live Broker trimmed the index (a seal) meanwhile
	const es = index.OffsetEntrySize
	out := make([]offsetEntry, 0, len(data)/es)
	for i := 0; i+es <= len(data); i += es {
		rel, pos := binary.BigEndian.Uint32(data[i:]), binary.BigEndian.Uint32(data[i+4:])
		if rel == 0 && pos == 0 {
			break
		}
		out = append(out, offsetEntry{Offset: base + int64(rel), Pos: int64(pos)})
	}
	return out, nil
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

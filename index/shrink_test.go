package index

import (
	"errors"
	"os"
	"testing"

	"github.com/foliolog/folio/vfs"
)

// staleSizeFS opens files whose Stat reports a size extra bytes above the
// real one for the first stale calls: the view of a reader that read the
// size of a live writer's index just before the writer sealed and trimmed
// it.
type staleSizeFS struct {
	vfs.FS
	extra int64
	stale int
}

func (s *staleSizeFS) OpenFile(name string, flag int, perm os.FileMode) (vfs.File, error) {
	f, err := s.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &staleSizeFile{File: f, fs: s}, nil
}

type staleSizeFile struct {
	vfs.File
	fs *staleSizeFS
}

func (f *staleSizeFile) Stat() (os.FileInfo, error) {
	fi, err := f.File.Stat()
	if err != nil || f.fs.stale == 0 {
		return fi, err
	}
	f.fs.stale--
	return grownInfo{FileInfo: fi, size: fi.Size() + f.fs.extra}, nil
}

type grownInfo struct {
	os.FileInfo
	size int64
}

func (g grownInfo) Size() int64 { return g.size }

// TestOpenIndexShrinkingUnderTheCheck: an index whose size shrinks between
// the open's stat and its read of the last entry (a read-only open beside
// a writer that trims the index as it seals the segment; the log's
// TestReadOnlyBesideLiveWriter met it, one run in ten) is checked again at
// its new size and opens with its real entries; one that keeps shrinking
// is corrupt (its users rebuild it), never an I/O error that fails a read.
func TestOpenIndexShrinkingUnderTheCheck(t *testing.T) {
	path := tempPath(t, "00000000000000000000.index")
	x := openOffset(t, path, 0, true, nil)
	for i := range int64(10) {
		mustNil(t, "Append", x.Append(i, i*100))
	}
	mustNil(t, "Close", x.Close())
	for _, writable := range []bool{false, true} {
		fsys := &staleSizeFS{FS: vfs.Default, extra: 64 * OffsetEntrySize, stale: 1}
		got, err := OpenOffset(fsys, path, 0, writable, nil)
		if err != nil {
			t.Fatalf("writable=%v: an index that shrank once under the check: %v", writable, err)
		}
		if n := got.Entries(); n != 10 {
			t.Fatalf("writable=%v: %d entries, want 10", writable, n)
		}
		mustNil(t, "Close", got.Close())

		fsys = &staleSizeFS{FS: vfs.Default, extra: 64 * OffsetEntrySize, stale: 1 << 30}
		if got, err := OpenOffset(fsys, path, 0, writable, nil); !errors.Is(err, ErrCorrupt) {
			if got != nil {
				got.Close()
			}
			t.Fatalf("writable=%v: an index that keeps shrinking: %v, want ErrCorrupt", writable, err)
		}
	}
}

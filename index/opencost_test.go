package index

import (
	"fmt"
	"os"
	"sync/atomic"
	"testing"

	"github.com/foliolog/folio/vfs"
)

// readCountingFS counts the bytes read through the files it opens, with
// Read or ReadAt. Mapped pages are not counted, and need not be: the
// sanity check reads with ReadAt so that a bad file is never mapped, and
// mapping touches no page.
type readCountingFS struct {
	vfs.FS
	bytes atomic.Int64
}

func (c *readCountingFS) OpenFile(name string, flag int, perm os.FileMode) (vfs.File, error) {
	f, err := c.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &readCountingFile{File: f, fs: c}, nil
}

type readCountingFile struct {
	vfs.File
	fs *readCountingFS
}

func (f *readCountingFile) Read(p []byte) (int, error) {
	n, err := f.File.Read(p)
	f.fs.bytes.Add(int64(n))
	return n, err
}

func (f *readCountingFile) ReadAt(p []byte, off int64) (int, error) {
	n, err := f.File.ReadAt(p, off)
	f.fs.bytes.Add(int64(n))
	return n, err
}

// Open's sanity check is O(1): it reads the first and last entries and
// nothing else, however many entries the file holds, writable or not. A
// check that scanned the entries would make opening the thousands of
// sealed segments of a large log cost a read of every index.
func TestOpenCheckReadsTwoEntries(t *testing.T) {
	for _, n := range []int64{2, 100, 200_000} {
		for _, kind := range []string{"index", "timeindex"} {
			t.Run(fmt.Sprintf("%s/%d", kind, n), func(t *testing.T) {
				path := tempPath(t, "00000000000000000000."+kind)
				es := int64(OffsetEntrySize)
				if kind == "index" {
					x := openOffset(t, path, 0, true, nil)
					for i := range n {
						mustNil(t, "Append", x.Append(i, i*100))
					}
					mustNil(t, "Close", x.Close())
				} else {
					es = TimeEntrySize
					x := openTime(t, path, 0, true, nil)
					for i := range n {
						mustNil(t, "Append", x.Append(1000+i, i))
					}
					mustNil(t, "Close", x.Close())
				}
				for _, writable := range []bool{false, true} {
					fsys := &readCountingFS{FS: vfs.Default}
					var entries int
					var closer interface{ Close() error }
					if kind == "index" {
						x, err := OpenOffset(fsys, path, 0, writable, nil)
						mustNil(t, "OpenOffset", err)
						entries, closer = x.Entries(), x
					} else {
						x, err := OpenTime(fsys, path, 0, writable, nil)
						mustNil(t, "OpenTime", err)
						entries, closer = x.Entries(), x
					}
					read := fsys.bytes.Load()
					mustNil(t, "Close", closer.Close())
					if int64(entries) != n {
						t.Fatalf("writable=%v: %d entries, want %d", writable, entries, n)
					}
					if read != 2*es {
						t.Fatalf("writable=%v: opening %d entries read %d bytes, want %d (the first and last entry)", writable, n, read, 2*es)
					}
				}
			})
		}
	}
}

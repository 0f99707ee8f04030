package vfs_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/foliolog/folio/vfs"
	"github.com/foliolog/folio/vfs/faultfs"
)

// The benchmarks run on whatever file system holds the test's temporary
// directory (state it with the numbers); the page cache is warm.

func benchFS(b *testing.B, f func(b *testing.B, fsys vfs.FS)) {
	b.Run("os", func(b *testing.B) { f(b, vfs.Default) })
	b.Run("fault", func(b *testing.B) { f(b, faultfs.New()) })
}

// BenchmarkWriteAt is the per-write overhead of the layer: 4 KiB positional
// writes cycling through a 64 MiB file.
func BenchmarkWriteAt(b *testing.B) {
	benchFS(b, func(b *testing.B, fsys vfs.FS) {
		f, err := fsys.OpenFile(filepath.Join(b.TempDir(), "seg"), os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		buf := make([]byte, 4096)
		const span = 64 << 20
		b.SetBytes(int64(len(buf)))
		var off int64
		for b.Loop() {
			if _, err := f.WriteAt(buf, off); err != nil {
				b.Fatal(err)
			}
			off = (off + int64(len(buf))) % span
		}
	})
}

// BenchmarkWriteSync is a 4 KiB write plus Sync in a file of the given
// size: for the OS, fdatasync dominates; faultfs.FS does not fsync but reads
// the whole file per Sync, which is what the size axis shows.
func BenchmarkWriteSync(b *testing.B) {
	for _, size := range []int{64 << 10, 1 << 20, 8 << 20} {
		b.Run(fmt.Sprintf("file=%dKiB", size>>10), func(b *testing.B) {
			benchFS(b, func(b *testing.B, fsys vfs.FS) {
				f, err := fsys.OpenFile(filepath.Join(b.TempDir(), "seg"), os.O_RDWR|os.O_CREATE, 0o644)
				if err != nil {
					b.Fatal(err)
				}
				defer f.Close()
				if err := f.Allocate(0, int64(size)); err != nil {
					b.Fatal(err)
				}
				buf := make([]byte, 4096)
				b.SetBytes(int64(len(buf)))
				var off int64
				for b.Loop() {
					if _, err := f.WriteAt(buf, off); err != nil {
						b.Fatal(err)
					}
					if err := f.Sync(); err != nil {
						b.Fatal(err)
					}
					off = (off + int64(len(buf))) % int64(size)
				}
			})
		})
	}
}

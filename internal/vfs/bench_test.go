package vfs

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// The benchmarks run on whatever file system holds the test's temporary
// directory (state it with the numbers); the page cache is warm.

func benchFS(b *testing.B, f func(b *testing.B, fsys FS)) {
	b.Run("os", func(b *testing.B) { f(b, Default) })
	b.Run("fault", func(b *testing.B) { f(b, NewFaultFS()) })
}

// BenchmarkWriteAt is the per-write overhead of the layer: 4 KiB positional
// writes cycling through a 64 MiB file.
func BenchmarkWriteAt(b *testing.B) {
	benchFS(b, func(b *testing.B, fsys FS) {
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
// size: for the OS, fdatasync dominates; FaultFS does not fsync but reads
// the whole file per Sync, which is what the size axis shows.
func BenchmarkWriteSync(b *testing.B) {
	for _, size := range []int{64 << 10, 1 << 20, 8 << 20} {
		b.Run(fmt.Sprintf("file=%dKiB", size>>10), func(b *testing.B) {
			benchFS(b, func(b *testing.B, fsys FS) {
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

// BenchmarkPowerCut restores a partition-like directory: 16 segment files
// of 64 KiB, each with an unsynced 4 KiB tail, and one unsynced new file.
func BenchmarkPowerCut(b *testing.B) {
	fs := NewFaultFS()
	dir := filepath.Join(b.TempDir(), "topic-0")
	if err := fs.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	const files = 16
	seg := make([]byte, 64<<10)
	tail := make([]byte, 4<<10)
	for i := range files {
		f, err := fs.OpenFile(filepath.Join(dir, fmt.Sprintf("%020d.log", i)), os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := f.Write(seg); err != nil {
			b.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			b.Fatal(err)
		}
		f.Close()
	}
	if err := fs.SyncDir(dir); err != nil {
		b.Fatal(err)
	}
	if err := fs.SyncDir(filepath.Dir(dir)); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(files, "files/op")
	for b.Loop() {
		b.StopTimer()
		for i := range files {
			f, err := fs.OpenFile(filepath.Join(dir, fmt.Sprintf("%020d.log", i)), os.O_RDWR, 0)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := f.WriteAt(tail, int64(len(seg))); err != nil {
				b.Fatal(err)
			}
		}
		g, err := fs.OpenFile(filepath.Join(dir, "new.log"), os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			b.Fatal(err)
		}
		g.Write(tail)
		b.StartTimer()
		if err := fs.PowerCut(); err != nil {
			b.Fatal(err)
		}
	}
}

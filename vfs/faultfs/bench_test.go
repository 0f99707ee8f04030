package faultfs

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkPowerCut restores a partition-like directory: 16 segment files
// of 64 KiB, each with an unsynced 4 KiB tail, and one unsynced new file.
func BenchmarkPowerCut(b *testing.B) {
	fs := New()
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

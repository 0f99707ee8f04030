package vfs_test

import (
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/foliolog/folio/vfs"
)

// The storage packages take an FS; production code passes vfs.Default.
func Example() {
	dir, err := os.MkdirTemp("", "vfs-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	var fsys vfs.FS = vfs.Default
	f, err := fsys.OpenFile(filepath.Join(dir, "00000000000000000000.index"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	// Reserve the blocks before mapping, so a mapped write cannot SIGBUS.
	if err := f.Allocate(0, 10<<20); err != nil {
		log.Fatal(err) // errors.Is(err, vfs.ErrNoSpace) on a full disk
	}
	if err := f.Sync(); err != nil {
		log.Fatal(err)
	}
	if err := fsys.SyncDir(dir); err != nil {
		log.Fatal(err)
	}
	fi, err := f.Stat()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(fi.Size())
	// Output: 10485760
}

package vfs_test

import (
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/foliolog/folio/internal/vfs"
)

// A write-then-rename that forgets to sync the directory loses the rename
// in a power cut.
func ExampleFaultFS() {
	dir, err := os.MkdirTemp("", "vfs-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	fs := vfs.NewFaultFS()
	write := func(name, content string) {
		f, err := fs.OpenFile(filepath.Join(dir, name), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
		if err != nil {
			log.Fatal(err)
		}
		defer f.Close()
		if _, err := f.Write([]byte(content)); err != nil {
			log.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			log.Fatal(err)
		}
	}
	write("checkpoint", "v1")
	if err := fs.SyncDir(dir); err != nil {
		log.Fatal(err)
	}

	write("checkpoint.tmp", "v2")
	if err := fs.Rename(filepath.Join(dir, "checkpoint.tmp"), filepath.Join(dir, "checkpoint")); err != nil {
		log.Fatal(err)
	}
	durable, _ := fs.Durable(filepath.Join(dir, "checkpoint"))
	fmt.Printf("durable before the cut: %s\n", durable)

	if err := fs.PowerCut(); err != nil {
		log.Fatal(err)
	}
	data, _ := os.ReadFile(filepath.Join(dir, "checkpoint"))
	fmt.Printf("after the cut: %s\n", data)
	_, err = os.Stat(filepath.Join(dir, "checkpoint.tmp"))
	fmt.Println("tmp file exists:", err == nil)
	// Output:
	// durable before the cut: v1
	// after the cut: v1
	// tmp file exists: false
}

// Injected failures: the second Sync fails, and a torn write stores a prefix.
func ExampleFaultFS_SetHook() {
	dir, err := os.MkdirTemp("", "vfs-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	fs := vfs.NewFaultFS()
	f, err := fs.OpenFile(filepath.Join(dir, "log"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()

	fs.SetHook(vfs.FailNth(vfs.OpWrite, 2, &vfs.ShortWriteError{N: 3}))
	n1, err1 := f.Write([]byte("first;"))
	n2, err2 := f.Write([]byte("second;"))
	fmt.Println(n1, err1)
	fmt.Println(n2, err2 != nil)
	data, _ := os.ReadFile(filepath.Join(dir, "log"))
	fmt.Printf("%s\n", data)
	// Output:
	// 6 <nil>
	// 3 true
	// first;sec
}

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

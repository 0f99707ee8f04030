package faultfs_test

import (
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/foliolog/folio/vfs/faultfs"
)

// A write-then-rename that forgets to sync the directory loses the rename
// in a power cut.
func Example() {
	dir, err := os.MkdirTemp("", "vfs-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	fs := faultfs.New()
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
func ExampleFS_SetHook() {
	dir, err := os.MkdirTemp("", "vfs-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	fs := faultfs.New()
	f, err := fs.OpenFile(filepath.Join(dir, "log"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()

	fs.SetHook(faultfs.FailNth(faultfs.OpWrite, 2, &faultfs.ShortWriteError{N: 3}))
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

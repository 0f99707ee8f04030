package readpath_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/foliolog/folio/readpath"
)

func ExampleOpen() {
	dir, err := os.MkdirTemp("", "readpath-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "00000000000000000000.log")
	if err := os.WriteFile(path, []byte("batch-one|batch-two|"), 0o644); err != nil {
		panic(err)
	}

	for _, kind := range []readpath.Kind{readpath.Mmap, readpath.Sendfile} {
		f, err := os.Open(path)
		if err != nil {
			panic(err)
		}
		// The Source owns f from here on.
		src, err := readpath.Open(kind, readpath.OSFile(f), 0)
		if err != nil {
			panic(err)
		}
		v, err := src.View(10, 10) // "batch-two|"
		if err != nil {
			panic(err)
		}
		// Mapped bytes are touched inside Guard, so a truncated file is an
		// error rather than a crash.
		err = readpath.Guard(func() error {
			b, err := v.Bytes()
			if err != nil {
				return err
			}
			fmt.Printf("%s in-process: %s\n", kind, b)
			return nil
		})
		if err != nil {
			panic(err)
		}
		fmt.Printf("%s to a writer: ", kind)
		if _, err := v.WriteTo(os.Stdout); err != nil {
			panic(err)
		}
		fmt.Println()
		v.Release() // the last reference: the file is closed here
		if err := src.Close(); err != nil {
			panic(err)
		}
	}
	files, mappings := readpath.Stats()
	fmt.Println("open files:", files, "mappings:", mappings)
	// Output:
	// mmap in-process: batch-two|
	// mmap to a writer: batch-two|
	// sendfile in-process: batch-two|
	// sendfile to a writer: batch-two|
	// open files: 0 mappings: 0
}

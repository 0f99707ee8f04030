package main

import (
	"context"
	"fmt"
	"os"
	"strings"
)

// A session at the shell: create a topic, produce keyed lines with
// acknowledgements, read them back in a format.
// (Here each command line is run in-process through run, the function
// main calls.)
func Example() {
	tmp, err := os.MkdirTemp("", "folio-example-")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(tmp)
	wd, err := os.Getwd()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.Chdir(wd)
	if err := os.Chdir(tmp); err != nil { // so that messages name ./data
		fmt.Println(err)
		return
	}
	dir := "data"
	folio := func(stdin string, args ...string) {
		e := env{ctx: context.Background(), stdin: strings.NewReader(stdin), stdout: os.Stdout, stderr: os.Stdout}
		if code := run(e, args); code != 0 {
			fmt.Println("exit status", code)
		}
	}

	folio("", "topics", "create", "-dir", dir, "-topic", "orders", "-retention.ms", "30d")
	folio("alice\tbook\nbob\tpen\nalice\tlamp\n", "produce", "-dir", dir, "-topic", "orders", "-K", `\t`, "-report")
	folio("", "consume", "-dir", dir, "-topic", "orders", "-e", "-f", `%o %k: %s\n`)
	folio("", "consume", "-dir", dir, "-topic", "orders", "-e", "-offset", "-1")
	folio("", "consume", "-dir", dir, "-topic", "invoices", "-e")
	// Output:
	// Created topic orders with 1 partition.
	// 1	0	0
	// 2	0	1
	// 3	0	2
	// 0 alice: book
	// 1 bob: pen
	// 2 alice: lamp
	// lamp
	// folio consume: unknown topic "invoices" in data
	// exit status 1
}

package main

import (
	"fmt"
	"os"
	"strings"
)

// The program's entry point is run, which main calls with the command
// line; -h prints the flags and exits 0 without measuring anything.
func Example_help() {
	code := run([]string{"-h"}, os.Stdout, os.Stdout)
	fmt.Println("exit code:", code)
	// Output:
	// Usage: go run ./bench [flags]
	//
	// Measures Folio's read paths, append, latency, recovery and partition scaling
	// and prints Markdown tables. See bench/README.md.
	//
	// Flags:
	//   -dir directory
	//     	data directory (default: a temporary directory, removed after)
	//   -full
	//     	run the whole matrix (long: about 1.5 hours on 2 cores)
	//   -json file
	//     	write every figure, with all runs, to this JSON file
	//   -quick
	//     	run every suite once at small sizes (under 30 s)
	//   -runs int
	//     	runs per figure (default 5; 1 with -quick; 7 with -full)
	//   -scale float
	//     	multiply every data size by this factor (below 1, also fewer partitions) (default 1)
	//   -server-profile directory
	//     	write CPU profiles of the fetch suite's server child (its warm-up passes) into this directory
	//   -suite string
	//     	comma-separated suites to run: read-paths, append, latency, recovery, partitions, fetch, wire-produce, wire-latency, conns (default all)
	//   -svg file
	//     	write the mmap-versus-sendfile chart to this SVG file (needs read-paths)
	// exit code: 0
}

// renderTable prints a table with the cache state of every row and each
// figure as median (min–max) of its runs; the machine is said once, at the
// top of the report.
func Example_markdownTable() {
	t := &table{Suite: "demo", Title: "one row", Params: []string{"path"}, Columns: []column{{"throughput", "MB/s"}}}
	if err := t.add([]string{"mmap view"}, "warm, 100% resident", [][]float64{{2000, 2100, 1900}}); err != nil {
		panic(err)
	}
	var b strings.Builder
	renderTable(&b, t)
	os.Stdout.WriteString(b.String())
	// Output:
	// ## demo: one row
	//
	// | path | cache | throughput (MB/s) |
	// |---|---|---:|
	// | mmap view | warm, 100% resident | 2000 (1900–2100) |
	//
	// Typical spread of a cell's runs (max − min over the median): throughput 10%.
}

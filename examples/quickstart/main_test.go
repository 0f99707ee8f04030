package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
)

// TestQuickstartTwice builds the program and runs it twice on one data
// directory: the first run creates the topic, the second finds it, and each
// reads back exactly its own records.
func TestQuickstartTwice(t *testing.T) {
	tmp := t.TempDir()
	bin := filepath.Join(tmp, "quickstart")
	gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
	build := exec.Command(gobin, "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	dir := filepath.Join(tmp, "data")
	var ends []string
	for run := range 2 {
		cmd := exec.Command(bin, "-dir", dir, "-n", "3000")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("run %d: %v\n%s", run, err, out)
		}
		text := string(out)
		want := []string{"consumed 3000 records", "produced 3000 records", "read back once"}
		if run == 0 {
			want = append(want, `created topic "orders" with 4 partitions`)
		} else {
			want = append(want, `topic "orders" exists with 4 partitions`)
		}
		for _, w := range want {
			if !strings.Contains(text, w) {
				t.Fatalf("run %d output lacks %q:\n%s", run, w, text)
			}
		}
		ends = append(ends, regexp.MustCompile(`end offsets at start: \[.*\]`).FindString(text))
		t.Logf("run %d:\n%s", run, text)
	}
	if ends[0] != "end offsets at start: [0 0 0 0]" || ends[1] == ends[0] {
		t.Fatalf("start offsets %q then %q: the second run must start after the first", ends[0], ends[1])
	}
	if _, err := os.Stat(filepath.Join(dir, "folio.format")); err != nil {
		t.Fatal(err)
	}
}

// TestQuickstartFlags checks the refusal of bad flags without building.
func TestQuickstartFlags(t *testing.T) {
	var sb strings.Builder
	if err := run([]string{"-n", "-1", "-dir", t.TempDir()}, &sb); err == nil {
		t.Fatal("a negative -n was accepted")
	}
	if err := run([]string{"-bogus"}, &sb); err == nil {
		t.Fatal("an unknown flag was accepted")
	}
}

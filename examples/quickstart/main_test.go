package main

import (
	"errors"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestQuickstartTwice builds the program and runs it twice on one data
// directory: the first run creates the topic, the second finds it, and each
// reads back exactly its own records.
func TestQuickstartTwice(t *testing.T) {
	tmp := t.TempDir()
	bin := filepath.Join(tmp, "quickstart")
	// go test puts its own GOROOT/bin first in PATH.
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Fatal(err)
	}
	build := exec.Command(gobin, "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	// -h: the flags on stderr, exit status 0; a bad flag: one line, 2.
	help := exec.Command(bin, "-h")
	var hout, herr strings.Builder
	help.Stdout, help.Stderr = &hout, &herr
	if err := help.Run(); err != nil || hout.Len() != 0 || !strings.Contains(herr.String(), "-dir") {
		t.Errorf("quickstart -h: %v, stdout %q, stderr %q", err, hout.String(), herr.String())
	}
	bad := exec.Command(bin, "-bogus")
	var bout, berr strings.Builder
	bad.Stdout, bad.Stderr = &bout, &berr
	var ee *exec.ExitError
	if err := bad.Run(); !errors.As(err, &ee) || ee.ExitCode() != 2 || bout.Len() != 0 || strings.Count(berr.String(), "\n") != 1 {
		t.Errorf("quickstart -bogus: %v, stdout %q, stderr %q; want exit status 2 and one line on stderr", err, bout.String(), berr.String())
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

// TestQuickstartFlags checks the refusal of bad flags and the help,
// without building.
func TestQuickstartFlags(t *testing.T) {
	for _, args := range [][]string{{"-n", "-1", "-dir", t.TempDir()}, {"-bogus"}, {"-n", "many"}, {"extra"}} {
		var out, errOut strings.Builder
		err := run(args, &out, &errOut)
		var u usageError
		if !errors.As(err, &u) || strings.Contains(err.Error(), "\n") || out.Len() != 0 || errOut.Len() != 0 {
			t.Errorf("quickstart %v: %v, stdout %q, stderr %q; want a one-line usage error alone", args, err, out.String(), errOut.String())
		}
	}
	for _, h := range []string{"-h", "-help"} {
		var out, errOut strings.Builder
		err := run([]string{h}, &out, &errOut)
		if !errors.Is(err, flag.ErrHelp) || out.Len() != 0 || !strings.Contains(errOut.String(), "-partitions") {
			t.Errorf("quickstart %s: %v, stdout %q, stderr %q; want the flags on stderr", h, err, out.String(), errOut.String())
		}
	}
}

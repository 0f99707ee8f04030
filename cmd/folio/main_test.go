package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// folioBin is the CLI, built once for the whole run: every command is
// tested as a user runs it, as a subprocess with its exit status and
// streams.
var folioBin string

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
		// This process is a child started by a test to hold a data
		// directory (see runHolder); it runs that and nothing else.
		os.Exit(runHolder())
	}
	tmp, err := os.MkdirTemp("", "folio-cli-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	folioBin = filepath.Join(tmp, "folio")
	build := exec.Command("go", "build", "-o", folioBin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building the CLI: %v\n%s", err, out)
		os.RemoveAll(tmp)
		os.Exit(1)
	}
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		os.RemoveAll(tmp)
		os.Exit(code)
	}))
}

// result is what one run of the CLI did.
type result struct {
	stdout, stderr string
	code           int
}

// cli runs the CLI with args and stdin and waits for it (at most a minute).
func cli(t testing.TB, stdin string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, folioBin, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errb.String()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	default:
		t.Fatalf("running folio %v: %v", args, err)
	}
	if ctx.Err() != nil {
		t.Fatalf("folio %v did not finish within a minute; stderr: %s", args, r.stderr)
	}
	return r
}

// ok runs the CLI and fails the test unless it exits 0 with nothing on
// stderr.
func ok(t testing.TB, stdin string, args ...string) string {
	t.Helper()
	r := cli(t, stdin, args...)
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("folio %s: exit %d, stderr %q, stdout %q", strings.Join(args, " "), r.code, r.stderr, r.stdout)
	}
	return r.stdout
}

// fails runs the CLI and checks that it exits with code and says what is
// wrong on exactly one line of stderr, containing every fragment, without
// a panic or stack trace.
func fails(t testing.TB, code int, fragments []string, stdin string, args ...string) result {
	t.Helper()
	r := cli(t, stdin, args...)
	checkFailure(t, r, code, fragments, args)
	return r
}

func checkFailure(t testing.TB, r result, code int, fragments []string, args []string) {
	t.Helper()
	cmdline := "folio " + strings.Join(args, " ")
	if r.code != code {
		t.Errorf("%s: exit %d, want %d; stderr %q", cmdline, r.code, code, r.stderr)
	}
	msg := strings.TrimSuffix(r.stderr, "\n")
	if msg == "" || strings.Contains(msg, "\n") || !strings.HasSuffix(r.stderr, "\n") {
		t.Errorf("%s: stderr is not one line: %q", cmdline, r.stderr)
	}
	if !strings.HasPrefix(msg, "folio") {
		t.Errorf("%s: stderr %q does not start with the program's name", cmdline, msg)
	}
	for _, bad := range []string{"panic", "goroutine ", ".go:"} {
		if strings.Contains(r.stderr, bad) {
			t.Errorf("%s: stderr looks like a crash (%q): %q", cmdline, bad, r.stderr)
		}
	}
	for _, f := range fragments {
		if !strings.Contains(msg, f) {
			t.Errorf("%s: stderr %q does not mention %q", cmdline, msg, f)
		}
	}
}

// lines splits output into its lines, without the final newline.
func lines(s string) []string {
	s = strings.TrimSuffix(s, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

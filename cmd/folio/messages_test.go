package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/foliolog/folio/topic"
)

// TestFlagErrors: a command line the flag parser refuses is one line on
// stderr naming the problem, exit status 2, and nothing on stdout: a
// redirected consume must not get help text in its data file.
func TestFlagErrors(t *testing.T) {
	dir := t.TempDir()
	ok(t, "", "topics", "create", "-dir", dir, "-topic", "t")
	for _, tc := range []struct {
		args  []string
		frags []string
	}{
		{[]string{"consume", "-dir", dir, "-topic", "t", "-bogus"}, []string{"folio consume: ", "-bogus", "folio consume -h"}},
		{[]string{"consume", "-dir", dir, "-topic", "t", "-n", "abc"}, []string{"folio consume: ", `"abc"`, "-n"}},
		{[]string{"consume", "-dir", dir, "-topic"}, []string{"folio consume: ", "-topic"}},
		{[]string{"consume", "-dir", dir, "-e"}, []string{"folio consume: -topic is required"}},
		{[]string{"topics", "create", "-dir", dir, "-bogus"}, []string{"folio topics create: ", "-bogus"}},
		{[]string{"topics", "create", "-dir", dir}, []string{"folio topics create: -topic is required"}},
		{[]string{"topics", "describe", "-dir", dir, "t"}, []string{"folio topics describe: ", `unexpected argument "t"`}},
		{[]string{"produce", "-dir", dir, "-topic", "t", "-partition", "x"}, []string{"folio produce: ", `"x"`}},
		{[]string{"groups", "-dir", dir, "-bogus"}, []string{"folio groups: ", "-bogus"}},
		{[]string{"groups", "reset", "-dir", dir, "-group", "g", "-topic", "t"}, []string{"folio groups reset: -to is required"}},
		{[]string{"groups", "reset", "-dir", dir, "-bogus"}, []string{"folio groups reset: ", "-bogus"}},
		{[]string{"dump", "-dir", dir, "-partition", "one"}, []string{"folio dump: ", `"one"`}},
		{[]string{"verify", "-dir", dir, "-x"}, []string{"folio verify: ", "-x"}},
		{[]string{"topics"}, []string{"folio topics: ", "create, delete, list or describe"}},
		{[]string{"topics", "-dir", dir}, []string{"folio topics: ", `unknown subcommand "-dir"`}},
		{[]string{"nope"}, []string{"folio: ", `unknown command "nope"`}},
	} {
		cmdline := strings.Join(tc.args, " ")
		r := fails(t, 2, tc.frags, "", tc.args...)
		if r.stdout != "" {
			t.Errorf("folio %s: stdout %q, want nothing", cmdline, r.stdout)
		}
		if strings.Contains(r.stderr, "usage: ") || strings.Contains(r.stderr, "Flags:") {
			t.Errorf("folio %s: the usage text came with the error: %q", cmdline, r.stderr)
		}
		checkSaidOnce(t, cmdline, r.stderr)
	}
}

// TestSettingErrors: a bad topic setting is reported in the words of
// topic.Config.Set, which name the key and the value, and the CLI adds
// only its prefix (the flag package's "invalid value ... for flag" would
// say both again).
func TestSettingErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args       []string
		key, value string
	}{
		{[]string{"-config", "foo=bar"}, "foo", "bar"},
		{[]string{"-config", " flush = sometimes "}, "flush", "sometimes"},
		{[]string{"-flush", "sometimes"}, "flush", "sometimes"},
		{[]string{"-retention.ms", "soon"}, "retention.ms", "soon"},
		{[]string{"-segment.bytes", "0"}, "segment.bytes", "0"},
		{[]string{"-read.path", "mmap", "-read.path", "splice", "-flush", "never"}, "read.path", "splice"}, // the first bad one
	} {
		var cfg topic.Config
		setErr := cfg.Set(tc.key, tc.value)
		if setErr == nil {
			t.Fatalf("Set(%q, %q) accepted", tc.key, tc.value)
		}
		args := append([]string{"topics", "create", "-dir", dir, "-topic", "x"}, tc.args...)
		r := fails(t, 2, nil, "", args...)
		if want := "folio topics create: " + setErr.Error() + "\n"; r.stderr != want || r.stdout != "" {
			t.Errorf("folio %s: stderr %q, stdout %q; want %q", strings.Join(args, " "), r.stderr, r.stdout, want)
		}
	}
	fails(t, 2, []string{`-config "flush": want key=value`}, "", "topics", "create", "-dir", dir, "-topic", "x", "-config", "flush")
	fails(t, 2, []string{"use -partitions"}, "", "topics", "create", "-dir", dir, "-topic", "x", "-config", "partitions=3")
	if ents, err := os.ReadDir(dir); err != nil || len(ents) != 0 {
		t.Errorf("a refused create wrote to the directory: %v, %v", ents, err)
	}
}

// TestMessagesSayItOnce: the CLI's own messages say each thing once and
// the same way whichever path found it (the read commands look at the
// files, the writing ones ask the Broker).
func TestMessagesSayItOnce(t *testing.T) {
	dir := t.TempDir()
	ok(t, "", "topics", "create", "-dir", dir, "-topic", "logs")
	exact := func(code int, want string, args ...string) {
		t.Helper()
		r := cli(t, "", args...)
		if r.code != code || r.stderr != want+"\n" || r.stdout != "" {
			t.Errorf("folio %s: exit %d, stderr %q, stdout %q; want exit %d and %q",
				strings.Join(args, " "), r.code, r.stderr, r.stdout, code, want)
		}
		checkSaidOnce(t, strings.Join(args, " "), r.stderr)
	}
	exact(1, `folio topics create: topic "logs" already exists in `+dir, "topics", "create", "-dir", dir, "-topic", "logs")
	unknown := `unknown topic "nope" in ` + dir
	exact(1, "folio consume: "+unknown, "consume", "-dir", dir, "-topic", "nope", "-e")
	exact(1, "folio consume: "+unknown, "consume", "-dir", dir, "-topic", "nope", "-group", "g", "-e")
	exact(1, "folio topics describe: "+unknown, "topics", "describe", "-dir", dir, "-topic", "nope")
	exact(1, "folio topics delete: "+unknown, "topics", "delete", "-dir", dir, "-topic", "nope")
	exact(1, "folio dump: "+unknown, "dump", "-dir", dir, "-topic", "nope")
	exact(1, "folio verify: "+unknown, "verify", "-dir", dir, "-topic", "nope")
	exact(1, "folio groups reset: "+unknown, "groups", "reset", "-dir", dir, "-group", "g", "-topic", "nope", "-to", "earliest")
	missing := filepath.Join(dir, "missing")
	exact(1, "folio topics list: not a Folio data directory: "+missing+" does not exist", "topics", "list", "-dir", missing)
	// Not a data directory: the library's message says so, the CLI adds
	// nothing to it but its prefix.
	empty := t.TempDir()
	r := fails(t, 1, []string{"folio topics list: ", empty, "not a Folio data directory"}, "", "topics", "list", "-dir", empty)
	if strings.Count(r.stderr, "not a Folio data directory") != 1 {
		t.Errorf("not a data directory, said twice: %q", r.stderr)
	}
}

// checkSaidOnce fails on the stutter of a message that layers added
// without reading each other: the program's name twice, a bare package
// name as a clause ("topic: topic already exists"), or one quoted name
// twice.
func checkSaidOnce(t *testing.T, cmdline, stderr string) {
	t.Helper()
	msg := strings.TrimSuffix(stderr, "\n")
	if strings.Count(msg, "folio:") > 1 || strings.Contains(msg, ": folio") {
		t.Errorf("folio %s: the program or package name twice: %q", cmdline, msg)
	}
	for _, clause := range strings.Split(msg, ": ")[1:] {
		if regexp.MustCompile(`^[a-z]+$`).MatchString(clause) {
			t.Errorf("folio %s: a clause that is only a package name (%q): %q", cmdline, clause, msg)
		}
	}
	seen := map[string]bool{}
	for _, q := range regexp.MustCompile(`"[^"]*"`).FindAllString(msg, -1) {
		if seen[q] {
			t.Errorf("folio %s: %s said twice: %q", cmdline, q, msg)
		}
		seen[q] = true
	}
}

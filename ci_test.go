package folio

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestReadmeAndCIRunTheSameTests: the test commands the README gives a
// newcomer are the ones .ci/run runs, flags (-timeout) included: the root
// module's, and each nested module's (the CI loop's flags for that module
// directory, cmd/folio's at full size).
func TestReadmeAndCIRunTheSameTests(t *testing.T) {
	lines := func(file string) []string {
		t.Helper()
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for line := range strings.Lines(string(b)) {
			cmd, _, _ := strings.Cut(line, "#")
			if cmd = strings.Join(strings.Fields(cmd), " "); cmd != "" {
				out = append(out, cmd)
			}
		}
		return out
	}
	readme, ci := lines("README.md"), lines(".ci/run")
	rootTests := func(ls []string) []string {
		var out []string
		for _, l := range ls {
			if strings.HasPrefix(l, "go test ") {
				out = append(out, l)
			}
		}
		return out
	}
	if r, c := rootTests(readme), rootTests(ci); len(c) != 1 || len(r) == 0 || r[0] != c[0] || !strings.Contains(c[0], "-timeout") {
		t.Fatalf("README.md's first test command %q, .ci/run's %q: want one and the same, with a -timeout", r, c)
	}

	// .ci/run's nested-module loop: `case "$dir" in DIR) flags="..." ;;`,
	// `*)` the default, then `go test -race $flags ./...`.
	caseLine := regexp.MustCompile(`^(\S+)\) flags="([^"]*)" ;;$`)
	flags := map[string]string{}
	loop := false
	for _, l := range ci {
		if m := caseLine.FindStringSubmatch(l); m != nil {
			flags[m[1]] = m[2]
		}
		loop = loop || strings.Contains(l, `go test -race $flags ./...`)
	}
	if !loop || flags["*"] == "" || !strings.Contains(flags["*"], "-timeout") {
		t.Fatalf(".ci/run's nested-module loop: flags %q, test command found %v", flags, loop)
	}
	var nested []string
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if !d.IsDir() && d.Name() == "go.mod" && path != "go.mod" {
			nested = append(nested, filepath.ToSlash(filepath.Dir(path)))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(nested) == 0 {
		t.Fatal("no nested module found")
	}
	for _, dir := range nested {
		f, ok := flags[dir]
		if !ok {
			f = flags["*"]
		}
		want := "(cd " + dir + " && go test -race " + f + " ./...)"
		found := false
		for _, l := range readme {
			found = found || l == want
		}
		if !found {
			t.Errorf("README.md lacks the line %q, the test command .ci/run runs for the nested module %s", want, dir)
		}
	}
	if _, ok := flags["cmd/folio"]; !ok || strings.Contains(flags["cmd/folio"], "-short") {
		t.Errorf(".ci/run runs cmd/folio's tests with %q: want its own case, at full size (no -short)", flags["cmd/folio"])
	}
}

package folio

import (
	"bufio"
	"bytes"
	"os/exec"
	"strings"
	"testing"
)

// layers is the module's layering, top to bottom (docs/ARCHITECTURE.md,
// "Layers"): a package may import only packages of a lower rank, except
// the bottom rank, whose packages are leaves that may use each other. A
// package path matches an entry exactly, or one ending in "/" as a prefix.
var layers = []struct {
	rank  int
	paths []string
}{
	{90, []string{"cmd/", "examples/", "bench"}},        // programs
	{80, []string{"adapters/", "kafkatest", "console"}}, // over the facade: kafkatest, the console; Watermill and Prometheus are nested modules
	{70, []string{""}},                     // the root package, the facade
	{60, []string{"transport", "replica"}}, // never import the root
	{50, []string{"partition"}},
	{40, []string{"group", "topic"}}, // side by side: neither imports the other
	{30, []string{"log"}},
	{20, []string{"segment"}},
	{10, []string{"index"}},
	{0, []string{"errs", "record", "readpath", "vfs", "vfs/", "internal/"}},
}

// rankOf returns the rank of a package path relative to the module root.
func rankOf(rel string) (int, bool) {
	best, found, bestLen := 0, false, -1
	for _, l := range layers {
		for _, p := range l.paths {
			match := rel == p || (strings.HasSuffix(p, "/") && strings.HasPrefix(rel, p)) ||
				(p != "" && !strings.HasSuffix(p, "/") && strings.HasPrefix(rel, p+"/"))
			if match && len(p) > bestLen {
				best, found, bestLen = l.rank, true, len(p)
			}
		}
	}
	return best, found
}

// TestLayers fails when a package of the module, its tests included,
// imports one of its own rank or above (see layers).
func TestLayers(t *testing.T) {
	// go test puts its own GOROOT/bin first in PATH.
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(goBin, "list", "-f",
		`{{.ImportPath}} {{join .Imports ","}} {{join .TestImports ","}} {{join .XTestImports ","}}`, "./...").Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			t.Fatalf("go list: %v\n%s", err, ee.Stderr)
		}
		t.Skipf("no go command to list the packages: %v", err)
	}
	const module = "github.com/foliolog/folio"
	rel := func(path string) (string, bool) {
		if path == module {
			return "", true
		}
		r, ok := strings.CutPrefix(path, module+"/")
		return r, ok
	}
	checked := 0
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		fields := strings.Split(sc.Text(), " ")
		from, _ := rel(fields[0])
		fromRank, ok := rankOf(from)
		if !ok {
			t.Errorf("package %q has no layer: add it to layers and to docs/ARCHITECTURE.md", fields[0])
			continue
		}
		checked++
		for i, list := range fields[1:] {
			for imp := range strings.SplitSeq(list, ",") {
				to, ok := rel(imp)
				if !ok || imp == "" {
					continue // outside the module
				}
				if i == 2 && to == from {
					continue // an external test package imports the package it tests
				}
				toRank, ok := rankOf(to)
				switch {
				case !ok:
					t.Errorf("%s imports %s, which has no layer", fields[0], imp)
				case toRank > fromRank || (toRank == fromRank && fromRank != 0):
					kind := [...]string{"", " (in its tests)", " (in its external tests)"}[i]
					t.Errorf("%s (rank %d) imports %s (rank %d)%s: a package may import only layers below its own", fields[0], fromRank, imp, toRank, kind)
				}
			}
		}
	}
	if checked < 10 {
		t.Fatalf("checked only %d packages: go list gave\n%s", checked, out)
	}
}

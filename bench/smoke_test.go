package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// smokeScale shrinks every suite's data so that the -quick path, child
// process included, runs in seconds even under -race.
const smokeScale = "0.05"

// TestQuickSmoke runs the program's -quick path in-process, end to end:
// every suite, the reading child (this test binary re-executed), the JSON
// and the SVG.
func TestQuickSmoke(t *testing.T) {
	dir := t.TempDir()
	jsonPath := filepath.Join(dir, "out.json")
	svgPath := filepath.Join(dir, "out.svg")
	data := filepath.Join(dir, "data")
	var stdout, stderr bytes.Buffer
	code := run([]string{"-quick", "-scale", smokeScale, "-dir", data, "-json", jsonPath, "-svg", svgPath}, &stdout, &stderr)
	if code != exitOK {
		t.Fatalf("exit %d\nstderr:\n%s\nstdout:\n%s", code, stderr.String(), stdout.String())
	}
	out := stdout.String()
	for _, s := range allSuites {
		if !strings.Contains(out, "## "+s+": ") {
			t.Errorf("no table of suite %s in output:\n%s", s, out)
		}
	}
	if !strings.Contains(stderr.String(), "read-paths:") {
		t.Errorf("no progress line on stderr: %q", stderr.String())
	}
	var rep report
	b, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &struct{ Tables *[]*table }{&rep.Tables}); err != nil {
		t.Fatalf("JSON: %v", err)
	}
	if len(rep.Tables) < len(allSuites) {
		t.Fatalf("JSON holds %d tables", len(rep.Tables))
	}
	for _, tb := range rep.Tables {
		if len(tb.Rows) == 0 {
			t.Errorf("table %s/%s has no rows", tb.Suite, tb.Title)
		}
	}
	// The point reads of the read-paths suite: a row per path and cache
	// state, each with a rate and a CPU time that runs produced.
	pt := newPointTable()
	if !strings.Contains(out, "## "+suiteReadPaths+": "+pt.Title) {
		t.Errorf("no point-read table in output:\n%s", out)
	}
	for _, tb := range rep.Tables {
		if tb.Title != pt.Title {
			continue
		}
		if len(tb.Rows) < len(pointPaths) {
			t.Errorf("point-read table has %d rows", len(tb.Rows))
		}
		for _, r := range tb.Rows {
			for _, f := range r.Figures[:2] {
				if !(f.Stats.Median > 0) {
					t.Errorf("point-read row %v %s: %s is %v", r.Params, r.Cache, f.Name, f.Stats.Median)
				}
			}
		}
	}
	if svg, err := os.ReadFile(svgPath); err != nil || !bytes.Contains(svg, []byte("<svg")) {
		t.Fatalf("SVG: %v", err)
	}
	// The data directory given with -dir is kept, the suites' files are not.
	left, err := os.ReadDir(data)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 0 {
		t.Errorf("suites left files behind: %v", left)
	}
}

package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func testReport() *report {
	t := &table{
		Suite:   "demo",
		Title:   "a | tricky title",
		Params:  []string{"path", "size"},
		Columns: []column{{"throughput", "MB/s"}, {"faults", ""}},
		Notes:   []string{"a note"},
	}
	if err := t.add([]string{"mmap", "1 KiB"}, "warm, 100% resident", [][]float64{{100, 300, 200}, {0, 0, 0}}); err != nil {
		panic(err)
	}
	if err := t.add([]string{"pi|pe", "1 MiB"}, "cold, 0% resident", [][]float64{{1.5}, {math.NaN()}}); err != nil {
		panic(err)
	}
	return &report{
		Machine: machine{CPU: "Test CPU", Cores: 2, GOMAXPROCS: 2, MemBytes: 4 << 30, GoVersion: "go1.26", Kernel: "Linux 6.1", Filesystem: "ext4"},
		Mode:    modeQuick, Runs: 3, Started: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Elapsed: "1s",
		Tables: []*table{t},
	}
}

func TestRenderMarkdown(t *testing.T) {
	var buf bytes.Buffer
	if err := renderMarkdown(&buf, testReport()); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{
		"# Folio benchmarks (quick mode)\n",
		"## demo: a | tricky title\n",
		"Machine: Test CPU, 2 cores (GOMAXPROCS 2), 4.0 GiB RAM, go1.26, Linux 6.1, data dir on ext4.",
		"Every cell is the median of 3 runs",
		"| path | size | cache | throughput (MB/s) | faults |\n",
		"|---|---|---|---:|---:|\n",
		// With no other cell of two runs to compare with, a spread of 100%
		// is past the fallback noise.
		"| mmap | 1 KiB | warm, 100% resident | 200 (100–300) ⚠ | 0 |\n",
		// A pipe inside a cell is escaped, a single run is marked as one,
		// and a figure no run produced reads n/a.
		"| pi\\|pe | 1 MiB | cold, 0% resident | 1.50¹ | n/a |\n",
		"¹ marks a figure only one run produced",
		"Typical spread of a cell's runs (max − min over the median): throughput 100%.",
		"- a note\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("markdown lacks %q; got:\n%s", want, out)
		}
	}
	// The machine is said once, at the top, not before every table.
	if n := strings.Count(out, "Machine: "); n != 1 {
		t.Errorf("the machine line appears %d times:\n%s", n, out)
	}
	// Every table row has as many cells as its header.
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "|") {
			cells := strings.Count(strings.ReplaceAll(line, `\|`, ""), "|") - 1
			if cells != 5 {
				t.Errorf("row %q has %d cells, want 5", line, cells)
			}
		}
	}
	// No verdict without read-paths tables.
	if strings.Contains(out, "Verdict") {
		t.Errorf("a verdict without read-paths figures:\n%s", out)
	}
}

// TestRenderMarkdownSingleRuns: a report of single runs says so once at
// the top and marks every cell, and never speaks of "the median of 1
// runs".
func TestRenderMarkdownSingleRuns(t *testing.T) {
	r := testReport()
	r.Runs = 1
	r.Tables[0].Rows = r.Tables[0].Rows[1:] // the single-run row
	var buf bytes.Buffer
	if err := renderMarkdown(&buf, r); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if strings.Contains(out, "median of 1") || !strings.Contains(out, "Every cell is a single run (marked ¹)") {
		t.Errorf("single runs not said as such:\n%s", out)
	}
	if strings.Contains(out, "Typical spread") {
		t.Errorf("a spread claimed without two runs:\n%s", out)
	}
}

// TestUnsteady: a cell is marked when its runs spread wider than the
// other cells of its column usually do, not merely because it has a
// range.
func TestUnsteady(t *testing.T) {
	tb := &table{Params: []string{"case"}, Columns: []column{{"throughput", "MB/s"}}}
	for i, runs := range [][]float64{
		{100, 105, 110}, {200, 210, 220}, {300, 310, 330}, // spreads 10%, 10%, 10%
		{1000, 2000, 3000}, // 100%: an outlier
		{500, 520, 560},    // 12%: within twice the others
		{7},                // one run: no spread
	} {
		if err := tb.add([]string{strconv.Itoa(i)}, "", [][]float64{runs}); err != nil {
			t.Fatal(err)
		}
	}
	nz := noise(tb)
	var marked []int
	for i, r := range tb.Rows {
		if unsteady(r.Figures[0].Stats, nz[i][0]) {
			marked = append(marked, i)
		}
	}
	if len(marked) != 1 || marked[0] != 3 {
		t.Errorf("unsteady cells %v, want only the outlier, 3", marked)
	}
	if got := formatFigure(tb.Rows[3].Figures[0].Stats, nz[3][0]); got != "2000 (1000–3000) ⚠" {
		t.Errorf("outlier cell %q", got)
	}
	if got := formatFigure(tb.Rows[5].Figures[0].Stats, nz[5][0]); got != "7.00¹" {
		t.Errorf("single-run cell %q", got)
	}
	// Runs within minUnsteady of the median are never unsteady, however
	// steady the rest of the column.
	if unsteady(summarize([]float64{100, 105}), 0.001) {
		t.Error("a 5% spread was called unsteady")
	}
}

func TestTableAddRejectsMisfits(t *testing.T) {
	tb := &table{Params: []string{"a"}, Columns: []column{{"x", ""}}}
	if err := tb.add([]string{"1", "2"}, "", [][]float64{{1}}); !errors.Is(err, ErrReport) {
		t.Errorf("too many params: %v", err)
	}
	if err := tb.add([]string{"1"}, "", nil); !errors.Is(err, ErrReport) {
		t.Errorf("too few columns: %v", err)
	}
	if len(tb.Rows) != 0 {
		t.Errorf("a rejected row was added")
	}
}

func TestWriteJSON(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.json")
	if err := writeJSON(path, testReport()); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var back struct {
		Machine machine
		Tables  []struct {
			Rows []struct {
				Cache   string
				Figures []struct {
					Name  string
					Stats struct {
						Median *float64
						Min    *float64
						Runs   []*float64
					}
				}
			}
		}
	}
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatalf("JSON does not parse: %v\n%s", err, b)
	}
	if back.Machine.CPU != "Test CPU" {
		t.Errorf("machine lost: %+v", back.Machine)
	}
	f := back.Tables[0].Rows[0].Figures[0]
	if f.Name != "throughput" || *f.Stats.Median != 200 || *f.Stats.Min != 100 || len(f.Stats.Runs) != 3 || *f.Stats.Runs[2] != 200 {
		t.Errorf("figure lost its runs: %+v", f)
	}
	nan := back.Tables[0].Rows[1].Figures[1].Stats
	if nan.Median != nil || len(nan.Runs) != 1 || nan.Runs[0] != nil {
		t.Errorf("NaN must be null in JSON: %+v", nan)
	}
}

func TestFormatting(t *testing.T) {
	for _, tt := range []struct {
		n    int64
		want string
	}{
		{100, "100 B"}, {1024, "1 KiB"}, {16 << 10, "16 KiB"}, {1 << 20, "1 MiB"}, {8 << 20, "8 MiB"},
		{3 << 30, "3 GiB"}, {1500, "1500 B"}, {3<<20 + 1, "3.0 MiB"},
	} {
		if got := formatBytes(tt.n); got != tt.want {
			t.Errorf("formatBytes(%d) = %q, want %q", tt.n, got, tt.want)
		}
		if tt.n%1024 == 0 || tt.n < 1<<20 {
			back, err := parseSize(tt.want)
			if err != nil || back != tt.n {
				t.Errorf("parseSize(%q) = %d, %v; want %d", tt.want, back, err, tt.n)
			}
		}
	}
	for _, bad := range []string{"", "12", "x KiB", "3 parsecs"} {
		if _, err := parseSize(bad); !errors.Is(err, ErrReport) {
			t.Errorf("parseSize(%q) = %v", bad, err)
		}
	}
	for _, tt := range []struct {
		v    float64
		want string
	}{
		{12345.6, "12346"}, {123.4, "123"}, {12.34, "12.3"}, {1.234, "1.23"}, {0.01234, "0.0123"}, {0, "0"}, {math.Inf(1), "inf"},
	} {
		if got := formatNumber(tt.v); got != tt.want {
			t.Errorf("formatNumber(%v) = %q, want %q", tt.v, got, tt.want)
		}
	}
}

func TestDescribeCache(t *testing.T) {
	for _, tt := range []struct {
		c    cacheState
		f    []float64
		want string
	}{
		{warmCache, []float64{1, 1}, "warm, 100% resident"},
		{coldCache, []float64{0, 0.001}, "cold, 0%–0.1% resident"},
		{coldCache, []float64{0.3}, "cold requested, not reached, 30.0% resident"},
		{warmCache, []float64{0.5}, "warm requested, not reached, 50.0% resident"},
		{warmCache, []float64{math.NaN()}, "warm, residency unknown"},
	} {
		if got := describeCache(tt.c, tt.f); got != tt.want {
			t.Errorf("describeCache(%v, %v) = %q, want %q", tt.c, tt.f, got, tt.want)
		}
	}
}

func TestRenderMarkdownScale(t *testing.T) {
	r := testReport()
	r.Scale = 0.05
	var buf bytes.Buffer
	if err := renderMarkdown(&buf, r); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(buf.String(), "# Folio benchmarks (quick mode, data sizes ×0.05)\n") {
		t.Fatalf("scaled run not labelled: %q", strings.SplitN(buf.String(), "\n", 2)[0])
	}
}

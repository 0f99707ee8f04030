package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"time"
)

// param is one input of a configuration ("record" = "1 KiB"). Params keep
// their order so that tables read left to right the way the matrix is built.
type param struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// column names a metric and its unit, in table order.
type column struct {
	Name string `json:"name"`
	Unit string `json:"unit"`
}

// figure is one metric of one configuration, over its runs.
type figure struct {
	Name  string  `json:"name"`
	Unit  string  `json:"unit"`
	Stats summary `json:"stats"`
}

// result is one configuration of a suite: its parameters, the cache state
// its runs were verified to be in, and one figure per table column.
type result struct {
	Params  []param  `json:"params"`
	Cache   string   `json:"cache"`
	Figures []figure `json:"figures"`
}

// table is what a suite prints: rows of results that share columns.
type table struct {
	Suite   string   `json:"suite"`
	Title   string   `json:"title"`
	Params  []string `json:"params"`
	Columns []column `json:"columns"`
	Rows    []result `json:"rows"`
	Notes   []string `json:"notes,omitempty"`
}

// add appends a row. vals holds every run of every column, in column order.
// It reports a mismatch instead of silently misaligning a row.
func (t *table) add(params []string, cache string, vals [][]float64) error {
	if len(params) != len(t.Params) {
		return fmt.Errorf("%w: table %q has %d params, row has %d", ErrReport, t.Title, len(t.Params), len(params))
	}
	if len(vals) != len(t.Columns) {
		return fmt.Errorf("%w: table %q has %d columns, row has %d", ErrReport, t.Title, len(t.Columns), len(vals))
	}
	r := result{Cache: cache}
	for i, v := range params {
		r.Params = append(r.Params, param{Name: t.Params[i], Value: v})
	}
	for i, c := range t.Columns {
		r.Figures = append(r.Figures, figure{Name: c.Name, Unit: c.Unit, Stats: summarize(vals[i])})
	}
	t.Rows = append(t.Rows, r)
	return nil
}

// report is everything one invocation measured.
type report struct {
	Machine machine   `json:"machine"`
	Mode    string    `json:"mode"`
	Suites  []string  `json:"suites"`
	Scale   float64   `json:"scale"`
	Runs    int       `json:"runs_per_figure"`
	Started time.Time `json:"started"`
	Elapsed string    `json:"elapsed"`
	Tables  []*table  `json:"tables"`
}

// MarshalJSON writes NaN (a figure no run could produce) as null, which
// encoding/json would otherwise refuse.
func (s summary) MarshalJSON() ([]byte, error) {
	runs := make([]*float64, len(s.Runs))
	for i := range s.Runs {
		if !math.IsNaN(s.Runs[i]) && !math.IsInf(s.Runs[i], 0) {
			runs[i] = &s.Runs[i]
		}
	}
	return json.Marshal(struct {
		Median *float64   `json:"median"`
		Min    *float64   `json:"min"`
		Max    *float64   `json:"max"`
		Runs   []*float64 `json:"runs"`
	}{finite(s.Median), finite(s.Min), finite(s.Max), runs})
}

func finite(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}

// writeJSON writes the whole report, every run of every figure included.
func writeJSON(path string, r *report) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("%w: %v", ErrReport, err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("bench: write %s: %w", path, err)
	}
	return nil
}

// Marks of cells that cannot carry a comparison on their own.
const (
	// markSingle follows a figure measured by one run: it shows no spread,
	// so a difference from another cell may be noise.
	markSingle = "¹"
	// markUnsteady follows a figure whose runs disagree by more than the
	// noise: see unsteady.
	markUnsteady = " ⚠"
)

// The noise a figure's runs are judged against. On a shared machine
// throughput moves between runs far more than CPU per byte, so the noise
// of a figure is what the other cells of its column show: a cell is
// unsteady when its runs spread more than unsteadyFactor times as wide as
// theirs typically do, and by more than minUnsteady of its median (runs
// closer than that agree well enough for any comparison these tables
// make). A column with no other cell of two runs or more is judged against
// fallbackUnsteady alone.
const (
	unsteadyFactor   = 2.0
	minUnsteady      = 0.10
	fallbackUnsteady = 0.25
)

// noise returns, for each cell of t (by row, then column), the typical
// spread of the other cells of its column: the median of their spreads,
// NaN if none has two runs.
func noise(t *table) [][]float64 {
	out := make([][]float64, len(t.Rows))
	for i := range t.Rows {
		out[i] = make([]float64, len(t.Columns))
	}
	for c := range t.Columns {
		for i := range t.Rows {
			var others []float64
			for j, r := range t.Rows {
				if sp := r.Figures[c].Stats.spread(); j != i && !math.IsNaN(sp) {
					others = append(others, sp)
				}
			}
			out[i][c] = median(others)
		}
	}
	return out
}

// unsteady reports whether the runs of s disagree by more than the noise
// of its column (see noise).
func unsteady(s summary, noise float64) bool {
	sp := s.spread()
	switch {
	case math.IsNaN(sp) || sp <= minUnsteady:
		return false
	case math.IsNaN(noise):
		return sp > fallbackUnsteady
	}
	return sp > unsteadyFactor*noise
}

// renderMarkdown prints the machine once, then every table with the cache
// state of each row, then the answer to "mmap or sendfile?" when the
// read-paths suite ran.
func renderMarkdown(w io.Writer, r *report) error {
	var b strings.Builder
	scale := ""
	if r.Scale != 0 && r.Scale != 1 {
		scale = fmt.Sprintf(", data sizes ×%g", r.Scale)
	}
	fmt.Fprintf(&b, "# Folio benchmarks (%s mode%s)\n\n", r.Mode, scale)
	fmt.Fprintf(&b, "Machine: %s.\n", r.Machine.line())
	fmt.Fprintf(&b, "Started %s, took %s. ", r.Started.UTC().Format(time.RFC3339), r.Elapsed)
	if r.Runs <= 1 {
		fmt.Fprintf(&b, "Every cell is a single run (marked %s): it shows no spread, so a difference between two cells may be noise. The default mode runs each cell %d times.\n\n", markSingle, defaultRuns(modeDefault))
	} else {
		fmt.Fprintf(&b, "Every cell is the median of %d runs with their (min–max). %s marks a cell whose runs spread more than %g× as wide as the other cells of its column typically do and by more than %.0f%% of its median: read a difference it shows as noise.\n\n",
			r.Runs, strings.TrimSpace(markUnsteady), unsteadyFactor, 100*minUnsteady)
		if anySingleRun(r) {
			fmt.Fprintf(&b, "%s marks a figure only one run produced: it shows no spread.\n\n", markSingle)
		}
	}
	for _, t := range r.Tables {
		renderTable(&b, t)
	}
	renderVerdict(&b, r)
	_, err := io.WriteString(w, b.String())
	return err
}

// anySingleRun reports whether some figure of r has exactly one run.
func anySingleRun(r *report) bool {
	for _, t := range r.Tables {
		for _, row := range t.Rows {
			for _, f := range row.Figures {
				if f.Stats.valid() == 1 {
					return true
				}
			}
		}
	}
	return false
}

func renderTable(b *strings.Builder, t *table) {
	fmt.Fprintf(b, "## %s: %s\n\n", t.Suite, t.Title)
	b.WriteString("|")
	for _, p := range t.Params {
		b.WriteString(" " + escapeCell(p) + " |")
	}
	b.WriteString(" cache |")
	for _, c := range t.Columns {
		h := c.Name
		if c.Unit != "" {
			h += " (" + c.Unit + ")"
		}
		b.WriteString(" " + escapeCell(h) + " |")
	}
	b.WriteString("\n|")
	for range t.Params {
		b.WriteString("---|")
	}
	b.WriteString("---|")
	for range t.Columns {
		b.WriteString("---:|")
	}
	b.WriteString("\n")
	nz := noise(t)
	for i, r := range t.Rows {
		b.WriteString("|")
		for _, p := range r.Params {
			b.WriteString(" " + escapeCell(p.Value) + " |")
		}
		b.WriteString(" " + escapeCell(r.Cache) + " |")
		for c, f := range r.Figures {
			b.WriteString(" " + formatFigure(f.Stats, nz[i][c]) + " |")
		}
		b.WriteString("\n")
	}
	if n := typicalSpreads(t); n != "" {
		b.WriteString("\nTypical spread of a cell's runs (max − min over the median): " + n + ".\n")
	}
	if len(t.Notes) > 0 {
		b.WriteString("\n")
		for _, n := range t.Notes {
			b.WriteString("- " + n + "\n")
		}
	}
	b.WriteString("\n")
}

// typicalSpreads names each column's median spread, the noise its cells
// are judged against; "" when no cell had two runs.
func typicalSpreads(t *table) string {
	var parts []string
	for c, col := range t.Columns {
		var sp []float64
		for _, r := range t.Rows {
			if v := r.Figures[c].Stats.spread(); !math.IsNaN(v) {
				sp = append(sp, v)
			}
		}
		if len(sp) > 0 {
			parts = append(parts, fmt.Sprintf("%s %.0f%%", col.Name, 100*median(sp)))
		}
	}
	return strings.Join(parts, ", ")
}

// escapeCell keeps a value from breaking the table: a pipe would start a
// new cell and a newline a new row.
func escapeCell(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	return strings.ReplaceAll(s, "\n", " ")
}

// formatFigure prints "median (min–max)", marked unsteady when the runs
// disagree by more than noise (see unsteady); a single run's value marked
// as one; "n/a" when no run produced the figure.
func formatFigure(s summary, noise float64) string {
	switch {
	case math.IsNaN(s.Median):
		return "n/a"
	case s.valid() <= 1:
		return formatNumber(s.Median) + markSingle
	case s.Min == s.Max:
		return formatNumber(s.Median)
	}
	out := fmt.Sprintf("%s (%s–%s)", formatNumber(s.Median), formatNumber(s.Min), formatNumber(s.Max))
	if unsteady(s, noise) {
		out += markUnsteady
	}
	return out
}

// formatNumber keeps about three significant digits: the runs rarely agree
// better than that, and more digits would claim a precision nobody measured.
func formatNumber(v float64) string {
	a := math.Abs(v)
	switch {
	case math.IsInf(v, 0):
		return "inf"
	case a == 0:
		return "0"
	case a >= 100:
		return fmt.Sprintf("%.0f", v)
	case a >= 10:
		return fmt.Sprintf("%.1f", v)
	case a >= 1:
		return fmt.Sprintf("%.2f", v)
	default:
		return fmt.Sprintf("%.3g", v)
	}
}

// formatBytes prints a size the way the tables name parameters: 100 B,
// 16 KiB, 1 MiB. Sizes that are not whole KiB/MiB keep their bytes.
func formatBytes(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	default:
		return fmt.Sprintf("%d B", n)
	}
}

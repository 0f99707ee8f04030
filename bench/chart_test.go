package main

import (
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

func readPathsReport(t *testing.T) *report {
	t.Helper()
	mk := func(title string) *table {
		return &table{Suite: suiteReadPaths, Title: title, Params: []string{"path", "record", "batch", "fetch", "consumers"},
			Columns: []column{{"throughput", "MB/s"}, {"CPU", "ns/B"}}}
	}
	in, tcp := mk("in-process consumer"), mk("consumer in a child process over loopback TCP")
	add := func(tb *table, path, rec, cons, cache string, mb float64) {
		if err := tb.add([]string{path, rec, "16 KiB", "1 MiB", cons}, cache, [][]float64{{mb - 1, mb, mb + 1}, {1}}); err != nil {
			t.Fatal(err)
		}
	}
	for i, rec := range []string{"100 B", "1 KiB", "16 KiB"} {
		v := float64(1000 * (i + 1))
		add(in, "mmap view", rec, "1", "warm, 100% resident", v)
		add(in, "mmap view", rec, "4", "warm, 100% resident", 99999) // filtered: 4 consumers
		add(in, "mmap view", rec, "1", "cold, 0% resident", 99999)   // filtered: cold
		add(tcp, "sendfile", rec, "1", "warm, 100% resident", v/2)
	}
	// A 64 KiB fetch row measured first must not displace the 1 MiB ones.
	if err := in.add([]string{"mmap view", "100 B", "16 KiB", "64 KiB", "1"}, "warm, 100% resident", [][]float64{{99999}, {1}}); err != nil {
		t.Fatal(err)
	}
	in.Rows = append(in.Rows[len(in.Rows)-1:], in.Rows[:len(in.Rows)-1]...)
	return &report{Machine: machine{CPU: "cpu", Kernel: "k", Filesystem: "ext4"}, Tables: []*table{in, tcp}}
}

func TestChartData(t *testing.T) {
	series, caption, err := chartData(readPathsReport(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(series) != 2 || series[0].Label != "in-process mmap view" || series[1].Label != "TCP sendfile" {
		t.Fatalf("series %+v", series)
	}
	for _, s := range series {
		if len(s.Points) != 3 {
			t.Fatalf("%s: %d points, want the 3 warm single-consumer rows", s.Label, len(s.Points))
		}
		for _, p := range s.Points {
			th := p.Throughput
			if th.Median > 3000 || th.Min != th.Median-1 || th.Max != th.Median+1 {
				t.Fatalf("%s: point %+v is not a warm single-consumer median with its range", s.Label, p)
			}
			if p.CPU.Median != 1 {
				t.Fatalf("%s: point %+v lost its CPU per byte", s.Label, p)
			}
		}
	}
	if series[0].Points[2].Record != 16<<10 || series[0].Points[2].Throughput.Median != 3000 {
		t.Fatalf("16 KiB point: %+v", series[0].Points[2])
	}
	if !strings.Contains(caption, "1 consumer") || !strings.Contains(caption, "1 MiB fetches") {
		t.Fatalf("caption %q", caption)
	}
	if _, _, err := chartData(&report{}); err == nil {
		t.Fatal("a report without read-paths rows charted")
	}
}

func TestWriteChart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.svg")
	if err := writeChart(path, readPathsReport(t)); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for _, want := range []string{"<svg", "TCP sendfile", "in-process mmap view", "16 KiB", "CPU per byte", "throughput"} {
		if !strings.Contains(s, want) {
			t.Errorf("SVG lacks %q", want)
		}
	}
	// Every text names a generic family to fall back on.
	if n, m := strings.Count(s, "font-family:"), strings.Count(s, chartFontFamily); n == 0 || n != m {
		t.Errorf("%d of %d font-family declarations have the fallbacks %q", m, n, chartFontFamily)
	}
	// Legend entries are drawn apart: consecutive baselines at least the
	// font size from each other.
	var ys []float64
	for _, label := range []string{"in-process mmap view", "TCP sendfile"} {
		m := regexp.MustCompile(`<text x="[^"]*" y="([^"]*)"[^>]*\n?[^>]*>` + regexp.QuoteMeta(label) + `</text>`).FindStringSubmatch(s)
		if m == nil {
			t.Fatalf("no legend text %q", label)
		}
		y, _ := strconv.ParseFloat(m[1], 64)
		ys = append(ys, y)
	}
	if d := math.Abs(ys[0] - ys[1]); d < 12 {
		t.Errorf("legend entries %.1f points apart, under the 12-point text's height", d)
	}
	// The x axis reaches past the last tick, so its label is not cut.
	if !regexp.MustCompile(`>16 KiB</text>`).MatchString(s) {
		t.Errorf("the 16 KiB tick label is missing or cut")
	}
}

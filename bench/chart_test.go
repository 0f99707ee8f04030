package main

import (
	"os"
	"path/filepath"
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
			if p.Med > 3000 || p.Min != p.Med-1 || p.Max != p.Med+1 {
				t.Fatalf("%s: point %+v is not a warm single-consumer median with its range", s.Label, p)
			}
		}
	}
	if series[0].Points[2].Record != 16<<10 || series[0].Points[2].Med != 3000 {
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
	for _, want := range []string{"<svg", "TCP sendfile", "in-process mmap view", "16 KiB"} {
		if !strings.Contains(s, want) {
			t.Errorf("SVG lacks %q", want)
		}
	}
}

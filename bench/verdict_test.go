package main

import (
	"strings"
	"testing"
)

// verdictReport builds read-paths tables with the columns the suite
// writes. fig gives each path's runs of throughput and CPU per byte for a
// record size.
func verdictReport(t *testing.T, runs int, fig func(path, rec string) (thr, cpu []float64)) *report {
	t.Helper()
	params := []string{"path", "record", "batch", "fetch", "consumers"}
	in := &table{Suite: suiteReadPaths, Title: "in-process consumer", Params: params,
		Columns: []column{{"throughput", "MB/s"}, {"records", "M/s"}, {"CPU", "ns/B"}}}
	tcp := &table{Suite: suiteReadPaths, Title: "consumer in a child process over loopback TCP", Params: params,
		Columns: []column{{"throughput", "MB/s"}, {"sender CPU", "ns/B"}, {"reader CPU", "ns/B"}}}
	for _, rec := range []string{"100 B", "16 KiB"} {
		for _, p := range []string{"mmap view", "pread"} {
			thr, cpu := fig(p, rec)
			if err := in.add([]string{p, rec, "16 KiB", "1 MiB", "1"}, "warm, 100% resident", [][]float64{thr, thr, cpu}); err != nil {
				t.Fatal(err)
			}
		}
		for _, p := range []string{"sendfile", "mmap + write", "pread + write"} {
			thr, cpu := fig(p, rec)
			reader := []float64{0.2}
			if p == "sendfile" {
				reader = []float64{0.3} // 50% more than mmap + write's
			}
			if err := tcp.add([]string{p, rec, "16 KiB", "1 MiB", "1"}, "cold, 0% resident", [][]float64{thr, cpu, reader}); err != nil {
				t.Fatal(err)
			}
		}
	}
	return &report{Mode: modeDefault, Runs: runs, Tables: []*table{in, tcp}}
}

func renderedVerdict(r *report) string {
	var b strings.Builder
	renderVerdict(&b, r)
	return b.String()
}

// TestVerdict: the answer follows the figures: per case the winner on
// each measure and by how much, per consumer the tally, and the read
// path the CPU per byte favours.
func TestVerdict(t *testing.T) {
	three := func(v float64) []float64 { return []float64{v * 0.99, v, v * 1.01} }
	out := renderedVerdict(verdictReport(t, 3, func(path, rec string) ([]float64, []float64) {
		switch path {
		case "mmap view":
			return three(1000), three(0.8) // 20% less CPU than pread
		case "pread":
			return three(1000), three(1.0) // even throughput
		case "sendfile":
			return three(1500), three(0.5) // 50% more throughput, 50% less CPU
		}
		return three(1000), three(1.0)
	}))
	for _, want := range []string{
		"## Verdict: mmap or sendfile?",
		"In every case: batch 16 KiB, fetch 1 MiB, consumers 1.",
		"| consumer | record | cache | throughput | CPU per byte |",
		"| in-process | 100 B | warm | even (mmap 1000, sendfile 1000 MB/s) | **mmap**, 20% less (mmap 0.8, sendfile 1.00 ns/B) |",
		"| over TCP | 16 KiB | cold | **sendfile**, 50% more (mmap 1000, sendfile 1500 MB/s) | **sendfile**, 50% less (mmap 1.00, sendfile 0.5 ns/B) |",
		"less CPU per byte with mmap in 2 (by 20%), sendfile in 0, even in 0 of 2 cases",
		"The runs told the two apart in 2 of the 2 CPU comparisons",
		"The reading process spent a median 50% more CPU per byte with sendfile",
		"**Answer from this run: read.path=mmap for topics read in the process; read.path=sendfile for topics served over sockets.**",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("verdict lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "Every comparison rests on single runs") || strings.Contains(out, "¹") {
		t.Errorf("runs of three called single:\n%s", out)
	}

	// Reversed figures give the reverse answer.
	out = renderedVerdict(verdictReport(t, 3, func(path, rec string) ([]float64, []float64) {
		switch path {
		case "pread", "mmap + write":
			return three(1000), three(0.5)
		}
		return three(1000), three(1.0)
	}))
	if !strings.Contains(out, "read.path=sendfile for topics read in the process; read.path=mmap for topics served over sockets") {
		t.Errorf("reversed figures, same answer:\n%s", out)
	}
}

// TestVerdictDoubt: a comparison the runs cannot carry says why.
func TestVerdictDoubt(t *testing.T) {
	out := renderedVerdict(verdictReport(t, 1, func(path, rec string) ([]float64, []float64) {
		if path == "sendfile" || path == "pread" {
			return []float64{1058}, []float64{0.1}
		}
		return []float64{58}, []float64{0.2}
	}))
	for _, want := range []string{
		"Every figure is a single run (¹).",
		"**sendfile**, 1724% more (mmap 58.0, sendfile 1058 MB/s)¹",
		"Every comparison rests on single runs",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("single-run verdict lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "told the two apart") {
		t.Errorf("single runs counted as telling paths apart:\n%s", out)
	}

	// Overlapping runs: the winner by median is named, with the doubt.
	out = renderedVerdict(verdictReport(t, 3, func(path, rec string) ([]float64, []float64) {
		if path == "sendfile" || path == "pread" {
			return []float64{800, 1200, 1600}, []float64{0.9, 1, 1.1}
		}
		return []float64{900, 1000, 1100}, []float64{0.9, 1, 1.1}
	}))
	if !strings.Contains(out, "**sendfile**, 20% more (mmap 1000, sendfile 1200 MB/s); runs overlap") {
		t.Errorf("overlapping runs not marked:\n%s", out)
	}
	if !strings.Contains(out, "either read path (this run tells no difference)") && !strings.Contains(out, "narrowly (on throughput alone)") {
		t.Errorf("an even CPU split did not fall back to throughput:\n%s", out)
	}

	// Without read-paths tables there is no verdict.
	if out := renderedVerdict(testReport()); out != "" {
		t.Errorf("verdict without read paths: %q", out)
	}
}

func TestCacheAsked(t *testing.T) {
	for in, want := range map[string]string{
		"warm, 100% resident":                         "warm",
		"cold, 0%–0.1% resident":                      "cold",
		"cold requested, not reached, 30.0% resident": "cold (not reached)",
		"writes to new files (page cache)":            "writes to new files (page cache)",
	} {
		if got := cacheAsked(in); got != want {
			t.Errorf("cacheAsked(%q) = %q, want %q", in, got, want)
		}
	}
}

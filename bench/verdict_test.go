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

// pointTable is the read-paths point-read table with the suite's own
// columns. fig gives a path's runs of reads per second, CPU per read and
// disk read per read in a cache state.
func pointTable(t *testing.T, fig func(path, cache string) (rate, cpu, disk []float64)) *table {
	t.Helper()
	pt := newPointTable()
	for _, rec := range []string{"100 B", "16 KiB"} {
		for _, c := range []struct{ state, cache, reads string }{
			{"warm", "warm, 100% resident", "20000"},
			{"cold", "cold, 0% resident", "1000"},
		} {
			for _, p := range []string{"mmap view", "pread"} {
				rate, cpu, disk := fig(p, c.state)
				faults := []float64{0.05}
				if err := pt.add([]string{p, rec, "16 KiB", c.reads}, c.cache, [][]float64{rate, cpu, faults, faults, disk}); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	return pt
}

// TestVerdictPointReads: point reads are set out in a table of their
// own, tallied per cache state with what they read from the disk, and
// answered per cache state when the states disagree, without changing
// the answer for streaming consumers.
func TestVerdictPointReads(t *testing.T) {
	three := func(v float64) []float64 { return []float64{v * 0.99, v, v * 1.01} }
	streams := func(path, rec string) ([]float64, []float64) {
		if path == "mmap view" || path == "sendfile" {
			return three(1000), three(0.8)
		}
		return three(1000), three(1.0)
	}
	r := verdictReport(t, 3, streams)
	r.Tables = append(r.Tables, pointTable(t, func(path, cache string) ([]float64, []float64, []float64) {
		switch {
		case cache == "warm" && path == "mmap view":
			return three(300), three(2), three(0) // 50% more reads, a third less CPU
		case cache == "warm":
			return three(200), three(3), three(0)
		case path == "mmap view":
			return three(10), three(40), three(64) // cold: read-around reads 4x more
		}
		return three(20), three(20), three(16)
	}))
	out := renderedVerdict(r)
	containsAll(t, out, "verdict",
		"Point reads (one record at a random offset per read, in the process)",
		"In every case: batch 16 KiB.",
		"| consumer | record | reads per run | cache | reads per second | CPU per read | disk read per read |",
		"| point reads | 100 B | 20000 | warm | **mmap**, 50% more (mmap 300, sendfile 200 k/s) | **mmap**, 33% less (mmap 2.00, sendfile 3.00 µs/read) | none (0 KiB/read for both) |",
		"| point reads | 16 KiB | 1000 | cold | **sendfile**, 100% more (mmap 10.0, sendfile 20.0 k/s) | **sendfile**, 50% less (mmap 40.0, sendfile 20.0 µs/read) | **sendfile**, 75% less (mmap 64.0, sendfile 16.0 KiB/read) |",
		// The streaming consumers' tallies hold only their own rows.
		"less CPU per byte with mmap in 2 (by 20%), sendfile in 0, even in 0 of 2 cases",
		"**Point reads in the process** (mmap view against pread). Warm: less CPU per read with mmap in 2 (by 33%), sendfile in 0, even in 0 of 2 cases; more reads per second with mmap in 2 (by 50%), sendfile in 0, even in 0 of 2 cases.",
		"Cold: less CPU per read with mmap in 0, sendfile in 2 (by 50%), even in 0 of 2 cases; more reads per second with mmap in 0, sendfile in 2 (by 100%), even in 0 of 2 cases; less read from the disk with mmap in 0, sendfile in 2 (by 75%), even in 0 of 2 cases.",
		"The runs told the two apart in 4 of the 4 CPU comparisons and 4 of the 4 reads per second comparisons.",
		"**Answer from this run: read.path=mmap for topics read in the process; read.path=sendfile for topics served over sockets; for topics read at random offsets in the process, read.path=mmap with a warm cache, read.path=sendfile with a cold cache.**",
		"Point reads are answered the same way on CPU per read",
	)
	if strings.Count(out, "| point reads |") != 4 {
		t.Errorf("want 4 point-read cases:\n%s", out)
	}
	// The stream table is as it was without point reads.
	plain := renderedVerdict(verdictReport(t, 3, streams))
	streamTable := func(s string) string {
		i := strings.Index(s, "| consumer |")
		return s[i : i+strings.Index(s[i:], "\n\n")]
	}
	if got, want := streamTable(out), streamTable(plain); got != want {
		t.Errorf("point reads changed the stream table:\n%s\nwant\n%s", got, want)
	}
	// Point reads do not enter the chart.
	if a, b := mustChart(t, r), mustChart(t, verdictReport(t, 3, streams)); a != b {
		t.Errorf("point reads changed the chart's series: %d against %d", a, b)
	}

	// When both cache states favour one path, the answer is that path.
	r = &report{Mode: modeDefault, Runs: 3, Tables: []*table{pointTable(t, func(path, cache string) ([]float64, []float64, []float64) {
		if path == "pread" {
			return three(100), three(5), three(16)
		}
		return three(100), three(4), three(16)
	})}}
	out = renderedVerdict(r)
	containsAll(t, out, "point-only verdict",
		"**Answer from this run: read.path=mmap for topics read at random offsets in the process.**",
		"less read from the disk with mmap in 0, sendfile in 0, even in 2 of 2 cases",
	)
	if strings.Contains(out, "| in-process |") || strings.Contains(out, "**Consumers") {
		t.Errorf("point-only verdict names streaming consumers:\n%s", out)
	}
	if strings.Contains(out, "the answer rests on CPU") {
		t.Errorf("an even disk read is said to oppose the answer:\n%s", out)
	}

	// When the path with less CPU read more from the disk (mmap's
	// read-around, cold), the summary says so beside the answer.
	r = &report{Mode: modeDefault, Runs: 3, Tables: []*table{pointTable(t, func(path, cache string) ([]float64, []float64, []float64) {
		switch {
		case path == "pread" && cache == "cold":
			return three(100), three(5), three(16)
		case cache == "cold":
			return three(110), three(4), three(64)
		case path == "pread":
			return three(100), three(5), three(0)
		}
		return three(110), three(4), three(0)
	})}}
	out = renderedVerdict(r)
	containsAll(t, out, "verdict",
		"**Answer from this run: read.path=mmap for topics read at random offsets in the process.**",
		"Cold, the answer rests on CPU, but read.path=mmap read more from the disk in more of these cases than read.path=sendfile",
	)
	if strings.Contains(out, "Warm, the answer rests on CPU") {
		t.Errorf("a warm cache that read nothing is said to read more:\n%s", out)
	}
}

// containsAll reports each of wants that out lacks, naming out as what.
func containsAll(t *testing.T, out, what string, wants ...string) {
	t.Helper()
	for _, want := range wants {
		if !strings.Contains(out, want) {
			t.Errorf("%s lacks %q:\n%s", what, want, out)
		}
	}
}

func mustChart(t *testing.T, r *report) int {
	t.Helper()
	series, _, err := chartData(r)
	if err != nil {
		t.Fatal(err)
	}
	return len(series)
}

// TestCompareZero: a zero is a figure only for a cost that can truly be
// none; two of them are no comparison, one beats any cost.
func TestCompareZero(t *testing.T) {
	fig := func(v float64) summary { return summarize([]float64{v, v, v}) }
	for _, tt := range []struct {
		m           measure
		winner      string
		doubt       string
		describeHas string
	}{
		{measure{zeroOK: true, unit: "KiB/read", mmap: fig(0), send: fig(0)}, "", "none", "none (0 KiB/read for both)"},
		{measure{zeroOK: true, unit: "KiB/read", mmap: fig(0), send: fig(16)}, "mmap", "", "**mmap**, 100% less"},
		{measure{unit: "ns/B", mmap: fig(0), send: fig(1)}, "", "not measured", "n/a"},
		// A stray block across a run is not a cost: no "100% less".
		{measure{zeroOK: true, unit: "KiB/read", mmap: fig(0), send: fig(0.0004)}, "", "none", "none (under 0.01 KiB/read for both"},
	} {
		o := tt.m.compare()
		if o.winner != tt.winner || o.doubt != tt.doubt {
			t.Errorf("%+v: winner %q doubt %q, want %q %q", tt.m, o.winner, o.doubt, tt.winner, tt.doubt)
		}
		if d := describeOutcome(tt.m, o); !strings.Contains(d, tt.describeHas) {
			t.Errorf("%+v: %q lacks %q", tt.m, d, tt.describeHas)
		}
	}
}

package main

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// The report ends with the answer to the question the read-paths suite
// exists for: "mmap or sendfile, which should I use?". A topic's read.path
// chooses, for each kind of consumer, between two of the measured paths;
// the answer compares those two per case (record size, batch, fetch,
// consumers, cache) on throughput and on CPU per byte, and says which won,
// by how much, and whether the runs can tell.

// choice is what read.path chooses between for one kind of consumer.
type choice struct {
	consumer string // the verdict table's name of the consumer
	who      string // the summary's
	mmap     string // the path of read.path=mmap, as the table names it
	sendfile string // the path of read.path=sendfile
	cpu      string // the table's CPU-per-byte column for the sending side
}

var choices = []choice{
	{consumer: "in-process", who: "topics read in the process", mmap: "mmap view", sendfile: "pread", cpu: "CPU"},
	{consumer: "over TCP", who: "topics served over sockets", mmap: "mmap + write", sendfile: "sendfile", cpu: "sender CPU"},
}

const (
	// evenWithin is the difference of medians below which two paths are
	// called even: closer than that, no table here tells them apart.
	evenWithin = 0.05
	// readerCPU is the TCP table's column of the reading child's CPU.
	readerCPU = "reader CPU"
)

// measure is one figure both paths of a case have.
type measure struct {
	name         string // "throughput", "CPU per byte"
	unit         string
	higherBetter bool
	mmap, send   summary
	// noise is each side's column noise (see noise in report.go).
	mmapNoise, sendNoise float64
}

// outcome is a comparison of the two paths on one measure.
type outcome struct {
	winner string  // "mmap", "sendfile" or "" for even
	by     float64 // how much better the winner is: a fraction of the loser's figure
	// doubt says why the difference may be noise: "single run", "runs
	// overlap", "unsteady"; "" when the runs tell the paths apart.
	doubt string
}

func (m measure) compare() outcome {
	var o outcome
	a, b := m.mmap.Median, m.send.Median
	if math.IsNaN(a) || math.IsNaN(b) || a <= 0 || b <= 0 {
		return outcome{doubt: "not measured"}
	}
	better, worse, name := a, b, "mmap"
	if (b > a) == m.higherBetter {
		better, worse, name = b, a, "sendfile"
	}
	if m.higherBetter {
		o.by = better/worse - 1
	} else {
		o.by = 1 - better/worse
	}
	if math.Abs(better-worse)/math.Max(better, worse) >= evenWithin {
		o.winner = name
	}
	switch {
	case m.mmap.valid() < 2 || m.send.valid() < 2:
		o.doubt = "single run"
	case math.Max(m.mmap.Min, m.send.Min) <= math.Min(m.mmap.Max, m.send.Max):
		o.doubt = "runs overlap"
	case unsteady(m.mmap, m.mmapNoise) || unsteady(m.send, m.sendNoise):
		o.doubt = "unsteady"
	}
	return o
}

// verdictCase is one configuration both paths of a choice ran in.
type verdictCase struct {
	choice   choice
	params   []param // without the path
	cache    string  // the cache state asked for: warm, cold
	measures []measure
	// readerMmap and readerSend are the reading child's CPU per byte
	// (TCP only; NaN medians otherwise).
	readerMmap, readerSend summary
}

// verdictCases collects the cases of every choice from the read-paths
// tables, in table order.
func verdictCases(r *report) []verdictCase {
	var out []verdictCase
	for _, t := range r.Tables {
		if t.Suite != suiteReadPaths {
			continue
		}
		nz := noise(t)
		col := func(name string) int {
			return slices.IndexFunc(t.Columns, func(c column) bool { return c.Name == name })
		}
		thr := col("throughput")
		for _, ch := range choices {
			cpu := col(ch.cpu)
			rcpu := col(readerCPU)
			if thr < 0 || cpu < 0 {
				continue
			}
			// Rows of the mmap path, each paired with the sendfile row of
			// the same parameters and cache state.
			for i, rm := range t.Rows {
				if pathOf(rm) != ch.mmap {
					continue
				}
				for j, rs := range t.Rows {
					if pathOf(rs) != ch.sendfile || !sameCase(rm, rs) {
						continue
					}
					vc := verdictCase{choice: ch, params: withoutPath(rm.Params), cache: cacheAsked(rm.Cache),
						readerMmap: summarize(nil), readerSend: summarize(nil)}
					vc.measures = []measure{
						{name: "throughput", unit: t.Columns[thr].Unit, higherBetter: true,
							mmap: rm.Figures[thr].Stats, send: rs.Figures[thr].Stats, mmapNoise: nz[i][thr], sendNoise: nz[j][thr]},
						{name: "CPU per byte", unit: t.Columns[cpu].Unit,
							mmap: rm.Figures[cpu].Stats, send: rs.Figures[cpu].Stats, mmapNoise: nz[i][cpu], sendNoise: nz[j][cpu]},
					}
					if rcpu >= 0 {
						vc.readerMmap, vc.readerSend = rm.Figures[rcpu].Stats, rs.Figures[rcpu].Stats
					}
					out = append(out, vc)
					break
				}
			}
		}
	}
	return out
}

func pathOf(r result) string {
	for _, p := range r.Params {
		if p.Name == "path" {
			return p.Value
		}
	}
	return ""
}

func withoutPath(ps []param) []param {
	return slices.DeleteFunc(slices.Clone(ps), func(p param) bool { return p.Name == "path" })
}

// sameCase reports whether two rows differ only in their path.
func sameCase(a, b result) bool {
	return slices.Equal(withoutPath(a.Params), withoutPath(b.Params)) && cacheAsked(a.Cache) == cacheAsked(b.Cache)
}

// cacheAsked is the cache state a row's runs were prepared for, from its
// cache column ("warm, 100% resident" is warm; "cold requested, not
// reached, 30% resident" is cold, not reached).
func cacheAsked(cache string) string {
	state, rest, _ := strings.Cut(cache, ",")
	if s, ok := strings.CutSuffix(state, " requested"); ok && strings.Contains(rest, "not reached") {
		return s + " (not reached)"
	}
	return state
}

// renderVerdict writes the answer: a table of every case, a summary per
// kind of consumer, and the read path to use for each. It writes nothing
// when no read-paths table holds both paths of a choice.
func renderVerdict(b *strings.Builder, r *report) {
	cases := verdictCases(r)
	if len(cases) == 0 {
		return
	}
	single := allSingle(cases)
	b.WriteString("## Verdict: mmap or sendfile?\n\n")
	b.WriteString("A topic's read.path setting chooses for all its consumers. With mmap, consumers in the process read mmap views and sockets get write(2) from the mapping; with sendfile, consumers in the process get a pread copy and sockets get sendfile(2). Each case below sets those two rows of the read-paths tables side by side, named by the setting, and gives the winner by their medians and by how much it did better: more throughput, less CPU per byte of the sending process.")
	if single {
		fmt.Fprintf(b, " Every figure is a single run (%s).\n\n", markSingle)
	} else {
		b.WriteString(" Where the runs cannot tell the two apart, the cell says why: runs that overlap, a single run, or runs that disagree by more than the noise (unsteady).\n\n")
	}

	// Parameters that vary between cases become columns; the others are
	// said once.
	var varying, fixed []string
	for i, p := range cases[0].params {
		vals := map[string]bool{}
		for _, c := range cases {
			vals[c.params[i].Value] = true
		}
		if len(vals) > 1 {
			varying = append(varying, p.Name)
		} else {
			fixed = append(fixed, p.Name+" "+p.Value)
		}
	}
	if len(fixed) > 0 {
		b.WriteString("In every case: " + strings.Join(fixed, ", ") + ".\n\n")
	}
	b.WriteString("| consumer |")
	for _, n := range varying {
		b.WriteString(" " + escapeCell(n) + " |")
	}
	b.WriteString(" cache | throughput | CPU per byte |\n|---|")
	for range varying {
		b.WriteString("---|")
	}
	b.WriteString("---|---|---|\n")
	for _, c := range cases {
		b.WriteString("| " + c.choice.consumer + " |")
		for _, p := range c.params {
			if slices.Contains(varying, p.Name) {
				b.WriteString(" " + escapeCell(p.Value) + " |")
			}
		}
		b.WriteString(" " + c.cache + " |")
		for _, m := range c.measures {
			b.WriteString(" " + describeOutcome(m, m.compare()) + " |")
		}
		b.WriteString("\n")
	}
	b.WriteString("\n")
	var answers []string
	for _, ch := range choices {
		var mine []verdictCase
		for _, c := range cases {
			if c.choice == ch {
				mine = append(mine, c)
			}
		}
		if len(mine) == 0 {
			continue
		}
		summary, answer := summarizeChoice(ch, mine, !single)
		b.WriteString("- " + summary + "\n")
		answers = append(answers, answer)
	}
	fmt.Fprintf(b, "\n**Answer from this run: %s.** It rests on CPU per byte, which other load on the machine disturbs less than throughput; throughput decides only where CPU per byte is split evenly.", strings.Join(answers, "; "))
	if single {
		fmt.Fprintf(b, " Every comparison rests on single runs: take it as a first look, and run the default mode (%d runs per cell) before relying on it.", defaultRuns(modeDefault))
	}
	b.WriteString("\n\n")
}

// describeOutcome is one cell of the verdict table: "**sendfile**, 67%
// more (mmap 1487, sendfile 2490 MB/s)", or "even (...)", with the doubt.
func describeOutcome(m measure, o outcome) string {
	if o.doubt == "not measured" {
		return "n/a"
	}
	figures := fmt.Sprintf("mmap %s, sendfile %s %s", formatNumber(m.mmap.Median), formatNumber(m.send.Median), m.unit)
	var s string
	switch {
	case o.winner == "":
		s = "even (" + figures + ")"
	case m.higherBetter:
		s = fmt.Sprintf("**%s**, %.0f%% more (%s)", o.winner, 100*o.by, figures)
	default:
		s = fmt.Sprintf("**%s**, %.0f%% less (%s)", o.winner, 100*o.by, figures)
	}
	switch {
	case o.doubt == "single run":
		s += markSingle
	case o.doubt == "" || o.winner == "": // an even result needs no doubt
	default:
		s += "; " + o.doubt
	}
	return s
}

// tally counts one measure's outcomes over cases.
type tally struct {
	mmap, send, even int
	// mmapBy and sendBy are the winners' margins.
	mmapBy, sendBy []float64
	// sure is how many outcomes the runs could tell apart.
	sure int
}

func (t tally) cases() int { return t.mmap + t.send + t.even }

func tallyOf(cases []verdictCase, measure int) tally {
	var t tally
	for _, c := range cases {
		o := c.measures[measure].compare()
		if o.doubt == "not measured" {
			continue
		}
		if o.doubt == "" {
			t.sure++
		}
		switch o.winner {
		case "mmap":
			t.mmap++
			t.mmapBy = append(t.mmapBy, o.by)
		case "sendfile":
			t.send++
			t.sendBy = append(t.sendBy, o.by)
		default:
			t.even++
		}
	}
	return t
}

// describe is "mmap in 7 of 12 cases (by 8–31%, median 19%), sendfile
// in 1 (by 6%), even in 4".
func (t tally) describe() string {
	one := func(k int, by []float64) string {
		switch {
		case k == 0:
			return "0"
		case k == 1 || math.Round(100*slices.Min(by)) == math.Round(100*slices.Max(by)):
			return fmt.Sprintf("%d (by %.0f%%)", k, 100*slices.Max(by))
		}
		return fmt.Sprintf("%d (by %.0f–%.0f%%, median %.0f%%)", k, 100*slices.Min(by), 100*slices.Max(by), 100*median(by))
	}
	return fmt.Sprintf("mmap in %s, sendfile in %s, even in %d of %d cases", one(t.mmap, t.mmapBy), one(t.send, t.sendBy), t.even, t.cases())
}

// summarizeChoice tallies both measures for one kind of consumer and
// returns that summary and the read path to use. The answer rests on CPU
// per byte, which other load on the machine disturbs less than
// throughput; where CPU per byte is split evenly, throughput decides.
// sure says whether to count the comparisons the runs could tell apart
// (none can with single runs).
func summarizeChoice(ch choice, cases []verdictCase, sure bool) (summary, answer string) {
	thr, cpu := tallyOf(cases, 0), tallyOf(cases, 1)
	var s strings.Builder
	fmt.Fprintf(&s, "**Consumers %s** (%s against %s): less CPU per byte with %s; more throughput with %s.",
		ch.consumer, ch.mmap, ch.sendfile, cpu.describe(), thr.describe())
	if sure {
		fmt.Fprintf(&s, " The runs told the two apart in %d of the %d CPU comparisons and %d of the %d throughput comparisons.",
			cpu.sure, cpu.cases(), thr.sure, thr.cases())
	}
	if d, ok := readerCost(cases); ok {
		word := "more"
		if d < 0 {
			word, d = "less", -d
		}
		fmt.Fprintf(&s, " The reading process spent a median %.0f%% %s CPU per byte with sendfile: on loopback it shares this machine's cores; over a network it is another machine, and the sender's CPU is what counts.", 100*d, word)
	}
	switch {
	case cpu.mmap > cpu.send:
		answer = "read.path=mmap for " + ch.who
	case cpu.send > cpu.mmap:
		answer = "read.path=sendfile for " + ch.who
	case thr.mmap > thr.send:
		answer = "read.path=mmap for " + ch.who + ", narrowly (on throughput alone)"
	case thr.send > thr.mmap:
		answer = "read.path=sendfile for " + ch.who + ", narrowly (on throughput alone)"
	default:
		answer = "for " + ch.who + " either read path (this run tells no difference)"
	}
	return s.String(), answer
}

// readerCost is the median relative difference of the reader's CPU per
// byte, sendfile against mmap, over the cases that measured it.
func readerCost(cases []verdictCase) (float64, bool) {
	var d []float64
	for _, c := range cases {
		m, s := c.readerMmap.Median, c.readerSend.Median
		if m > 0 && s > 0 {
			d = append(d, s/m-1)
		}
	}
	if len(d) == 0 {
		return 0, false
	}
	return median(d), true
}

// allSingle reports whether every figure of the cases is a single run.
func allSingle(cases []verdictCase) bool {
	for _, c := range cases {
		for _, m := range c.measures {
			if m.mmap.valid() > 1 || m.send.valid() > 1 {
				return false
			}
		}
	}
	return true
}

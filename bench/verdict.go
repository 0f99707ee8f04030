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
	thr      string // the table's throughput column
	cpu      string // the table's CPU column for the sending side
	// per is what the CPU column is per ("byte", "read"), and rate what
	// the summary calls more of the throughput column.
	per, rate string
	// point marks point reads: a case is one record read at a time, so
	// it is set out in a table of its own, with what the reads took from
	// the disk, and answered per cache state (see summarizeChoice).
	point bool
}

var choices = []choice{
	{consumer: "in-process", who: "topics read in the process", mmap: "mmap view", sendfile: "pread",
		thr: "throughput", cpu: "CPU", per: "byte", rate: "throughput"},
	{consumer: "over TCP", who: "topics served over sockets", mmap: "mmap + write", sendfile: "sendfile",
		thr: "throughput", cpu: "sender CPU", per: "byte", rate: "throughput"},
	// The point-read table's columns ("reads", no "throughput") keep its
	// rows out of the in-process choice, and the other tables' rows out
	// of this one.
	{consumer: "point reads", who: "topics read at random offsets in the process", mmap: "mmap view", sendfile: "pread",
		thr: "reads", cpu: "CPU", per: "read", rate: "reads per second", point: true},
}

// diskRead is the point-read table's column of what the reads made the
// kernel read from the disk.
const diskRead = "disk read"

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
	// zeroOK marks a cost that can truly be nothing (the disk read of a
	// warm file): a zero there is a figure, elsewhere a run that measured
	// nothing.
	zeroOK     bool
	mmap, send summary
	// noise is each side's column noise (see noise in report.go).
	mmapNoise, sendNoise float64
}

// zeroBelow is where a zeroOK cost counts as nothing: under a hundredth
// of its unit (0.01 KiB of disk read per read) is a stray block or two
// across a run, not a cost of the path.
const zeroBelow = 0.01

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
	switch {
	case math.IsNaN(a) || math.IsNaN(b) || a < 0 || b < 0:
		return outcome{doubt: "not measured"}
	case m.zeroOK && a < zeroBelow && b < zeroBelow:
		// A stray block (0.0004 KiB a read) against none is not "100%
		// less": both read nothing worth comparing.
		return outcome{doubt: "none"}
	case !m.zeroOK && (a == 0 || b == 0):
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
		for _, ch := range choices {
			thr, cpu := col(ch.thr), col(ch.cpu)
			rcpu, disk := col(readerCPU), col(diskRead)
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
						{name: ch.rate, unit: t.Columns[thr].Unit, higherBetter: true,
							mmap: rm.Figures[thr].Stats, send: rs.Figures[thr].Stats, mmapNoise: nz[i][thr], sendNoise: nz[j][thr]},
						{name: "CPU per " + ch.per, unit: t.Columns[cpu].Unit,
							mmap: rm.Figures[cpu].Stats, send: rs.Figures[cpu].Stats, mmapNoise: nz[i][cpu], sendNoise: nz[j][cpu]},
					}
					if ch.point && disk >= 0 {
						vc.measures = append(vc.measures, measure{name: "disk read per read", unit: t.Columns[disk].Unit, zeroOK: true,
							mmap: rm.Figures[disk].Stats, send: rs.Figures[disk].Stats, mmapNoise: nz[i][disk], sendNoise: nz[j][disk]})
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
	streams := slices.DeleteFunc(slices.Clone(cases), func(c verdictCase) bool { return c.choice.point })
	points := slices.DeleteFunc(slices.Clone(cases), func(c verdictCase) bool { return !c.choice.point })
	b.WriteString("## Verdict: mmap or sendfile?\n\n")
	b.WriteString("A topic's read.path setting chooses for all its consumers. With mmap, consumers in the process read mmap views and sockets get write(2) from the mapping; with sendfile, consumers in the process get a pread copy and sockets get sendfile(2). Each case below sets those two rows of the read-paths tables side by side, named by the setting, and gives the winner by their medians and by how much it did better: more throughput, less CPU per byte of the sending process.")
	if single {
		fmt.Fprintf(b, " Every figure is a single run (%s).\n\n", markSingle)
	} else {
		b.WriteString(" Where the runs cannot tell the two apart, the cell says why: runs that overlap, a single run, or runs that disagree by more than the noise (unsteady).\n\n")
	}
	renderCases(b, streams)
	if len(points) > 0 {
		b.WriteString("Point reads (one record at a random offset per read, in the process) set the same two rows side by side per read: more reads per second, less CPU per read, and less read from the disk, read-ahead included.\n\n")
		renderCases(b, points)
	}
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
	if len(points) > 0 {
		b.WriteString(" Point reads are answered the same way on CPU per read, reads per second deciding a tie, for each cache state apart: a topic read at random is mostly in the page cache or mostly not, and the two states may want different paths.")
	}
	if single {
		fmt.Fprintf(b, " Every comparison rests on single runs: take it as a first look, and run the default mode (%d runs per cell) before relying on it.", defaultRuns(modeDefault))
	}
	b.WriteString("\n\n")
}

// renderCases writes one verdict table: a row per case, a column per
// parameter that varies between them (the others are said once), then
// the cache state and a cell per measure. The cases share their
// parameters and measures.
func renderCases(b *strings.Builder, cases []verdictCase) {
	if len(cases) == 0 {
		return
	}
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
	b.WriteString(" cache |")
	for _, m := range cases[0].measures {
		b.WriteString(" " + escapeCell(m.name) + " |")
	}
	b.WriteString("\n|---|")
	for range varying {
		b.WriteString("---|")
	}
	b.WriteString("---|")
	for range cases[0].measures {
		b.WriteString("---|")
	}
	b.WriteString("\n")
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
}

// describeOutcome is one cell of the verdict table: "**sendfile**, 67%
// more (mmap 1487, sendfile 2490 MB/s)", or "even (...)", with the doubt.
func describeOutcome(m measure, o outcome) string {
	switch o.doubt {
	case "not measured":
		return "n/a"
	case "none":
		if m.mmap.Median == 0 && m.send.Median == 0 {
			return "none (0 " + m.unit + " for both)"
		}
		return fmt.Sprintf("none (under %g %s for both: mmap %s, sendfile %s)", zeroBelow, m.unit, formatNumber(m.mmap.Median), formatNumber(m.send.Median))
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
		if o.doubt == "not measured" || o.doubt == "none" {
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

// summarizeChoice tallies the measures for one kind of consumer and
// returns that summary and the read path to use. The answer rests on CPU
// per byte (per read), which other load on the machine disturbs less
// than throughput; where CPU is split evenly, throughput decides. Point
// reads are tallied and answered per cache state: a topic read at random
// is mostly cached or mostly not, and each state may want its own path.
// sure says whether to count the comparisons the runs could tell apart
// (none can with single runs).
func summarizeChoice(ch choice, cases []verdictCase, sure bool) (summary, answer string) {
	var s strings.Builder
	if ch.point {
		fmt.Fprintf(&s, "**Point reads in the process** (%s against %s).", ch.mmap, ch.sendfile)
		type picked struct {
			path   string
			narrow bool
		}
		var picks []picked
		var parts []string
		for _, state := range cacheStates(cases) {
			mine := slices.DeleteFunc(slices.Clone(cases), func(c verdictCase) bool { return c.cache != state })
			fmt.Fprintf(&s, " %s: %s.", capitalize(state), describeTallies(ch, mine))
			path, narrow := pick(tallyOf(mine, 0), tallyOf(mine, 1))
			if other := diskOpposes(path, mine); other != "" {
				fmt.Fprintf(&s, " %s, the answer rests on CPU, but read.path=%s read more from the disk in more of these cases than read.path=%s: where the data does not stay cached, that is the cost to weigh.",
					capitalize(state), path, other)
			}
			picks = append(picks, picked{path, narrow})
			parts = append(parts, ch.cacheAnswer(path, narrow, state))
		}
		if slices.ContainsFunc(picks, func(p picked) bool { return p != picks[0] }) {
			answer = "for " + ch.who + ", " + strings.Join(parts, ", ")
		} else {
			answer = ch.answer(picks[0].path, picks[0].narrow)
		}
	} else {
		fmt.Fprintf(&s, "**Consumers %s** (%s against %s): %s.", ch.consumer, ch.mmap, ch.sendfile, describeTallies(ch, cases))
		answer = ch.answer(pick(tallyOf(cases, 0), tallyOf(cases, 1)))
	}
	if sure {
		thr, cpu := tallyOf(cases, 0), tallyOf(cases, 1)
		fmt.Fprintf(&s, " The runs told the two apart in %d of the %d CPU comparisons and %d of the %d %s comparisons.",
			cpu.sure, cpu.cases(), thr.sure, thr.cases(), ch.rate)
	}
	if d, ok := readerCost(cases); ok {
		word := "more"
		if d < 0 {
			word, d = "less", -d
		}
		fmt.Fprintf(&s, " The reading process spent a median %.0f%% %s CPU per byte with sendfile: on loopback it shares this machine's cores; over a network it is another machine, and the sender's CPU is what counts.", 100*d, word)
	}
	return s.String(), answer
}

// describeTallies is "less CPU per byte with mmap in ...; more throughput
// with ...", and what the reads took from the disk where cases measured
// it (point reads).
func describeTallies(ch choice, cases []verdictCase) string {
	thr, cpu := tallyOf(cases, 0), tallyOf(cases, 1)
	s := fmt.Sprintf("less CPU per %s with %s; more %s with %s", ch.per, cpu.describe(), ch.rate, thr.describe())
	if len(cases[0].measures) > 2 {
		if disk := tallyOf(cases, 2); disk.cases() > 0 {
			s += "; less read from the disk with " + disk.describe()
		}
	}
	return s
}

// diskOpposes returns the other path when cases measured disk reads and
// path read more from the disk in more of them than the other did, ""
// otherwise.
func diskOpposes(path string, cases []verdictCase) string {
	if path == "" || len(cases) == 0 || len(cases[0].measures) < 3 {
		return ""
	}
	disk := tallyOf(cases, 2)
	switch {
	case path == "mmap" && disk.send > disk.mmap:
		return "sendfile"
	case path == "sendfile" && disk.mmap > disk.send:
		return "mmap"
	}
	return ""
}

// pick is the read path the tallies favour: the one with less CPU in
// more cases, or where CPU is split evenly the one with more throughput
// (narrow); "" when neither tells.
func pick(thr, cpu tally) (path string, narrow bool) {
	switch {
	case cpu.mmap > cpu.send:
		return "mmap", false
	case cpu.send > cpu.mmap:
		return "sendfile", false
	case thr.mmap > thr.send:
		return "mmap", true
	case thr.send > thr.mmap:
		return "sendfile", true
	}
	return "", false
}

// cacheAnswer words pick's result for one cache state, a part of a
// point-read answer that differs between states: "read.path=mmap with a
// warm cache".
func (ch choice) cacheAnswer(path string, narrow bool, state string) string {
	switch {
	case path == "":
		return "either read path with a " + state + " cache"
	case narrow:
		return "read.path=" + path + " with a " + state + " cache, narrowly (on " + ch.rate + " alone)"
	}
	return "read.path=" + path + " with a " + state + " cache"
}

// answer words pick's result for ch: "read.path=mmap for topics read in
// the process".
func (ch choice) answer(path string, narrow bool) string {
	switch {
	case path == "":
		return "for " + ch.who + " either read path (this run tells no difference)"
	case narrow:
		return "read.path=" + path + " for " + ch.who + ", narrowly (on " + ch.rate + " alone)"
	}
	return "read.path=" + path + " for " + ch.who
}

// cacheStates are the cache states of cases, in the order they first
// appear.
func cacheStates(cases []verdictCase) []string {
	var out []string
	for _, c := range cases {
		if !slices.Contains(out, c.cache) {
			out = append(out, c.cache)
		}
	}
	return out
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
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

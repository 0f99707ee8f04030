package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
)

// Suite names, in the order they run.
const (
	suiteReadPaths   = "read-paths"
	suiteAppend      = "append"
	suiteLatency     = "latency"
	suiteRecovery    = "recovery"
	suitePartitions  = "partitions"
	suiteFetch       = "fetch"
	suiteWireProduce = "wire-produce"
	suiteWireLatency = "wire-latency"
	suiteConns       = "conns"
)

var allSuites = []string{suiteReadPaths, suiteAppend, suiteLatency, suiteRecovery, suitePartitions, suiteFetch, suiteWireProduce, suiteWireLatency, suiteConns}

// Modes. The default mode is the documented subset of the full matrix that
// finishes in under three minutes on a 2-core machine.
const (
	modeDefault = "default"
	modeQuick   = "quick"
	modeFull    = "full"
)

// config is the parsed command line. The zero value is not used: parseFlags
// fills every field, and validate names the flag of a bad value.
type config struct {
	// Mode is modeDefault, modeQuick (every suite once at small sizes) or
	// modeFull (the whole matrix).
	Mode string
	// Suites to run, in run order. Default: every suite.
	Suites []string
	// Runs per figure; each figure is their median with min and max.
	// Default: 5 (default mode), 1 (quick), 7 (full).
	Runs int
	// Scale multiplies every data size of every suite. Default 1; values
	// below 1 make runs shorter and noisier (the smoke test uses this).
	Scale float64
	// JSONPath, when set, receives every figure with all its runs.
	JSONPath string
	// ServerProfile, when set, is a directory that receives a CPU profile
	// of the server child for each untimed warm-up pass of the fetch
	// suite (fetch-<read path>-<fetch size>.pprof). Default: none.
	ServerProfile string
	// SVGPath, when set, receives the mmap-versus-sendfile chart.
	SVGPath string
	// Dir is the data directory. Default: a new directory under
	// os.TempDir(), removed at the end. A given directory is kept; the
	// files the bench writes into it are removed.
	Dir string
}

// defaultRuns is the number of runs per figure of each mode.
func defaultRuns(mode string) int {
	switch mode {
	case modeQuick:
		return 1
	case modeFull:
		return 7
	}
	return 5
}

// parseFlags parses args (without the program name). -h prints the usage
// on w and returns flag.ErrHelp; any other error is returned alone, to be
// printed on one line.
func parseFlags(args []string, w io.Writer) (*config, error) {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	quick := fs.Bool("quick", false, "run every suite once at small sizes (under 30 s)")
	full := fs.Bool("full", false, "run the whole matrix (long: about 1.5 hours on 2 cores)")
	suites := fs.String("suite", "", "comma-separated suites to run: "+strings.Join(allSuites, ", ")+" (default all)")
	runs := fs.Int("runs", 0, "runs per figure (default 5; 1 with -quick; 7 with -full)")
	scale := fs.Float64("scale", 1, "multiply every data size by this factor (below 1, also fewer partitions)")
	jsonPath := fs.String("json", "", "write every figure, with all runs, to this JSON `file`")
	svgPath := fs.String("svg", "", "write the mmap-versus-sendfile chart to this SVG `file` (needs read-paths)")
	dir := fs.String("dir", "", "data `directory` (default: a temporary directory, removed after)")
	serverProfile := fs.String("server-profile", "", "write CPU profiles of the fetch suite's server child (its warm-up passes) into this `directory`")
	fs.Usage = func() {} // the flag package calls it on every error too
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(w, "Usage: go run ./bench [flags]\n\n"+
				"Measures Folio's read paths, append, latency, recovery and partition scaling\n"+
				"and prints Markdown tables. See bench/README.md.\n\nFlags:\n")
			fs.SetOutput(w)
			fs.PrintDefaults()
			return nil, err
		}
		return nil, fmt.Errorf("%w: %v (run with -h for the flags)", ErrUsage, err)
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("%w: unexpected argument %q", ErrUsage, fs.Arg(0))
	}
	cfg := &config{Mode: modeDefault, Scale: *scale, Runs: *runs, JSONPath: *jsonPath, SVGPath: *svgPath, Dir: *dir, ServerProfile: *serverProfile}
	switch {
	case *quick && *full:
		return nil, fmt.Errorf("%w: -quick and -full exclude each other", ErrUsage)
	case *quick:
		cfg.Mode = modeQuick
	case *full:
		cfg.Mode = modeFull
	}
	if cfg.Runs == 0 {
		cfg.Runs = defaultRuns(cfg.Mode)
	}
	cfg.Suites = allSuites
	if *suites != "" {
		cfg.Suites = nil
		for _, s := range strings.Split(*suites, ",") {
			s = strings.TrimSpace(s)
			if s == "" {
				continue
			}
			if s == "all" {
				cfg.Suites = append(cfg.Suites, allSuites...)
				continue
			}
			cfg.Suites = append(cfg.Suites, s)
		}
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	// Run order is fixed, whatever order the flag listed them in, and each
	// suite runs once.
	var ordered []string
	for _, s := range allSuites {
		if slices.Contains(cfg.Suites, s) {
			ordered = append(ordered, s)
		}
	}
	cfg.Suites = ordered
	return cfg, nil
}

// validate names the flag of the first bad value.
func (c *config) validate() error {
	switch c.Mode {
	case modeDefault, modeQuick, modeFull:
	default:
		return fmt.Errorf("%w: mode %q", ErrUsage, c.Mode)
	}
	if len(c.Suites) == 0 {
		return fmt.Errorf("%w: -suite selects no suite", ErrUsage)
	}
	for _, s := range c.Suites {
		if !slices.Contains(allSuites, s) {
			return fmt.Errorf("%w: -suite: unknown suite %q (have %s)", ErrUsage, s, strings.Join(allSuites, ", "))
		}
	}
	if c.Runs < 1 || c.Runs > 1000 {
		return fmt.Errorf("%w: -runs %d: want 1..1000", ErrUsage, c.Runs)
	}
	if math.IsNaN(c.Scale) || c.Scale <= 0 || c.Scale > 1000 {
		return fmt.Errorf("%w: -scale %v: want a factor in (0, 1000]", ErrUsage, c.Scale)
	}
	if c.ServerProfile != "" {
		if fi, err := os.Stat(c.ServerProfile); err != nil || !fi.IsDir() {
			return fmt.Errorf("%w: -server-profile %s: not a directory", ErrUsage, c.ServerProfile)
		}
	}
	if c.SVGPath != "" && !slices.Contains(c.Suites, suiteReadPaths) {
		return fmt.Errorf("%w: -svg charts the %s suite, which -suite leaves out", ErrUsage, suiteReadPaths)
	}
	return nil
}

// scaled applies -scale to a size, never below floor: a suite needs some
// minimum amount of data to measure anything (one batch, one segment).
func (c *config) scaled(n, floor int64) int64 {
	v := int64(float64(n) * c.Scale)
	return max(v, floor)
}

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"syscall"
	"time"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// Exit codes.
const (
	exitOK    = 0
	exitFail  = 1 // a suite failed; the tables of the others are still printed
	exitUsage = 2
)

// run is the whole program, callable in-process by the smoke test.
func run(args []string, stdout, stderr io.Writer) int {
	if addr, ok := childAddr(args); ok {
		return childMain(addr, stderr)
	}
	if kind, dir, ok := serverChildArgs(args); ok {
		return serverChildMain(kind, dir, stdout, os.Stdin, stderr)
	}
	cfg, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		fmt.Fprintln(stderr, err)
		return exitUsage
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := runSuites(ctx, cfg, newProgress(stderr))
	code := exitOK
	if err != nil {
		fmt.Fprintln(stderr, err)
		code = exitFail
	}
	if rep == nil {
		return exitFail
	}
	if err := renderMarkdown(stdout, rep); err != nil {
		fmt.Fprintln(stderr, err)
		code = exitFail
	}
	if cfg.JSONPath != "" {
		if err := writeJSON(cfg.JSONPath, rep); err != nil {
			fmt.Fprintln(stderr, err)
			code = exitFail
		}
	}
	if cfg.SVGPath != "" {
		if err := writeChart(cfg.SVGPath, rep); err != nil {
			fmt.Fprintln(stderr, err)
			code = exitFail
		}
	}
	return code
}

// env is what a suite gets: the configuration, a fresh data directory of
// its own, the progress line and the machine description.
type env struct {
	cfg     *config
	dir     string
	prog    *progress
	machine machine
}

// step reports progress for the suite.
func (e *env) step(suite, format string, args ...any) { e.prog.step(suite, format, args...) }

type suiteFunc func(ctx context.Context, e *env) ([]*table, error)

var suiteFuncs = map[string]suiteFunc{
	suiteReadPaths:   runReadPaths,
	suiteAppend:      runAppend,
	suiteLatency:     runLatency,
	suiteRecovery:    runRecovery,
	suitePartitions:  runPartitions,
	suiteFetch:       runFetch,
	suiteWireProduce: runWireProduce,
	suiteWireLatency: runWireLatency,
	suiteConns:       runConns,
}

// runSuites runs the selected suites in order. A failing suite does not
// stop the others: its error is returned with the report of everything that
// was measured.
func runSuites(ctx context.Context, cfg *config, prog *progress) (*report, error) {
	root, cleanup, err := dataRoot(cfg.Dir)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	start := time.Now()
	rep := &report{Machine: describeMachine(root), Mode: cfg.Mode, Suites: cfg.Suites, Scale: cfg.Scale, Runs: cfg.Runs, Started: start}
	var errs []error
	for _, name := range cfg.Suites {
		if err := ctx.Err(); err != nil {
			errs = append(errs, fmt.Errorf("bench: interrupted before %s: %w", name, err))
			break
		}
		dir, err := os.MkdirTemp(root, name+"-")
		if err != nil {
			errs = append(errs, fmt.Errorf("bench: %s: %w", name, err))
			continue
		}
		e := &env{cfg: cfg, dir: dir, prog: prog, machine: rep.Machine}
		prog.step(name, "starting")
		tables, err := suiteFuncs[name](ctx, e)
		rep.Tables = append(rep.Tables, tables...)
		if err != nil {
			errs = append(errs, fmt.Errorf("bench: suite %s: %w", name, err))
		}
		if err := os.RemoveAll(dir); err != nil {
			errs = append(errs, fmt.Errorf("bench: remove %s: %w", dir, err))
		}
	}
	prog.done()
	rep.Elapsed = time.Since(start).Round(100 * time.Millisecond).String()
	return rep, errors.Join(errs...)
}

// dataRoot returns the directory the suites write under. Without -dir it
// is a new temporary directory, removed by cleanup; a given directory is
// created if missing and kept (each suite removes its own subdirectory).
func dataRoot(dir string) (string, func(), error) {
	if dir == "" {
		d, err := os.MkdirTemp("", "folio-bench-")
		if err != nil {
			return "", nil, fmt.Errorf("bench: data directory: %w", err)
		}
		return d, func() { os.RemoveAll(d) }, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", nil, fmt.Errorf("%w: -dir %s: %v", ErrUsage, dir, err)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", nil, fmt.Errorf("%w: -dir %s: %v", ErrUsage, dir, err)
	}
	return abs, func() {}, nil
}

// quiesce prepares a measurement window: collect garbage now and keep the
// collector off until the returned func runs, so that RUSAGE_SELF across the
// window counts the measured work and not a collection it happened to
// trigger. Windows allocate little (views, reports), so memory stays flat.
func quiesce() (restore func()) {
	runtime.GC()
	old := debug.SetGCPercent(-1)
	return func() { debug.SetGCPercent(old) }
}

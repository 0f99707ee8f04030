package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"

	"github.com/foliolog/folio"
)

// defaultDir is the data directory when -dir is not given, the one
// examples/quickstart uses too.
const defaultDir = "./folio-data"

// env is what a command reads and writes besides the data directory: the
// process's streams in main, buffers in tests of the parsing code.
type env struct {
	ctx    context.Context // ends on SIGINT or SIGTERM
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
}

// command is one subcommand.
type command struct {
	name    string
	summary string
	run     func(e env, args []string) error
}

func commands() []command {
	return []command{
		{"topics", "create, delete, list or describe topics", runTopics},
		{"produce", "append stdin lines to a topic, one record per line", runProduce},
		{"consume", "print a topic's records (kcat-style format)", runConsume},
		{"dump", "print every batch and record of a partition's segments, with CRC checks", runDump},
		{"verify", "check every CRC and index of a data directory", runVerify},
		{"groups", "consumer groups' committed offsets and lag, or reset them (groups reset)", runGroups},
	}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(env{ctx: ctx, stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr}, os.Args[1:])
	stop()
	os.Exit(code)
}

// run runs the command line args and returns the exit status: 0, 1 for a
// failure, 2 for a command line that cannot run. Every failure is one line
// on stderr: "folio <command>: <problem>".
func run(e env, args []string) int {
	if len(args) == 0 {
		fmt.Fprintln(e.stderr, "folio: usage: folio <command> [flags]; run folio help for the commands")
		return 2
	}
	switch args[0] {
	case "help", "-h", "-help", "--help":
		usage(e.stdout)
		return 0
	}
	for _, c := range commands() {
		if c.name != args[0] {
			continue
		}
		err := c.run(e, args[1:])
		switch {
		case err == nil:
			return 0
		case errors.Is(err, flag.ErrHelp):
			return 0
		}
		fmt.Fprintf(e.stderr, "folio %s: %s\n", c.name, oneLine(err))
		if errors.Is(err, ErrUsage) {
			return 2
		}
		return 1
	}
	fmt.Fprintf(e.stderr, "folio: unknown command %q (run folio help)\n", args[0])
	return 2
}

// oneLine flattens an error whose message spans lines (errors.Join).
func oneLine(err error) string {
	return strings.ReplaceAll(strings.TrimSpace(err.Error()), "\n", "; ")
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: folio <command> [flags]    (flags follow the command; -h lists them)")
	fmt.Fprintln(w)
	cs := commands()
	sort.Slice(cs, func(i, j int) bool { return cs[i].name < cs[j].name })
	for _, c := range cs {
		fmt.Fprintf(w, "  %-8s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "Every command takes -dir (default %s), the data directory.\n", defaultDir)
}

// newFlags returns a flag set whose errors come back as ErrUsage instead of
// being printed with the whole usage text; -h prints the usage to stdout.
func newFlags(e env, name, synopsis string) (*flag.FlagSet, *string) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	dir := fs.String("dir", defaultDir, "the data directory")
	fs.Usage = func() {
		fs.SetOutput(e.stdout)
		fmt.Fprintf(e.stdout, "usage: folio %s\n\n", synopsis)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
	}
	return fs, dir
}

// parseFlags parses args and refuses positional arguments, which no
// command takes.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return fmt.Errorf("%w: %v (see -h)", ErrUsage, err)
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q (flags follow the command; see -h)", fs.Arg(0))
	}
	return nil
}

// openBroker opens the data directory for writing, taking its lock. A
// directory an application holds fails with folio.ErrDirLocked, which names
// the holder. create says whether a missing directory may be created.
func openBroker(e env, dir string, create bool) (*folio.Broker, error) {
	if !create {
		if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%w: %s does not exist", ErrNoDataDir, dir)
		}
	}
	// The Broker's own warnings (recovery cuts, failed checkpoints) are
	// worth seeing on the command line; its info events are not.
	logger := slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	return folio.Open(dir, &folio.Options{Logger: logger})
}

// closeBroker closes b, keeping the first error.
func closeBroker(b *folio.Broker, err *error) {
	if cerr := b.Close(); cerr != nil && *err == nil {
		*err = cerr
	}
}

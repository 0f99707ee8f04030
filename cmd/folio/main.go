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
	"slices"
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

// command is one command of the CLI.
type command struct {
	// name is the command as typed: one word, or a family and a
	// subcommand ("topics create").
	name    string
	summary string
	run     func(e env, args []string) error
}

func commands() []command {
	return []command{
		{"topics create", "create a topic", topicsCreate},
		{"topics delete", "delete a topic and its records", topicsDelete},
		{"topics list", "list the topics", topicsList},
		{"topics describe", "show topics' settings and each partition's offsets and size", topicsDescribe},
		{"produce", "append stdin lines to a topic, one record per line", runProduce},
		{"consume", "print a topic's records (kcat-style format)", runConsume},
		{"dump", "print every batch and record of a partition's segments, with CRC checks", runDump},
		{"verify", "check every CRC and index of a data directory", runVerify},
		{"groups", "consumer groups' committed offsets, lag and members", groupsDescribe},
		{"groups reset", "move a consumer group's committed offsets", groupsReset},
		{"serve", "serve the data directory to Kafka clients over TCP until SIGINT/SIGTERM", runServe},
		{"console", "serve a read-only web console of the directory (beside a running application)", runConsole},
		{"sasl-user", "print a salted SASL credentials line for serve -sasl-users (password on stdin)", runSASLUser},
	}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(env{ctx: ctx, stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr}, os.Args[1:])
	stop()
	os.Exit(code)
}

// Exit statuses.
const (
	exitOK    = 0
	exitFail  = 1 // the command ran and failed
	exitUsage = 2 // the command line cannot run
)

// run runs the command line args and returns the exit status. Every
// failure is one line on stderr, "folio <command>: <problem>", and nothing
// on stdout but what the command printed before it failed. Help asked for
// (help, -h, -help) goes to stderr too, so that it never mixes with a
// command's data, and exits 0.
func run(e env, args []string) int {
	if len(args) == 0 {
		fmt.Fprintln(e.stderr, "folio: usage: folio <command> [flags]; run folio help for the commands")
		return exitUsage
	}
	if args[0] == "help" || isHelpFlag(args[0]) {
		if args[0] == "help" && len(args) > 1 {
			// folio help topics create = folio topics create -h
			return run(e, append(slices.Clone(args[1:]), "-h"))
		}
		usage(e.stderr)
		return exitOK
	}
	c, rest, err := findCommand(e, args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return exitOK
	case err != nil && c.name == "":
		fmt.Fprintf(e.stderr, "folio: %s\n", message(err))
		return exitUsage
	case err != nil:
		fmt.Fprintf(e.stderr, "folio %s: %s\n", c.name, message(err))
		return exitUsage
	}
	err = c.run(e, rest)
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return exitOK
	}
	fmt.Fprintf(e.stderr, "folio %s: %s\n", c.name, message(err))
	if errors.Is(err, ErrUsage) {
		return exitUsage
	}
	return exitFail
}

func isHelpFlag(s string) bool {
	switch s {
	case "-h", "-help", "--help":
		return true
	}
	return false
}

// findCommand returns the command args name and the arguments after its
// name. A family of subcommands (topics) typed alone, or with a
// subcommand it does not have, is a usage error returned with a command
// named after the family and no run; with -h or help the family prints its
// subcommands and returns flag.ErrHelp. An unknown command is a usage
// error with an empty command.
func findCommand(e env, args []string) (command, []string, error) {
	cs := commands()
	if len(args) > 1 {
		for _, c := range cs {
			if c.name == args[0]+" "+args[1] {
				return c, args[2:], nil
			}
		}
	}
	for _, c := range cs {
		if c.name == args[0] {
			return c, args[1:], nil
		}
	}
	family := command{name: args[0]}
	var subs []string
	for _, c := range cs {
		if sub, ok := strings.CutPrefix(c.name, family.name+" "); ok {
			subs = append(subs, sub)
		}
	}
	switch {
	case len(subs) == 0:
		return command{}, nil, usagef("unknown command %q (run folio help)", args[0])
	case len(args) == 1:
		return family, nil, usagef("needs a subcommand: %s (run folio %s -h)", orList(subs), family.name)
	case args[1] == "help" || isHelpFlag(args[1]):
		familyUsage(e.stderr, family.name)
		return family, nil, flag.ErrHelp
	}
	return family, nil, usagef("unknown subcommand %q (%s; run folio %s -h)", args[1], orList(subs), family.name)
}

// orList joins words as "a, b or c".
func orList(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}

// message is err as the one line after "folio <command>: ". Errors of the
// root package begin with its name, "folio: ", which the line has already
// said; that prefix is dropped. Messages that span lines (errors.Join) are
// joined with "; ".
func message(err error) string {
	s := strings.TrimSpace(err.Error())
	s = strings.TrimPrefix(s, "folio: ")
	return strings.ReplaceAll(s, "\n", "; ")
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: folio <command> [flags]    (flags follow the command; folio <command> -h lists them)")
	fmt.Fprintln(w)
	printCommands(w, commands())
	fmt.Fprintln(w)
	fmt.Fprintf(w, "Every command takes -dir (default %s), the data directory. Commands that\n", defaultDir)
	fmt.Fprintln(w, "write (topics create and delete, produce, groups reset, consume -group) take its")
	fmt.Fprintln(w, "lock; the others only read, and work beside a running application.")
}

// familyUsage lists the subcommands of family (topics).
func familyUsage(w io.Writer, family string) {
	var cs []command
	var subs []string
	for _, c := range commands() {
		if sub, ok := strings.CutPrefix(c.name, family+" "); ok {
			cs = append(cs, c)
			subs = append(subs, sub)
		}
	}
	fmt.Fprintf(w, "usage: folio %s %s [flags]\n\n", family, strings.Join(subs, "|"))
	printCommands(w, cs)
	fmt.Fprintf(w, "\nRun folio %s <subcommand> -h for its flags.\n", family)
}

func printCommands(w io.Writer, cs []command) {
	sort.Slice(cs, func(i, j int) bool { return cs[i].name < cs[j].name })
	for _, c := range cs {
		fmt.Fprintf(w, "  %-16s %s\n", c.name, c.summary)
	}
}

// flagSet is a command's flags. Its errors come back from parseFlags as
// one-line ErrUsage errors, never with the usage text; -h prints the usage
// on stderr.
type flagSet struct {
	*flag.FlagSet
	help func()
}

// newFlags returns the flags of the command name, with -dir, and the -dir
// value. synopsis follows "usage: folio " in the help.
func newFlags(e env, name, synopsis string) (*flagSet, *string) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {} // called on every error too: the help is printed on -h only
	dir := fs.String("dir", defaultDir, "the data directory")
	help := func() {
		fmt.Fprintf(e.stderr, "usage: folio %s\n\n", synopsis)
		for _, c := range commands() {
			if c.name == name {
				fmt.Fprintf(e.stderr, "%s.\n\n", strings.ToUpper(c.summary[:1])+c.summary[1:])
			}
		}
		fmt.Fprintln(e.stderr, "Flags:")
		fs.SetOutput(e.stderr)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
	}
	return &flagSet{FlagSet: fs, help: help}, dir
}

// parseFlags parses args and refuses positional arguments, which no
// command takes. -h prints the help and returns flag.ErrHelp.
func parseFlags(fs *flagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.help()
			return err
		}
		return usagef("%v (run folio %s -h)", err, fs.Name())
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q (flags follow the command; run folio %s -h)", fs.Arg(0), fs.Name())
	}
	return nil
}

// readOnlyCommands is what a user can still run while an application
// holds the directory.
const readOnlyCommands = "topics list, topics describe, consume without -group, dump, verify, groups, console"

// openBroker opens the data directory for writing, taking its lock. A
// directory an application holds fails with folio.ErrDirLocked, which names
// the holder; the message adds what to do about it. create says whether a
// missing directory may be created.
func openBroker(e env, dir string, create bool) (*folio.Broker, error) {
	return openBrokerMetrics(e, dir, create, nil)
}

// openBrokerMetrics is openBroker with a metrics hook (nil: none).
func openBrokerMetrics(e env, dir string, create bool, m folio.Metrics) (*folio.Broker, error) {
	if !create {
		if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%w: %s does not exist", ErrNoDataDir, dir)
		}
	}
	// The Broker's own warnings (recovery cuts, failed checkpoints) are
	// worth seeing on the command line; its info events are not.
	logger := slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	b, err := folio.Open(dir, &folio.Options{Logger: logger, Metrics: m})
	if errors.Is(err, folio.ErrDirLocked) {
		return nil, fmt.Errorf("%w; stop that process to run this command, or use one that only reads (%s)", err, readOnlyCommands)
	}
	return b, err
}

// closeBroker closes b, keeping the first error.
func closeBroker(b *folio.Broker, err *error) {
	if cerr := b.Close(); cerr != nil && *err == nil {
		*err = cerr
	}
}

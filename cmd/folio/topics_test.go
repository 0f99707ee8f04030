package main

import (
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/foliolog/folio/topic"
)

func TestTopicsLifecycle(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data") // created by the first write
	out := ok(t, "", "topics", "create", "-dir", dir, "-topic", "orders", "-partitions", "3",
		"-retention.ms", "1d", "-flush", "none", "-config", "segment.bytes=1MiB", "-config", "max.message.bytes = 4096")
	if out != "Created topic orders with 3 partitions.\n" {
		t.Errorf("create said %q", out)
	}
	ok(t, "", "topics", "create", "-dir", dir, "-topic", "audit.log_v2")

	if got := ok(t, "", "topics", "list", "-dir", dir); got != "audit.log_v2\norders\n" {
		t.Errorf("list = %q", got)
	}

	desc := ok(t, "", "topics", "describe", "-dir", dir, "-topic", "orders")
	for _, want := range []string{
		"Topic: orders\t", "PartitionCount: 3\t",
		"retention.ms=1d", "flush=none", "segment.bytes=1MiB", "max.message.bytes=4KiB",
		"partitions=3", "retention.bytes=unlimited", // defaults spelled out
		"\tPartition: 0\tStartOffset: 0\tEndOffset: 0\t",
		"\tPartition: 2\tStartOffset: 0\tEndOffset: 0\t",
	} {
		if !strings.Contains(desc, want) {
			t.Errorf("describe lacks %q:\n%s", want, desc)
		}
	}
	if strings.Contains(desc, "Partition: 3\t") {
		t.Errorf("describe shows a fourth partition:\n%s", desc)
	}
	// Without -topic, every topic.
	all := ok(t, "", "topics", "describe", "-dir", dir)
	if n := strings.Count(all, "Topic: "); n != 2 {
		t.Errorf("describe of all shows %d topics:\n%s", n, all)
	}

	fails(t, 1, []string{"orders", "exists"}, "", "topics", "create", "-dir", dir, "-topic", "orders")

	if got := ok(t, "", "topics", "delete", "-dir", dir, "-topic", "orders"); got != "Deleted topic orders.\n" {
		t.Errorf("delete said %q", got)
	}
	if got := ok(t, "", "topics", "list", "-dir", dir); got != "audit.log_v2\n" {
		t.Errorf("list after delete = %q", got)
	}
	fails(t, 1, []string{"unknown topic", "orders"}, "", "topics", "delete", "-dir", dir, "-topic", "orders")
	fails(t, 1, []string{"unknown topic", "orders"}, "", "topics", "describe", "-dir", dir, "-topic", "orders")
	// The name is free again, with a new id.
	ok(t, "", "topics", "create", "-dir", dir, "-topic", "orders")
	if d2 := ok(t, "", "topics", "describe", "-dir", dir, "-topic", "orders"); topicID(t, d2) == topicID(t, desc) {
		t.Errorf("re-created topic kept id %s", topicID(t, d2))
	}
}

func topicID(t *testing.T, describe string) string {
	t.Helper()
	m := regexp.MustCompile(`TopicId: ([0-9a-f]{32})`).FindStringSubmatch(describe)
	if m == nil {
		t.Fatalf("no topic id in %q", describe)
	}
	return m[1]
}

// TestBadInput: every kind of bad command line or missing thing exits
// non-zero with one line naming the problem, never a panic.
func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	ok(t, "", "topics", "create", "-dir", dir, "-topic", "t", "-partitions", "2")
	missing := filepath.Join(t.TempDir(), "nope")
	long := strings.Repeat("x", 250)
	tests := []struct {
		name  string
		args  []string
		code  int
		frags []string
	}{
		{"no command", nil, 2, []string{"usage"}},
		{"unknown command", []string{"serve-all"}, 2, []string{`unknown command "serve-all"`}},
		{"unknown topics subcommand", []string{"topics", "alter"}, 2, []string{`"alter"`}},
		{"topics without subcommand", []string{"topics"}, 2, []string{"create, delete, list or describe"}},
		{"unknown flag", []string{"consume", "-dir", dir, "-topic", "t", "-bogus"}, 2, []string{"-bogus"}},
		{"positional argument", []string{"consume", "-dir", dir, "t"}, 2, []string{`unexpected argument "t"`}},
		{"flag before command", []string{"-dir", dir, "topics", "list"}, 2, []string{`unknown command "-dir"`}},
		{"create without topic", []string{"topics", "create", "-dir", dir}, 2, []string{"-topic is required"}},
		{"create with a space", []string{"topics", "create", "-dir", dir, "-topic", "bad name"}, 1, []string{"invalid topic name", `"bad name"`}},
		{"create with a slash", []string{"topics", "create", "-dir", dir, "-topic", "a/b"}, 1, []string{"invalid topic name"}},
		{"create dot-dot", []string{"topics", "create", "-dir", dir, "-topic", ".."}, 1, []string{"invalid topic name"}},
		{"create too long", []string{"topics", "create", "-dir", dir, "-topic", long}, 1, []string{"invalid topic name"}},
		{"create reserved", []string{"topics", "create", "-dir", dir, "-topic", "__mine"}, 1, []string{"reserved"}},
		{"create colliding", []string{"topics", "create", "-dir", dir, "-topic", "T"}, 1, []string{"collides"}},
		{"zero partitions", []string{"topics", "create", "-dir", dir, "-topic", "z", "-partitions", "0"}, 2, []string{"-partitions 0"}},
		{"bad setting value", []string{"topics", "create", "-dir", dir, "-topic", "z", "-retention.ms", "soon"}, 2, []string{"retention.ms"}},
		{"unknown setting", []string{"topics", "create", "-dir", dir, "-topic", "z", "-config", "colour=blue"}, 2, []string{"colour"}},
		{"setting without value", []string{"topics", "create", "-dir", dir, "-topic", "z", "-config", "flush"}, 2, []string{"key=value"}},
		{"delete in missing dir", []string{"topics", "delete", "-dir", missing, "-topic", "t"}, 1, []string{missing, "does not exist"}},
		{"list in missing dir", []string{"topics", "list", "-dir", missing}, 1, []string{missing, "does not exist"}},
		{"describe in missing dir", []string{"topics", "describe", "-dir", missing}, 1, []string{missing, "does not exist"}},
		{"consume in missing dir", []string{"consume", "-dir", missing, "-topic", "t", "-e"}, 1, []string{missing, "does not exist"}},
		{"dump in missing dir", []string{"dump", "-dir", missing, "-topic", "t"}, 1, []string{missing, "does not exist"}},
		{"verify in missing dir", []string{"verify", "-dir", missing}, 1, []string{missing, "does not exist"}},
		{"not a data dir", []string{"topics", "list", "-dir", t.TempDir()}, 1, []string{"not a Folio data directory"}},
		{"consume unknown topic", []string{"consume", "-dir", dir, "-topic", "nope", "-e"}, 1, []string{`unknown topic "nope"`}},
		{"consume bad name", []string{"consume", "-dir", dir, "-topic", "no way", "-e"}, 1, []string{"invalid topic name"}},
		{"consume without topic", []string{"consume", "-dir", dir}, 2, []string{"-topic is required"}},
		{"consume bad partition", []string{"consume", "-dir", dir, "-topic", "t", "-partition", "2", "-e"}, 1, []string{"partition 2", "0 to 1"}},
		{"consume negative partition", []string{"consume", "-dir", dir, "-topic", "t", "-partition", "-2", "-e"}, 2, []string{"-partition -2"}},
		{"dump huge partition", []string{"dump", "-dir", dir, "-topic", "t", "-partition", "5000000000"}, 2, []string{"-partition 5000000000"}},
		{"consume bad offset", []string{"consume", "-dir", dir, "-topic", "t", "-offset", "middle"}, 2, []string{`"middle"`}},
		{"consume offset past end", []string{"consume", "-dir", dir, "-topic", "t", "-offset", "5", "-e"}, 1, []string{"offset 5", "past the end"}},
		{"consume bad format", []string{"consume", "-dir", dir, "-topic", "t", "-f", "%q"}, 2, []string{"%q"}},
		{"consume bad escape", []string{"consume", "-dir", dir, "-topic", "t", "-f", `\x`}, 2, []string{`\x`}},
		{"consume negative count", []string{"consume", "-dir", dir, "-topic", "t", "-n", "-1"}, 2, []string{"-n -1"}},
		{"produce without topic", []string{"produce", "-dir", dir}, 2, []string{"-topic is required"}},
		{"produce bad name", []string{"produce", "-dir", dir, "-topic", "a*b"}, 1, []string{"invalid topic name"}},
		{"produce to an internal topic", []string{"produce", "-dir", dir, "-topic", "__consumer_offsets"}, 1, []string{"reserved"}},
		{"produce bad partition", []string{"produce", "-dir", dir, "-topic", "t", "-partition", "7"}, 1, []string{"partition 7"}},
		{"dump without topic", []string{"dump", "-dir", dir}, 2, []string{"-topic or -file"}},
		{"dump unknown topic", []string{"dump", "-dir", dir, "-topic", "nope"}, 1, []string{`unknown topic "nope"`}},
		{"dump bad file name", []string{"dump", "-file", filepath.Join(dir, "t-0", "x.log")}, 2, []string{"20-digit"}},
		{"dump missing file", []string{"dump", "-file", filepath.Join(dir, "t-0", "00000000000000000099.log")}, 1, []string{"00000000000000000099.log"}},
		{"verify unknown topic", []string{"verify", "-dir", dir, "-topic", "nope"}, 1, []string{`unknown topic "nope"`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fails(t, tc.code, tc.frags, "", tc.args...)
		})
	}
	// Nothing above changed the directory.
	if got := ok(t, "", "topics", "list", "-dir", dir); got != "t\n" {
		t.Errorf("topics after the bad commands: %q", got)
	}
}

// TestHelp: help asked for, of the program, a family or a command, is the
// usage on stderr with exit status 0, and nothing on stdout, where a
// redirected command's data goes.
func TestHelp(t *testing.T) {
	help := func(args ...string) string {
		t.Helper()
		r := cli(t, "", args...)
		if r.code != 0 || r.stdout != "" || !strings.HasPrefix(r.stderr, "usage: folio ") {
			t.Errorf("folio %s: exit %d, stdout %q, stderr %q; want the usage on stderr and exit 0",
				strings.Join(args, " "), r.code, r.stdout, r.stderr)
		}
		return r.stderr
	}
	for _, args := range [][]string{{"help"}, {"-h"}, {"-help"}, {"--help"}} {
		out := help(args...)
		for _, c := range commands() {
			if !strings.Contains(out, "  "+c.name+" ") {
				t.Errorf("folio %s does not list %s:\n%s", args[0], c.name, out)
			}
		}
	}
	for _, args := range [][]string{{"topics", "-h"}, {"topics", "help"}, {"help", "topics"}, {"topics", "--help"}} {
		out := help(args...)
		for _, sub := range []string{"create", "delete", "list", "describe"} {
			if !strings.Contains(out, "  topics "+sub+" ") {
				t.Errorf("folio %s does not list topics %s:\n%s", strings.Join(args, " "), sub, out)
			}
		}
	}
	for _, args := range [][]string{{"consume", "-h"}, {"consume", "-help"}, {"help", "consume"}, {"consume", "-topic", "t", "-h"}} {
		out := help(args...)
		for _, f := range []string{"-topic", "-offset", "-f", "-e", "-n", "-dir"} {
			if !strings.Contains(out, "  "+f) {
				t.Errorf("folio %s does not document %s:\n%s", strings.Join(args, " "), f, out)
			}
		}
	}
	for _, args := range [][]string{
		{"topics", "create", "-h"}, {"topics", "delete", "-h"}, {"topics", "list", "-h"}, {"topics", "describe", "-h"},
		{"produce", "-h"}, {"dump", "-h"}, {"verify", "-h"}, {"groups", "-h"}, {"groups", "reset", "-h"},
		{"help", "groups", "reset"},
	} {
		out := help(args...)
		name := strings.Join(slices.DeleteFunc(slices.Clone(args), func(a string) bool { return a == "-h" || a == "help" }), " ")
		if !strings.HasPrefix(out, "usage: folio "+name+" ") && !strings.HasPrefix(out, "usage: folio "+name+"\n") {
			t.Errorf("folio %s: help for another command:\n%s", strings.Join(args, " "), out)
		}
	}
	if out := help("groups", "-h"); !strings.Contains(out, "groups reset") {
		t.Errorf("groups -h does not point to groups reset:\n%s", out)
	}
}

// TestSettingHelp: the help of topics create names the values each
// setting takes, and every value it names is one the catalog accepts.
func TestSettingHelp(t *testing.T) {
	r := cli(t, "", "topics", "create", "-h")
	for key, values := range map[string][]string{
		topic.KeyFlush:         {"sync", "none", "interval:100ms", "every:1000"},
		topic.KeyReadPath:      {"mmap", "sendfile"},
		topic.KeyCleanup:       {"delete", "compact", "compact,delete"},
		topic.KeyTimestampType: {"CreateTime", "LogAppendTime"},
		topic.KeyCompression:   {"producer", "none", "gzip", "snappy", "lz4", "zstd"},
		topic.KeyRetentionAge:  {"7d", "unlimited"},
	} {
		// The flag's help: the lines after "  -key" up to the next flag.
		i := strings.Index(r.stderr, "  -"+key+" ")
		if i < 0 {
			t.Errorf("topics create -h has no -%s:\n%s", key, r.stderr)
			continue
		}
		text := r.stderr[i+len("  -"+key+" "):]
		if j := strings.Index(text, "\n  -"); j >= 0 {
			text = text[:j]
		}
		for _, v := range values {
			if !strings.Contains(text, v) {
				t.Errorf("-%s help does not name %q: %s", key, v, text)
			}
			var cfg topic.Config
			if err := cfg.Set(key, v); err != nil {
				t.Errorf("-%s help names %q, which the catalog refuses: %v", key, v, err)
			}
		}
		if !strings.Contains(text, "(default ") {
			t.Errorf("-%s help gives no default: %s", key, text)
		}
	}
	for k := range settingHelp {
		if !slices.Contains(topic.Keys, k) {
			t.Errorf("settingHelp documents %q, which is not a setting", k)
		}
	}
	for _, k := range topic.Keys {
		if k != topic.KeyPartitions && settingHelp[k] == "" {
			t.Errorf("setting %s has no help", k)
		}
	}
}

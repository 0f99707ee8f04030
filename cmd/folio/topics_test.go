package main

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"
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

func TestHelp(t *testing.T) {
	out := ok(t, "", "help")
	for _, c := range commands() {
		if !strings.Contains(out, "  "+c.name+" ") {
			t.Errorf("help does not list %s:\n%s", c.name, out)
		}
	}
	out = ok(t, "", "consume", "-h")
	for _, f := range []string{"-topic", "-offset", "-f", "-e", "-n", "-dir"} {
		if !strings.Contains(out, "  "+f) {
			t.Errorf("consume -h does not document %s:\n%s", f, out)
		}
	}
}

package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/foliolog/folio"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// groupRows parses `folio groups` output into committed offset and lag per
// "topic/partition" of one group.
func groupRows(t *testing.T, out, groupID string) map[string][2]string {
	t.Helper()
	rows := map[string][2]string{}
	for _, l := range lines(out)[min(1, len(lines(out))):] {
		if l == "" {
			break // the groups' membership follows
		}
		f := strings.Fields(l)
		if len(f) < 6 {
			t.Fatalf("groups line %q", l)
		}
		if f[0] == groupID {
			rows[f[1]+"/"+f[2]] = [2]string{f[3], f[5]}
		}
	}
	return rows
}

// groupMembership parses the membership sections of `folio groups`
// output: a group's state line (STATE GENERATION PROTOCOL LEADER MEMBERS)
// and "member assigned" per member.
func groupMembership(t *testing.T, out, groupID string) (state []string, members map[string]string) {
	t.Helper()
	members = map[string]string{}
	section := ""
	for _, l := range lines(out) {
		f := strings.Fields(l)
		switch {
		case len(f) == 0:
			section = ""
		case f[0] == "GROUP":
			section = f[1]
		case f[0] != groupID:
		case section == "STATE":
			if len(f) != 7 {
				t.Fatalf("group line %q", l)
			}
			state = f[1:6]
		case section == "MEMBER":
			if len(f) != 6 {
				t.Fatalf("member line %q", l)
			}
			members[f[1]] = f[5]
		}
	}
	return state, members
}

func produceKeyed(t *testing.T, dir, topicName string, n int) {
	t.Helper()
	var in strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&in, "key-%d:r%d\n", i, i)
	}
	ok(t, in.String(), "produce", "-dir", dir, "-topic", topicName, "-K", ":")
}

// TestConsumeGroup: a group member prints records and commits exactly what
// it printed; the next member of the group continues from there, so the
// two runs together print every record once. groups shows the commits and
// the lag, read-only.
func TestConsumeGroup(t *testing.T) {
	dir := t.TempDir()
	ok(t, "", "topics", "create", "-dir", dir, "-topic", "orders", "-partitions", "3")
	produceKeyed(t, dir, "orders", 100)
	if out := ok(t, "", "groups", "-dir", dir); out != "" {
		t.Errorf("groups before any commit: %q", out)
	}

	first := ok(t, "", "consume", "-dir", dir, "-topic", "orders", "-group", "billing", "-e", "-n", "40", "-f", `%p %o %s\n`)
	if n := len(lines(first)); n != 40 {
		t.Fatalf("-n 40 printed %d records", n)
	}
	printed := map[string]int64{} // partition -> offset after the last printed
	for _, l := range lines(first) {
		f := strings.Fields(l)
		o, _ := strconv.ParseInt(f[1], 10, 64)
		printed[f[0]] = max(printed[f[0]], o+1)
	}
	rows := groupRows(t, ok(t, "", "groups", "-dir", dir, "-group", "billing"), "billing")
	for p, next := range printed {
		if got := rows["orders/"+p][0]; got != strconv.FormatInt(next, 10) {
			t.Errorf("partition %s: committed %s, printed up to %d", p, got, next-1)
		}
	}

	second := ok(t, "", "consume", "-dir", dir, "-topic", "orders", "-group", "billing", "-e", "-f", `%p %o %s\n`)
	all := append(lines(first), lines(second)...)
	var values []string
	for _, l := range all {
		values = append(values, strings.Fields(l)[2])
	}
	sort.Strings(values)
	var want []string
	for i := 0; i < 100; i++ {
		want = append(want, "r"+strconv.Itoa(i))
	}
	sort.Strings(want)
	if strings.Join(values, ",") != strings.Join(want, ",") {
		t.Errorf("the two members printed %d records; want each of 100 once", len(values))
	}
	rows = groupRows(t, ok(t, "", "groups", "-dir", dir), "billing")
	if len(rows) != 3 {
		t.Errorf("groups shows %d partitions, want 3: %v", len(rows), rows)
	}
	for tp, r := range rows {
		if r[1] != "0" {
			t.Errorf("%s: lag %s after reading everything", tp, r[1])
		}
	}
	// Another group starts from the beginning and gets everything again
	// (pub/sub); -offset end starts a new group at the end instead.
	if got := ok(t, "", "consume", "-dir", dir, "-topic", "orders", "-group", "audit", "-e"); len(lines(got)) != 100 {
		t.Errorf("a second group printed %d records", len(lines(got)))
	}
	if got := ok(t, "", "consume", "-dir", dir, "-topic", "orders", "-group", "latecomer", "-offset", "end", "-e"); got != "" {
		t.Errorf("a new group at the end printed %q", got)
	}
	// It read nothing, yet committed where it started: the records that
	// arrive before its next run are its to read then.
	ok(t, "late 1\nlate 2\n", "produce", "-dir", dir, "-topic", "orders")
	if got := ok(t, "", "consume", "-dir", dir, "-topic", "orders", "-group", "latecomer", "-offset", "end", "-e", "-f", `%s\n`); got != "late 1\nlate 2\n" && got != "late 2\nlate 1\n" {
		t.Errorf("the group's next run printed %q, want the two records produced since its first", got)
	}
}

// TestConsumeGroupInterrupted: a following member stopped by SIGINT commits
// what it printed before it exits.
func TestConsumeGroupInterrupted(t *testing.T) {
	dir := t.TempDir()
	ok(t, "", "topics", "create", "-dir", dir, "-topic", "t")
	produceKeyed(t, dir, "t", 10)
	cmd := exec.Command(folioBin, "consume", "-dir", dir, "-topic", "t", "-group", "g", "-f", `%o\n`, "-commit-interval", "1h")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(out)
	for i := 0; i < 10; i++ {
		if _, err := readLineTimeout(r, 30*time.Second); err != nil {
			t.Fatalf("record %d: %v; stderr %s", i, err, stderr.String())
		}
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("after SIGINT: %v; stderr %s", err, stderr.String())
	}
	rows := groupRows(t, ok(t, "", "groups", "-dir", dir, "-group", "g"), "g")
	if rows["t/0"] != [2]string{"10", "0"} {
		t.Errorf("after SIGINT the group committed %v, want offset 10, lag 0", rows["t/0"])
	}
}

func TestGroupsReset(t *testing.T) {
	dir := t.TempDir()
	b, err := folio.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.CreateTopic("t", folio.TopicConfig{Partitions: 2}); err != nil {
		t.Fatal(err)
	}
	p, err := b.NewProducer(&folio.ProducerOptions{ManualPartitioning: true})
	if err != nil {
		t.Fatal(err)
	}
	early, late := time.UnixMilli(1_600_000_000_000), time.UnixMilli(1_700_000_000_000)
	for i := 0; i < 10; i++ {
		ts := early
		if i >= 6 {
			ts = late
		}
		for part := int32(0); part < 2; part++ {
			rec := &folio.Record{Topic: "t", Partition: part, Value: []byte(fmt.Sprintf("p%d-%d", part, i)), Timestamp: ts}
			if _, _, err := p.Produce(context.Background(), rec); err != nil {
				t.Fatal(err)
			}
		}
	}
	p.Close()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	ok(t, "", "consume", "-dir", dir, "-topic", "t", "-group", "g", "-e")
	committed := func() map[string][2]string {
		return groupRows(t, ok(t, "", "groups", "-dir", dir, "-group", "g"), "g")
	}
	if c := committed(); c["t/0"][0] != "10" || c["t/1"][0] != "10" {
		t.Fatalf("after reading all: %v", c)
	}

	// -dry-run shows the plan, says it is one, and changes nothing.
	plan := ok(t, "", "groups", "reset", "-dir", dir, "-group", "g", "-topic", "t", "-to", "earliest", "-dry-run")
	if !regexp.MustCompile(`(?m)^g\s+t\s+0\s+10\s+0$`).MatchString(plan) || !regexp.MustCompile(`(?m)^g\s+t\s+1\s+10\s+0$`).MatchString(plan) {
		t.Errorf("dry-run plan:\n%s", plan)
	}
	const dryMark = "Dry run: nothing was committed"
	if l := lines(plan); len(l) == 0 || !strings.HasPrefix(l[len(l)-1], dryMark) {
		t.Errorf("dry-run output does not end saying it was one:\n%s", plan)
	}
	if c := committed(); c["t/0"][0] != "10" {
		t.Errorf("-dry-run changed the offsets: %v", c)
	}
	if real := ok(t, "", "groups", "reset", "-dir", dir, "-group", "g", "-topic", "t", "-to", "latest"); strings.Contains(real, dryMark) {
		t.Errorf("a real reset says it was a dry run:\n%s", real)
	}

	cases := []struct {
		args   []string
		p0, p1 string
		read   int
	}{
		{[]string{"-to", "earliest"}, "0", "0", 20},
		{[]string{"-to", "latest"}, "10", "10", 0},
		{[]string{"-to", "7", "-partition", "1"}, "10", "7", 3},
		{[]string{"-to", late.UTC().Format(time.RFC3339)}, "6", "6", 8},
		{[]string{"-to", early.Add(-time.Hour).UTC().Format("2006-01-02T15:04:05")}, "0", "0", 20},
		{[]string{"-to", "2030-01-01"}, "10", "10", 0}, // nothing at or after it: the end
	}
	for _, c := range cases {
		ok(t, "", append([]string{"groups", "reset", "-dir", dir, "-group", "g", "-topic", "t"}, c.args...)...)
		if got := committed(); got["t/0"][0] != c.p0 || got["t/1"][0] != c.p1 {
			t.Errorf("reset %v: committed %v, want %s and %s", c.args, got, c.p0, c.p1)
		}
		if out := ok(t, "", "consume", "-dir", dir, "-topic", "t", "-group", "g", "-e"); len(lines(out)) != c.read {
			t.Errorf("after reset %v the member read %d records, want %d", c.args, len(lines(out)), c.read)
		}
	}
	fails(t, 1, []string{"offset 11", "0 to 10"}, "", "groups", "reset", "-dir", dir, "-group", "g", "-topic", "t", "-to", "11")
	fails(t, 2, []string{`"soon"`}, "", "groups", "reset", "-dir", dir, "-group", "g", "-topic", "t", "-to", "soon")
	fails(t, 2, []string{"-to is required"}, "", "groups", "reset", "-dir", dir, "-group", "g", "-topic", "t")
	fails(t, 2, []string{"-group is required"}, "", "groups", "reset", "-dir", dir, "-topic", "t", "-to", "earliest")
	fails(t, 1, []string{"unknown topic"}, "", "groups", "reset", "-dir", dir, "-group", "g", "-topic", "nope", "-to", "earliest")
	fails(t, 1, []string{"partition 5"}, "", "groups", "reset", "-dir", dir, "-group", "g", "-topic", "t", "-to", "earliest", "-partition", "5")
	fails(t, 1, []string{`unknown consumer group "nope"`}, "", "groups", "-dir", dir, "-group", "nope")
	fails(t, 2, []string{"-partition and -group"}, "", "consume", "-dir", dir, "-topic", "t", "-group", "g", "-partition", "0")
	fails(t, 2, []string{"-offset with -group"}, "", "consume", "-dir", dir, "-topic", "t", "-group", "g", "-offset", "3")
}

// TestGroupsShowsUncommittedPartitions: partitions of a group's topic
// that it never committed are shown, with their whole log, from the log
// start, as lag; they are backlog the group has not read.
func TestGroupsShowsUncommittedPartitions(t *testing.T) {
	dir := t.TempDir()
	ok(t, "", "topics", "create", "-dir", dir, "-topic", "t", "-partitions", "3")
	for p, n := range []int{4, 6, 5} {
		ok(t, strings.Repeat("x\n", n), "produce", "-dir", dir, "-topic", "t", "-partition", strconv.Itoa(p))
	}
	// Records before offset 2 of partition 2 are deleted: its log starts
	// at 2, and its backlog is 3 records.
	b, err := folio.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.DeleteRecordsBefore("t", 2, 2); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	// A group with a commit in one partition only (a member commits every
	// partition it owns at exit, so a reset makes it).
	const read = 1
	ok(t, "", "groups", "reset", "-dir", dir, "-group", "g", "-topic", "t", "-partition", strconv.Itoa(read), "-to", "1")
	out := ok(t, "", "groups", "-dir", dir, "-group", "g")
	rows := groupRows(t, out, "g")
	if len(rows) != 3 {
		t.Fatalf("groups shows %d partitions of t, want all 3:\n%s", len(rows), out)
	}
	starts, ends := []int{0, 0, 2}, []int{4, 6, 5}
	for p := range 3 {
		r := rows["t/"+strconv.Itoa(p)]
		if p == read {
			next := starts[p] + 1
			if r != [2]string{strconv.Itoa(next), strconv.Itoa(ends[p] - next)} {
				t.Errorf("partition %d, committed at %d: %v", p, next, r)
			}
			continue
		}
		if lag := ends[p] - starts[p]; r != [2]string{"-", strconv.Itoa(lag)} {
			t.Errorf("partition %d without a commit: %v, want committed -, lag %d (from the log start):\n%s", p, r, lag, out)
		}
	}
	if !strings.Contains(out, "no commit") {
		t.Errorf("a lag without a commit does not say where it counts from:\n%s", out)
	}
}

// TestGroupsBesideApplication: groups reads the commits of an application
// that holds the directory; consume -group and groups reset, which take
// the lock, fail naming it.
func TestGroupsBesideApplication(t *testing.T) {
	dir := t.TempDir()
	b, err := folio.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := b.CreateTopic("t", folio.TopicConfig{Partitions: 2}); err != nil {
		t.Fatal(err)
	}
	p, err := b.NewProducer(&folio.ProducerOptions{ManualPartitioning: true})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		if _, _, err := p.Produce(context.Background(), &folio.Record{Topic: "t", Value: []byte("x")}); err != nil {
			t.Fatal(err)
		}
	}
	p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	gc, err := b.JoinGroup(ctx, "app", []string{"t"}, &folio.GroupOptions{DisableAutoCommit: true})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			gc.Close()
		}
	}()
	if err := gc.CommitOffsets(ctx, map[folio.TopicPartition]int64{{Topic: "t", Partition: 0}: 3}); err != nil {
		t.Fatal(err)
	}
	out := ok(t, "", "groups", "-dir", dir)
	rows := groupRows(t, out, "app")
	if rows["t/0"] != [2]string{"3", "2"} || rows["t/1"] != [2]string{"-", "0"} {
		t.Errorf("groups beside the application: %v, want t/0 committed 3, lag 2, and t/1 (subscribed, empty) without a commit", rows)
	}
	// The membership the application's coordinator recorded: the one
	// member, leader of its generation, with both partitions.
	state, members := groupMembership(t, out, "app")
	want := []string{"Stable", strconv.Itoa(int(gc.Generation())), "consumer/cooperative-sticky", gc.MemberID(), "1"}
	if strings.Join(state, " ") != strings.Join(want, " ") {
		t.Errorf("group state %v, want %v; output:\n%s", state, want, out)
	}
	if len(members) != 1 || members[gc.MemberID()] != "t-0,t-1" {
		t.Errorf("members %v, want %s with t-0,t-1; output:\n%s", members, gc.MemberID(), out)
	}
	holder := fmt.Sprintf("pid=%d", os.Getpid())
	fails(t, 1, lockedAdvice(holder), "", "consume", "-dir", dir, "-topic", "t", "-group", "app", "-e")
	fails(t, 1, lockedAdvice(holder), "", "groups", "reset", "-dir", dir, "-group", "app", "-topic", "t", "-to", "earliest")

	// The member leaves: the group is recorded Empty, with no members,
	// while the Broker stays open.
	gen := gc.Generation()
	closed = true
	if err := gc.Close(); err != nil {
		t.Fatal(err)
	}
	out = ok(t, "", "groups", "-dir", dir, "-group", "app")
	state, members = groupMembership(t, out, "app")
	if len(state) != 5 || state[0] != "Empty" || state[1] != strconv.Itoa(int(gen)+1) || state[4] != "0" || len(members) != 0 {
		t.Errorf("after the member closed: state %v, members %v; output:\n%s", state, members, out)
	}
	if rows := groupRows(t, out, "app"); rows["t/0"] != [2]string{"3", "2"} {
		t.Errorf("offsets after the member closed: %v", rows)
	}
}

// FuzzApplyCommitRecord: no record of __consumer_offsets panics the
// decoders; a commit or group metadata record they accept is found under
// its key, a tombstone removes it.
func FuzzApplyCommitRecord(f *testing.F) {
	k := kmsg.OffsetCommitKey{Version: 1, Group: "g", Topic: "t", Partition: 3}
	v := kmsg.OffsetCommitValue{Version: 3, Offset: 42, LeaderEpoch: -1, Metadata: "m", CommitTimestamp: 1000}
	f.Add(k.AppendTo(nil), v.AppendTo(nil), false)
	f.Add(k.AppendTo(nil), []byte(nil), true)
	f.Add([]byte{0, 2, 0, 1, 'g'}, []byte{0, 3}, false) // group metadata, truncated
	f.Add([]byte{0}, []byte{}, false)
	gk := kmsg.GroupMetadataKey{Version: 2, Group: "g"}
	gv := kmsg.GroupMetadataValue{Version: 3, ProtocolType: "consumer", Generation: 4, Protocol: kmsg.StringPtr("range"), Leader: kmsg.StringPtr("m"),
		Members: []kmsg.GroupMetadataValueMember{{MemberID: "m", Assignment: []byte{0, 0, 0, 0, 0, 1, 0, 1, 't', 0, 0, 0, 1, 0, 0, 0, 2}}}}
	f.Add(gk.AppendTo(nil), gv.AppendTo(nil), false)
	f.Add(gk.AppendTo(nil), []byte(nil), true)
	gv.Version = 4
	f.Add(gk.AppendTo(nil), gv.AppendTo(nil), false)
	f.Fuzz(func(t *testing.T, key, value []byte, null bool) {
		// Group metadata: never a panic, and a record the decoder takes
		// sets the group (or, a tombstone, removes it).
		metas := map[string]*groupMeta{"g": {}, "other": {}}
		if err := applyGroupRecord(metas, key, value, null); err == nil {
			var gk kmsg.GroupMetadataKey
			if len(key) >= 2 && key[0] == 0 && key[1] == 2 && gk.ReadFrom(key) == nil {
				if _, found := metas[gk.Group]; found == null {
					t.Fatalf("group record for %q: null %v, found %v", gk.Group, null, found)
				}
				if m := metas[gk.Group]; m != nil {
					_ = m.state()
				}
			} else if len(metas) != 2 {
				t.Fatalf("a record that is not group metadata changed the groups: %v", metas)
			}
		}

		commits := map[groupTP]commit{{group: "other", topic: "x"}: {offset: 1}}
		if err := applyCommitRecord(commits, key, value, null, 5); err != nil {
			return
		}
		var dk kmsg.OffsetCommitKey
		if len(key) < 2 || (key[0] != 0 || key[1] > 1) || dk.ReadFrom(key) != nil {
			if len(commits) != 1 {
				t.Fatalf("a record that is not a commit changed the commits: %v", commits)
			}
			return
		}
		c, found := commits[groupTP{dk.Group, dk.Topic, dk.Partition}]
		if null == found {
			t.Fatalf("null %v, found %v (%+v)", null, found, c)
		}
	})
}

func TestDescribeAssignment(t *testing.T) {
	a := kmsg.ConsumerMemberAssignment{Topics: []kmsg.ConsumerMemberAssignmentTopic{{Topic: "b", Partitions: []int32{3, 1}}, {Topic: "a", Partitions: []int32{0}}}}
	cases := []struct {
		protocolType string
		b            []byte
		want         string
	}{
		{"consumer", a.AppendTo(nil), "a-0,b-1,b-3"},
		{"consumer", nil, "(none)"},
		{"consumer", []byte{0, 0, 0, 0, 0, 9}, "(6 bytes that do not decode)"},
		{"connect", []byte{1, 2}, `(2 bytes of protocol type "connect")`},
	}
	for _, c := range cases {
		if got := describeAssignment(c.protocolType, c.b); got != c.want {
			t.Errorf("describeAssignment(%q, %x) = %q, want %q", c.protocolType, c.b, got, c.want)
		}
	}
}

package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/foliolog/folio"
)

// fill opens dir as an application would, creates a topic, produces n
// records to partition 0 one at a time (one batch each), with the value
// value(i) and the key "k<i>", and closes the Broker.
func fill(t *testing.T, dir, name string, cfg folio.TopicConfig, n int, value func(i int) string) {
	t.Helper()
	b, err := folio.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
	}()
	if _, err := b.CreateTopic(name, cfg); err != nil {
		t.Fatal(err)
	}
	p, err := b.NewProducer(&folio.ProducerOptions{ManualPartitioning: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for i := 0; i < n; i++ {
		rec := &folio.Record{Topic: name, Partition: 0, Key: []byte("k" + strconv.Itoa(i)), Value: []byte(value(i))}
		if _, _, err := p.Produce(context.Background(), rec); err != nil {
			t.Fatal(err)
		}
	}
}

func vals(from, to int) string {
	var s strings.Builder
	for i := from; i < to; i++ {
		fmt.Fprintf(&s, "v%d\n", i)
	}
	return s.String()
}

func TestConsumeOptions(t *testing.T) {
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
	ts := time.UnixMilli(1_700_000_000_123)
	for i := 0; i < 10; i++ {
		rec := &folio.Record{Topic: "t", Partition: int32(i % 2), Value: []byte("v" + strconv.Itoa(i)), Timestamp: ts.Add(time.Duration(i) * time.Millisecond)}
		if i == 0 {
			rec.Key = []byte("first")
			rec.Headers = []folio.Header{{Key: "trace", Value: []byte("abc")}, {Key: "null"}, {Key: "empty", Value: []byte{}}}
		}
		if _, _, err := p.Produce(context.Background(), rec); err != nil {
			t.Fatal(err)
		}
	}
	p.Close()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}

	consume := func(args ...string) string {
		return ok(t, "", append([]string{"consume", "-dir", dir, "-topic", "t", "-e"}, args...)...)
	}
	// Every token of the format, on the first record.
	got := consume("-partition", "0", "-n", "1", "-f", `%t|%p|%o|%k|%s|%T|%h|%K|%S|100%%\t.\n`)
	if want := "t|0|0|first|v0|1700000000123|trace=abc,null,empty=|5|2|100%\t.\n"; got != want {
		t.Errorf("format tokens: %q, want %q", got, want)
	}
	// The default format is the value on a line; partitions are read in turn.
	got = consume()
	if l := lines(got); len(l) != 10 {
		t.Errorf("all records: %q", got)
	}
	if got := consume("-partition", "1"); got != "v1\nv3\nv5\nv7\nv9\n" {
		t.Errorf("partition 1: %q", got)
	}
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"-partition", "0", "-offset", "2"}, "v4\nv6\nv8\n"},
		{[]string{"-partition", "0", "-offset", "beginning", "-n", "2"}, "v0\nv2\n"},
		{[]string{"-partition", "0", "-offset", "earliest", "-n", "2"}, "v0\nv2\n"},
		{[]string{"-partition", "0", "-offset", "end"}, ""},
		{[]string{"-partition", "1", "-offset", "-2"}, "v7\nv9\n"},
		{[]string{"-partition", "1", "-offset", "-99"}, "v1\nv3\nv5\nv7\nv9\n"},
		{[]string{"-partition", "1", "-offset", "5"}, ""}, // the end itself is a valid start
		{[]string{"-offset", "-1", "-f", `%p:%s\n`}, "0:v8\n1:v9\n"},
	}
	for _, c := range cases {
		if got := consume(c.args...); got != c.want {
			t.Errorf("consume %v = %q, want %q", c.args, got, c.want)
		}
	}
}

// TestConsumeRecordsOfManySegments reads a partition whose records span
// segments, from the start and from offsets the offset index leads to.
func TestConsumeRecordsOfManySegments(t *testing.T) {
	dir := t.TempDir()
	const n = 900
	long := strings.Repeat("x", 150)
	fill(t, dir, "big", folio.TopicConfig{SegmentBytes: 48 << 10, Flush: folio.FlushNone}, n, func(i int) string { return "v" + strconv.Itoa(i) + long })
	desc := ok(t, "", "topics", "describe", "-dir", dir, "-topic", "big")
	m := regexp.MustCompile(`EndOffset: (\d+)\tSegments: (\d+)`).FindStringSubmatch(desc)
	if m == nil || m[1] != strconv.Itoa(n) {
		t.Fatalf("describe: %s", desc)
	}
	if segs, _ := strconv.Atoi(m[2]); segs < 3 {
		t.Fatalf("%d segments; the test needs several", segs)
	}
	all := ok(t, "", "consume", "-dir", dir, "-topic", "big", "-e", "-f", `%o %k\n`)
	var want strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&want, "%d k%d\n", i, i)
	}
	if all != want.String() {
		t.Errorf("consume of %d records across segments differs", n)
	}
	for _, start := range []int{1, 17, 299, 300, 301, 450, 777, n - 1} {
		got := ok(t, "", "consume", "-dir", dir, "-topic", "big", "-e", "-offset", strconv.Itoa(start), "-n", "3", "-f", `%o\n`)
		var w strings.Builder
		for i := start; i < min(start+3, n); i++ {
			fmt.Fprintf(&w, "%d\n", i)
		}
		if got != w.String() {
			t.Errorf("from offset %d: %q, want %q", start, got, w.String())
		}
	}
}

// TestApplicationHoldsDirectory: while this process holds the directory
// through folio.Open, the CLI's writes fail naming the holder, and its reads
// work and see what the application wrote.
func TestApplicationHoldsDirectory(t *testing.T) {
	dir := t.TempDir()
	b, err := folio.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := b.CreateTopic("held", folio.TopicConfig{Partitions: 2}); err != nil {
		t.Fatal(err)
	}
	p, err := b.NewProducer(&folio.ProducerOptions{ManualPartitioning: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for i := 0; i < 50; i++ {
		if _, _, err := p.Produce(context.Background(), &folio.Record{Topic: "held", Partition: 1, Value: []byte("v" + strconv.Itoa(i))}); err != nil {
			t.Fatal(err)
		}
	}
	holder := fmt.Sprintf("pid=%d", os.Getpid())
	for _, args := range [][]string{
		{"topics", "create", "-dir", dir, "-topic", "other"},
		{"topics", "delete", "-dir", dir, "-topic", "held"},
		{"produce", "-dir", dir, "-topic", "held"},
	} {
		fails(t, 1, lockedAdvice(holder), "x\n", args...)
	}
	if got := ok(t, "", "consume", "-dir", dir, "-topic", "held", "-e"); got != vals(0, 50) {
		t.Errorf("consume beside the application: %q", got)
	}
	if got := ok(t, "", "topics", "list", "-dir", dir); got != "held\n" {
		t.Errorf("list: %q", got)
	}
	if got := ok(t, "", "topics", "describe", "-dir", dir, "-topic", "held"); !strings.Contains(got, "Partition: 1\tStartOffset: 0\tEndOffset: 50\t") {
		t.Errorf("describe: %s", got)
	}
	if got := ok(t, "", "dump", "-dir", dir, "-topic", "held", "-partition", "1"); strings.Count(got, "crcValid: true") != 50 {
		t.Errorf("dump shows %d valid batches:\n%s", strings.Count(got, "crcValid: true"), got)
	}
	if got := ok(t, "", "verify", "-dir", dir); !strings.Contains(got, "50 records") || !strings.Contains(got, " 0 problems") {
		t.Errorf("verify: %s", got)
	}
	// The reads wrote nothing: the application goes on and closes cleanly.
	if _, _, err := p.Produce(context.Background(), &folio.Record{Topic: "held", Partition: 1, Value: []byte("after")}); err != nil {
		t.Fatal(err)
	}
}

// TestChildProcessHoldsDirectory: another process holds the directory and
// appends, rolling segments; the CLI's writes fail naming it, a following
// consume prints records as they are appended, and reads that exit at the
// end see a gap-free prefix.
func TestChildProcessHoldsDirectory(t *testing.T) {
	dir := t.TempDir()
	h := startHolder(t, dir, "live")
	fails(t, 1, lockedAdvice(fmt.Sprintf("pid=%d", h.pid())), "", "topics", "create", "-dir", dir, "-topic", "x")
	fails(t, 1, lockedAdvice(fmt.Sprintf("pid=%d", h.pid())), "x\n", "produce", "-dir", dir, "-topic", "live")

	// Follow from the end: everything printed was appended after the start.
	cmd := exec.Command(folioBin, "consume", "-dir", dir, "-topic", "live", "-partition", "0", "-offset", "end", "-f", `%o %s\n`, "-interval", "20ms")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(stdout)
	prev := int64(-1)
	for i := 0; i < 1500; i++ { // more than one 16 KiB segment holds
		line, err := readLineTimeout(r, 30*time.Second)
		if err != nil {
			t.Fatalf("following consume stopped after %d lines: %v; stderr %s", i, err, stderr.String())
		}
		var off int64
		var v string
		if _, err := fmt.Sscanf(line, "%d %s", &off, &v); err != nil || v != "v"+strconv.FormatInt(off, 10) {
			t.Fatalf("line %q", line)
		}
		if prev >= 0 && off != prev+1 {
			t.Fatalf("offset %d after %d", off, prev)
		}
		prev = off
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	go func() { _, _ = bufio.NewReader(r).WriteTo(discard{}) }()
	if err := cmd.Wait(); err != nil || stderr.Len() != 0 {
		t.Errorf("consume after SIGINT: %v, stderr %q", err, stderr.String())
	}

	// From the beginning to the end as it is now: a gap-free prefix that
	// spans several segments.
	out := ok(t, "", "consume", "-dir", dir, "-topic", "live", "-partition", "0", "-e", "-f", `%s\n`)
	got := lines(out)
	if len(got) <= int(prev) {
		t.Fatalf("consume -e read %d records, the follower saw offset %d", len(got), prev)
	}
	for i, v := range got {
		if v != "v"+strconv.Itoa(i) {
			t.Fatalf("record %d is %q", i, v)
		}
	}
	desc := ok(t, "", "topics", "describe", "-dir", dir, "-topic", "live")
	m := regexp.MustCompile(`Partition: 0\t.*Segments: (\d+)`).FindStringSubmatch(desc)
	if n, _ := strconv.Atoi(m[1]); n < 2 {
		t.Errorf("the writer rolled no segment; describe: %s", desc)
	}
	vr := cli(t, "", "verify", "-dir", dir)
	if vr.code != 0 || strings.Contains(vr.stdout, "PROBLEM") {
		t.Errorf("verify beside a live writer: exit %d\n%s%s", vr.code, vr.stdout, vr.stderr)
	}
	h.stop(t)
	// Once the holder is gone the directory is writable again.
	ok(t, "", "topics", "create", "-dir", dir, "-topic", "x")
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// TestConsumeTopicDeletedWhileFollowing: a follower whose topic the
// application deletes stops with an error saying so.
func TestConsumeTopicDeletedWhileFollowing(t *testing.T) {
	dir := t.TempDir()
	b, err := folio.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := b.CreateTopic("gone", folio.TopicConfig{}); err != nil {
		t.Fatal(err)
	}
	p, err := b.NewProducer(nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := p.Produce(context.Background(), &folio.Record{Topic: "gone", Value: []byte("first")}); err != nil {
		t.Fatal(err)
	}
	p.Close()
	cmd := exec.Command(folioBin, "consume", "-dir", dir, "-topic", "gone", "-interval", "10ms")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Once it printed the record it is following the partition.
	if line, err := readLineTimeout(bufio.NewReader(out), 30*time.Second); line != "first\n" {
		t.Fatalf("consume printed %q, %v; stderr %s", line, err, stderr.String())
	}
	if err := b.DeleteTopic("gone"); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatal("the follower did not notice the deletion")
	}
	r := result{stderr: stderr.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	}
	checkFailure(t, r, 1, []string{"was the topic deleted?"}, cmd.Args[1:])
}

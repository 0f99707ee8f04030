package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/foliolog/folio/topic"
)

// TestProduceConsumeRoundTrip produces keyed lines with -report and checks
// the report against what consume prints: every line acknowledged once,
// at the partition Kafka's partitioner picks for its key, and read back
// with the key, value and offset the report gave.
func TestProduceConsumeRoundTrip(t *testing.T) {
	dir := t.TempDir()
	ok(t, "", "topics", "create", "-dir", dir, "-topic", "orders", "-partitions", "4")
	var in strings.Builder
	const n = 300
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&in, "customer-%d\torder %d of %d\n", i%17, i, n)
	}
	out := ok(t, in.String(), "produce", "-dir", dir, "-topic", "orders", "-K", `\t`, "-report")
	type ack struct {
		partition int32
		offset    int64
	}
	acks := map[int]ack{}
	for _, l := range lines(out) {
		f := strings.Split(l, "\t")
		if len(f) != 3 {
			t.Fatalf("report line %q: want line<TAB>partition<TAB>offset", l)
		}
		line, _ := strconv.Atoi(f[0])
		p, _ := strconv.Atoi(f[1])
		o, _ := strconv.ParseInt(f[2], 10, 64)
		if _, dup := acks[line]; dup {
			t.Errorf("line %d reported twice", line)
		}
		acks[line] = ack{int32(p), o}
	}
	if len(acks) != n {
		t.Fatalf("%d lines reported, want %d", len(acks), n)
	}
	// Within a partition, acknowledgements come in offset order, which for
	// one producer goroutine is line order.
	lastLine := map[int32]int{}
	for _, l := range lines(out) {
		f := strings.Split(l, "\t")
		line, _ := strconv.Atoi(f[0])
		p := acks[line].partition
		if line < lastLine[p] {
			t.Errorf("partition %d: line %d acknowledged after line %d", p, line, lastLine[p])
		}
		lastLine[p] = line
	}

	got := ok(t, "", "consume", "-dir", dir, "-topic", "orders", "-e", "-f", `%p|%o|%k|%s|%K|%S\n`)
	seen := 0
	for _, l := range lines(got) {
		f := strings.Split(l, "|")
		if len(f) != 6 {
			t.Fatalf("consume line %q", l)
		}
		var i, total int
		if _, err := fmt.Sscanf(f[3], "order %d of %d", &i, &total); err != nil {
			t.Fatalf("value %q: %v", f[3], err)
		}
		a := acks[i]
		if f[0] != strconv.Itoa(int(a.partition)) || f[1] != strconv.FormatInt(a.offset, 10) {
			t.Errorf("line %d consumed at %s/%s, reported at %d/%d", i, f[0], f[1], a.partition, a.offset)
		}
		key := fmt.Sprintf("customer-%d", i%17)
		if f[2] != key || f[4] != strconv.Itoa(len(key)) || f[5] != strconv.Itoa(len(f[3])) {
			t.Errorf("line %d: key %q (len %s), value len %s", i, f[2], f[4], f[5])
		}
		if want, _ := topic.KeyPartition([]byte(key), 4); a.partition != want {
			t.Errorf("key %q went to partition %d, Kafka's partitioner says %d", key, a.partition, want)
		}
		seen++
	}
	if seen != n {
		t.Errorf("consumed %d records, produced %d", seen, n)
	}
}

func TestProduceLines(t *testing.T) {
	dir := t.TempDir()
	// A missing topic is created with the default settings, and one line
	// on stderr says so: a mistyped -topic must not pass unnoticed.
	r := cli(t, "plain\n\nkey only\tand value\nlast line without newline", "produce", "-dir", dir, "-topic", "fresh", "-report")
	if want := `folio produce: created topic "fresh" in ` + dir + " (1 partition, default settings): it did not exist\n"; r.code != 0 || r.stderr != want {
		t.Errorf("produce to a new topic: exit %d, stderr %q; want 0 and %q", r.code, r.stderr, want)
	}
	if got := lines(r.stdout); len(got) != 4 || got[0] != "1\t0\t0" || got[3] != "4\t0\t3" {
		t.Errorf("report = %q", got)
	}
	desc := ok(t, "", "topics", "describe", "-dir", dir, "-topic", "fresh")
	for _, want := range []string{"PartitionCount: 1\t", "flush=sync", "EndOffset: 4\t"} {
		if !strings.Contains(desc, want) {
			t.Errorf("auto-created topic: describe lacks %q:\n%s", want, desc)
		}
	}
	// Without -K the tab is part of the value and there is no key (-1).
	got := ok(t, "", "consume", "-dir", dir, "-topic", "fresh", "-e", "-f", `[%K:%k][%S:%s]\n`)
	want := "[-1:][5:plain]\n[-1:][0:]\n[-1:][18:key only\tand value]\n[-1:][25:last line without newline]\n"
	if got != want {
		t.Errorf("consume = %q, want %q", got, want)
	}

	// With -K a line without the delimiter has no key; a multi-byte
	// delimiter splits at its first occurrence; an empty key is a key.
	// (To a topic that exists, produce says nothing on stderr.)
	ok(t, "", "topics", "create", "-dir", dir, "-topic", "keyed")
	ok(t, "k1::v1\nnovalue\n::empty key\nk2::v::2\n", "produce", "-dir", dir, "-topic", "keyed", "-K", "::")
	got = ok(t, "", "consume", "-dir", dir, "-topic", "keyed", "-e", "-f", `%K %k=%s\n`)
	want = "2 k1=v1\n-1 =novalue\n0 =empty key\n2 k2=v::2\n"
	if got != want {
		t.Errorf("keyed consume = %q, want %q", got, want)
	}

	// -partition sends every record there.
	ok(t, "", "topics", "create", "-dir", dir, "-topic", "spread", "-partitions", "3")
	out := ok(t, "a\nb\nc\n", "produce", "-dir", dir, "-topic", "spread", "-partition", "2", "-report")
	if out != "1\t2\t0\n2\t2\t1\n3\t2\t2\n" {
		t.Errorf("report with -partition 2 = %q", out)
	}

	// A line the topic cannot take fails the run, naming the line.
	ok(t, "", "topics", "create", "-dir", dir, "-topic", "small", "-max.message.bytes", "200")
	r = fails(t, 1, []string{"line 2", "max.message.bytes"}, "ok\n"+strings.Repeat("x", 300)+"\n", "produce", "-dir", dir, "-topic", "small", "-report")
	if r.stdout != "1\t0\t0\n" {
		t.Errorf("report before the failure = %q", r.stdout)
	}

	// A line longer than -batch-bytes (64KiB by default) that the topic
	// takes goes in a batch of its own.
	ok(t, "", "topics", "create", "-dir", dir, "-topic", "large")
	long := strings.Repeat("L", 300<<10)
	for _, args := range [][]string{nil, {"-batch-bytes", "4KiB"}} {
		out := ok(t, "a\n"+long+"\nb\n", append([]string{"produce", "-dir", dir, "-topic", "large", "-report"}, args...)...)
		if strings.Count(out, "\n") != 3 {
			t.Errorf("produce %v of a 300 KiB line: report %q", args, out)
		}
	}
	got = ok(t, "", "consume", "-dir", dir, "-topic", "large", "-e", "-f", `%o %S\n`)
	if want := "0 1\n1 307200\n2 1\n3 1\n4 307200\n5 1\n"; got != want {
		t.Errorf("consume of the large lines = %q, want %q", got, want)
	}
	fails(t, 2, []string{"-batch-bytes"}, "", "produce", "-dir", dir, "-topic", "large", "-batch-bytes", "3")
}

// TestProduceStreams: records are produced as lines arrive, so a writer
// that keeps stdin open sees each line acknowledged before it sends the
// next; and SIGINT ends such a stream cleanly.
func TestProduceStreams(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(folioBin, "produce", "-dir", dir, "-topic", "stream", "-report")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	reports := bufio.NewReader(stdout)
	for i := 1; i <= 5; i++ {
		if _, err := fmt.Fprintf(stdin, "event %d\n", i); err != nil {
			t.Fatal(err)
		}
		line, err := readLineTimeout(reports, 30*time.Second)
		if err != nil {
			t.Fatalf("no acknowledgement of line %d while stdin stays open: %v; stderr %s", i, err, stderr.String())
		}
		if want := fmt.Sprintf("%d\t0\t%d\n", i, i-1); line != want {
			t.Errorf("report %q, want %q", line, want)
		}
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	rest, _ := io.ReadAll(reports)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("produce after SIGINT: %v; stderr %s", err, stderr.String())
	}
	stdin.Close()
	if len(rest) != 0 || stderr.String() != `folio produce: created topic "stream" in `+dir+" (1 partition, default settings): it did not exist\n" {
		t.Errorf("after SIGINT: stdout %q, stderr %q; want nothing after the creation line", rest, stderr.String())
	}
	got := ok(t, "", "consume", "-dir", dir, "-topic", "stream", "-e")
	if got != "event 1\nevent 2\nevent 3\nevent 4\nevent 5\n" {
		t.Errorf("records of the stream: %q", got)
	}
	// The Broker was closed cleanly: the next writer finds nothing to recover.
	if r := ok(t, "", "verify", "-dir", dir); !strings.Contains(r, " 0 problems, 0 notes") {
		t.Errorf("verify after SIGINT: %s", r)
	}
}

// readLineTimeout reads one line, or gives up after d.
func readLineTimeout(r *bufio.Reader, d time.Duration) (string, error) {
	type res struct {
		s   string
		err error
	}
	ch := make(chan res, 1)
	go func() {
		s, err := r.ReadString('\n')
		ch <- res{s, err}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	select {
	case x := <-ch:
		return x.s, x.err
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

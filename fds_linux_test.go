package folio

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// The many-partitions test's child process and its knobs. CI runs 2,500
// partitions under a limit of 256 open files; the full size is
// FOLIO_TEST_PARTITIONS=10000 FOLIO_TEST_NOFILE=1024.
const (
	fdsChildEnv      = "FOLIO_TEST_FDS_CHILD"
	fdsPartitionsEnv = "FOLIO_TEST_PARTITIONS"
	fdsNoFileEnv     = "FOLIO_TEST_NOFILE"
)

// TestManyPartitionsUnderFileLimit: in a child process whose limit on open
// files is 256 (hard and soft, so Go cannot raise it), a topic of 2,500
// partitions is created, takes a record in each partition, is closed,
// reopened, read back record by record, and deleted, and the directory
// opens again after. Before the caps covered active segments, each
// partition held four descriptors from creation on and the creation failed
// with EMFILE a sixteenth of the way. The peak of open descriptors is
// measured (/proc/self/fd) and logged. FOLIO_TEST_PARTITIONS and
// FOLIO_TEST_NOFILE set the size: 10000 and 1024 for the target.
func TestManyPartitionsUnderFileLimit(t *testing.T) {
	if _, err := os.Stat("/proc/self/fd"); err != nil {
		t.Fatalf("counting descriptors needs /proc/self/fd: %v", err)
	}
	parts, limit := envInt(t, fdsPartitionsEnv, 2500), envInt(t, fdsNoFileEnv, 256)
	dir := fastTempDir(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestManyPartitionsChild$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), fdsChildEnv+"=1", childDirEnv+"="+dir,
		fmt.Sprintf("%s=%d", fdsPartitionsEnv, parts), fmt.Sprintf("%s=%d", fdsNoFileEnv, limit))
	out, err := cmd.CombinedOutput()
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, "fds:") {
			t.Log(strings.TrimSpace(line))
		}
	}
	if err != nil || !strings.Contains(string(out), "fds: done") {
		t.Fatalf("child: %v\n%s", err, out)
	}
}

// TestManyPartitionsChild is the body of TestManyPartitionsUnderFileLimit's
// child process; in a normal run it does nothing.
func TestManyPartitionsChild(t *testing.T) {
	if os.Getenv(fdsChildEnv) == "" {
		t.Skip("only runs as the child of TestManyPartitionsUnderFileLimit")
	}
	parts, limit := envInt(t, fdsPartitionsEnv, 2500), envInt(t, fdsNoFileEnv, 256)
	rl := syscall.Rlimit{Cur: uint64(limit), Max: uint64(limit)}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		t.Fatal(err)
	}
	dir := os.Getenv(childDirEnv)
	base := countFDs()
	var peakN atomic.Int64
	peakN.Store(int64(base))
	sample := func() {
		n := int64(countFDs())
		for p := peakN.Load(); n > p && !peakN.CompareAndSwap(p, n); p = peakN.Load() {
		}
	}
	// A sampler besides the samples between steps, for the peaks inside
	// them (a creation's evictions, a close's seals). Its own descriptor
	// for /proc/self/fd counts too.
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				sample()
			}
		}
	}()
	stopSampler := func() {
		if stop != nil {
			close(stop)
			<-sampled
			stop = nil
		}
	}
	defer stopSampler()
	phase := time.Now()
	lap := func(what string) {
		sample()
		t.Logf("fds: %-8s %6.2fs, %d descriptors open, peak %d", what, time.Since(phase).Seconds(), countFDs(), peakN.Load())
		phase = time.Now()
	}
	opts := &Options{CheckpointInterval: -1, RetentionCheckInterval: -1}
	b, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("fds: %d partitions, ulimit -n %d, MaxOpenSegments %d (default), %d descriptors open before Open",
		parts, limit, b.Stats().MaxOpenSegments, base)
	ctx := context.Background()
	if _, err := b.CreateTopic("many", TopicConfig{Partitions: int32(parts)}); err != nil {
		t.Fatal(err)
	}
	lap("create")
	pr, err := b.NewProducer(&ProducerOptions{ManualPartitioning: true})
	if err != nil {
		t.Fatal(err)
	}
	for p := range int32(parts) {
		if _, off, err := pr.Produce(ctx, &Record{Topic: "many", Partition: p, Value: fmt.Appendf(nil, "record of %d", p)}); err != nil || off != 0 {
			t.Fatalf("produce to %d: offset %d, %v", p, off, err)
		}
		if p%64 == 0 {
			sample()
		}
	}
	if err := pr.Close(); err != nil {
		t.Fatal(err)
	}
	lap("produce")
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	lap("close")
	if b, err = Open(dir, opts); err != nil {
		t.Fatal(err)
	}
	lap("reopen")
	c, err := b.NewConsumer(nil)
	if err != nil {
		t.Fatal(err)
	}
	as := make([]Assignment, parts)
	for p := range as {
		as[p] = Assignment{Topic: "many", Partition: int32(p), Start: AtEarliest()}
	}
	if err := c.Assign(as...); err != nil {
		t.Fatal(err)
	}
	seen := make([]bool, parts)
	for got := 0; got < parts; {
		recs, err := c.Poll(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			if r.Offset != 0 || seen[r.Partition] || string(r.Value) != fmt.Sprintf("record of %d", r.Partition) {
				t.Fatalf("read %s-%d at %d: %q (seen before: %v)", r.Topic, r.Partition, r.Offset, r.Value, seen[r.Partition])
			}
			seen[r.Partition] = true
			got++
		}
		sample()
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	lap("read")
	// A read-only open (folio verify's, the console's) of every partition,
	// each log's followed segment included, stays within the budget too.
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	ro, err := OpenReadOnly(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	if c, err = ro.NewConsumer(nil); err != nil {
		t.Fatal(err)
	}
	if err := c.Assign(as...); err != nil {
		t.Fatal(err)
	}
	clear(seen)
	for got := 0; got < parts; {
		recs, err := c.Poll(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			if r.Offset != 0 || seen[r.Partition] || string(r.Value) != fmt.Sprintf("record of %d", r.Partition) {
				t.Fatalf("read-only: read %s-%d at %d: %q (seen before: %v)", r.Topic, r.Partition, r.Offset, r.Value, seen[r.Partition])
			}
			seen[r.Partition] = true
			got++
		}
		sample()
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := ro.Refresh(); err != nil {
		t.Fatal(err)
	}
	if err := ro.Close(); err != nil {
		t.Fatal(err)
	}
	lap("readonly")
	if b, err = Open(dir, opts); err != nil {
		t.Fatal(err)
	}
	if err := b.DeleteTopic("many"); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	lap("delete")
	if b, err = Open(dir, opts); err != nil {
		t.Fatal(err)
	}
	if _, err := b.DescribeTopic("many"); !errors.Is(err, ErrUnknownTopic) {
		t.Fatalf("after DeleteTopic and a reopen: %v", err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	stopSampler()
	peak := int(peakN.Load())
	t.Logf("fds: peak %d descriptors of %d allowed (%d before Open) for %d partitions", peak, limit, base, parts)
	if peak >= limit {
		t.Fatalf("peak %d descriptors reached the limit %d", peak, limit)
	}
	t.Log("fds: done")
}

func envInt(t *testing.T, name string, def int) int {
	t.Helper()
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 {
		t.Fatalf("%s=%q: want a positive number", name, s)
	}
	return n
}

// countFDs returns the process's open descriptors, -1 without /proc.
func countFDs() int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return -1
	}
	return len(ents)
}

// fastTempDir is a temporary directory on tmpfs (/dev/shm) where there is
// one: the test creates tens of thousands of files and fsyncs each
// partition, which on a loaded disk would dominate its time.
func fastTempDir(t *testing.T) string {
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		if dir, err := os.MkdirTemp("/dev/shm", "folio-fds-test"); err == nil {
			t.Cleanup(func() { _ = os.RemoveAll(dir) })
			return dir
		}
	}
	return t.TempDir()
}

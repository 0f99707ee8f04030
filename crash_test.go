package folio

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/foliolog/folio/vfs/faultfs"
)

// childEnv names the environment variable that makes the test binary a
// child of a crash or lock test; childDirEnv carries the data directory.
const (
	childEnv    = "FOLIO_TEST_CHILD"
	childDirEnv = "FOLIO_TEST_DIR"
)

// TestHelperChild is not a test: it is the body of the child processes the
// crash and lock tests start (and kill). It does nothing in a normal run.
func TestHelperChild(t *testing.T) {
	mode := os.Getenv(childEnv)
	if mode == "" {
		t.Skip("only runs as a child of another test")
	}
	dir := os.Getenv(childDirEnv)
	out := os.Stdout
	b, err := Open(dir, &Options{CheckpointInterval: 20 * time.Millisecond})
	if err != nil {
		fmt.Fprintf(out, "error %v\n", err)
		os.Exit(2)
	}
	switch mode {
	case "lock":
		fmt.Fprintf(out, "ready %d\n", os.Getpid())
		_, _ = io.Copy(io.Discard, os.Stdin) // hold the lock until killed
		os.Exit(0)
	case "produce":
		if _, err := b.CreateTopic("crash", TopicConfig{Partitions: 2, SegmentBytes: 16 << 10}); err != nil && !errors.Is(err, ErrTopicExists) {
			fmt.Fprintf(out, "error %v\n", err)
			os.Exit(2)
		}
		p, err := b.NewProducer(nil)
		if err != nil {
			fmt.Fprintf(out, "error %v\n", err)
			os.Exit(2)
		}
		var outMu sync.Mutex // one ack line at a time, unbuffered
		fmt.Fprintf(out, "ready %d\n", os.Getpid())
		var wg sync.WaitGroup
		for g := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; ; i++ {
					v := fmt.Sprintf("g%d-%d-%d", g, os.Getpid(), i)
					p.ProduceAsync(context.Background(), &Record{Topic: "crash", Key: []byte(v), Value: []byte(v)}, func(r *Record, err error) {
						if err != nil {
							return
						}
						outMu.Lock()
						fmt.Fprintf(out, "ack %d %d %s\n", r.Partition, r.Offset, r.Value)
						outMu.Unlock()
					})
				}
			}()
		}
		wg.Wait()
	}
	os.Exit(3)
}

// startChild runs the test binary as a child in mode on dir and waits for
// its "ready" line. The returned scanner reads the rest of its output.
func startChild(t *testing.T, mode, dir string) (*exec.Cmd, *bufio.Scanner, int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), childEnv+"="+mode, childDirEnv+"="+dir)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close() })
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		line := sc.Text()
		if pid, ok := strings.CutPrefix(line, "ready "); ok {
			n, _ := strconv.Atoi(pid)
			return cmd, sc, n
		}
		if strings.HasPrefix(line, "error ") {
			t.Fatalf("child: %s", line)
		}
	}
	t.Fatalf("child exited before it was ready: %v", sc.Err())
	return nil, nil, 0
}

func killChild(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
}

// TestLockHeldByAnotherProcess: a second process gets ErrDirLocked naming
// the holder's pid, and once the holder dies (SIGKILL: no cleanup) the
// kernel drops its flock and the directory opens again.
func TestLockHeldByAnotherProcess(t *testing.T) {
	dir := t.TempDir()
	cmd, _, pid := startChild(t, "lock", dir)
	_, err := Open(dir, nil)
	if !errors.Is(err, ErrDirLocked) {
		t.Fatalf("Open while another process holds the lock: %v", err)
	}
	if !strings.Contains(err.Error(), "pid="+strconv.Itoa(pid)) {
		t.Fatalf("error %q does not name the holder pid %d", err, pid)
	}
	killChild(t, cmd)
	b, err := Open(dir, nil)
	if err != nil {
		t.Fatalf("Open after the holder died: %v", err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
}

// ack is one acknowledged record as a crashed child reported it.
type ack struct {
	partition int32
	offset    int64
	value     string
}

// TestCrashKeepsAcknowledgedRecords kills a producing child with SIGKILL at
// random moments, with checkpoints written every 20 ms, and checks after
// every restart that each record the child saw acknowledged (FlushSync) is
// in the partition at its offset, intact, and that the partition appends
// after the recovered prefix. It tests recovery from a process crash (a
// torn tail, a stale checkpoint, the lock of a dead process), not
// durability: a SIGKILL leaves the page cache to the kernel, so this test
// stays green with every fsync removed. TestPowerCutKeepsSyncAcknowledged
// and the other faultfs power-cut tests are the ones that see a missing
// fsync (docs/ARCHITECTURE.md, Testing).
func TestCrashKeepsAcknowledgedRecords(t *testing.T) {
	seed := testSeed(t)
	rng := rand.New(rand.NewPCG(seed, 1))
	iterations := 6
	if testing.Short() {
		iterations = 3
	}
	dir := t.TempDir()
	var all []ack
	for it := range iterations {
		cmd, sc, _ := startChild(t, "produce", dir)
		delay := time.Duration(30+rng.IntN(200)) * time.Millisecond
		timer := time.AfterFunc(delay, func() { _ = cmd.Process.Signal(syscall.SIGKILL) })
		var acks []ack
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) != 4 || f[0] != "ack" {
				continue // a line torn by the kill
			}
			p, _ := strconv.Atoi(f[1])
			o, _ := strconv.ParseInt(f[2], 10, 64)
			acks = append(acks, ack{int32(p), o, f[3]})
		}
		timer.Stop()
		_ = cmd.Wait()
		t.Logf("iteration %d: killed after %v with %d acknowledged records", it, delay, len(acks))
		all = append(all, acks...)

		b, err := Open(dir, &Options{CheckpointInterval: -1})
		if err != nil {
			t.Fatalf("iteration %d: reopen: %v", it, err)
		}
		checkAcks(t, b, all)
		// The partitions accept appends after the recovered prefix.
		for part := range int32(2) {
			ti, _ := b.DescribeTopic("crash")
			end := ti.Partitions[part].LogEndOffset
			rec := &Record{Topic: "crash", Partition: part, Value: []byte("after")}
			pp, err := b.NewProducer(&ProducerOptions{ManualPartitioning: true})
			if err != nil {
				t.Fatal(err)
			}
			if _, off, err := pp.Produce(context.Background(), rec); err != nil || off != end {
				t.Fatalf("iteration %d: append after recovery to partition %d: offset %d, %v; want %d", it, part, off, err, end)
			}
			all = append(all, ack{part, end, "after"})
			_ = pp.Close()
		}
		if it%2 == 1 {
			// Every other round the child finds a clean shutdown.
			if err := b.Close(); err != nil {
				t.Fatal(err)
			}
		} else {
			kill(t, b, nil)
		}
	}
}

// checkAcks reads every acknowledged record back.
func checkAcks(t *testing.T, b *Broker, acks []ack) {
	t.Helper()
	c, err := b.NewConsumer(&ConsumerOptions{MaxPollRecords: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, a := range acks {
		if err := c.Assign(Assignment{Topic: "crash", Partition: a.partition, Start: AtOffset(a.offset)}); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		recs, err := c.Poll(ctx)
		cancel()
		if err != nil {
			t.Fatalf("acknowledged record %+v: %v", a, err)
		}
		if recs[0].Offset != a.offset || string(recs[0].Value) != a.value {
			t.Fatalf("acknowledged record %+v: read offset %d value %q", a, recs[0].Offset, recs[0].Value)
		}
		_ = c.Unassign(TopicPartition{Topic: "crash", Partition: a.partition})
	}
}

// TestPowerCutKeepsSyncAcknowledged cuts the power (faultfs.FS drops every
// unsynced byte and directory entry) under a running producer, at a random
// number of acknowledgements, and checks that every FlushSync-acknowledged
// record survives and the directory reopens to a valid prefix.
func TestPowerCutKeepsSyncAcknowledged(t *testing.T) {
	seed := testSeed(t)
	rng := rand.New(rand.NewPCG(seed, 2))
	rounds := 8
	if testing.Short() {
		rounds = 4
	}
	fs := faultfs.New()
	dir := t.TempDir()
	var all []ack
	for round := range rounds {
		b, err := Open(dir, faultOpts(fs))
		if err != nil {
			t.Fatalf("round %d: open: %v", round, err)
		}
		checkAcks(t, b, all)
		if round == 0 {
			if _, err := b.CreateTopic("crash", TopicConfig{Partitions: 2, SegmentBytes: 8 << 10}); err != nil {
				t.Fatal(err)
			}
		}
		p, err := b.NewProducer(nil)
		if err != nil {
			t.Fatal(err)
		}
		var (
			mu   sync.Mutex // guards acks
			acks []ack
		)
		target := 50 + rng.IntN(400)
		reached := make(chan struct{})
		var once sync.Once
		for i := 0; i < target*2; i++ {
			v := fmt.Sprintf("r%d-%d", round, i)
			p.ProduceAsync(context.Background(), &Record{Topic: "crash", Key: []byte(v), Value: []byte(v)}, func(r *Record, err error) {
				if err != nil {
					return
				}
				mu.Lock()
				acks = append(acks, ack{r.Partition, r.Offset, string(r.Value)})
				if len(acks) >= target {
					once.Do(func() { close(reached) })
				}
				mu.Unlock()
			})
			if i == target {
				<-reached
				if round%2 == 0 {
					// Cut while appends are in flight.
					break
				}
			}
		}
		kill(t, b, fs)
		if err := fs.PowerCut(); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		t.Logf("round %d: power cut after %d acknowledged records", round, len(acks))
		all = append(all, acks...)
		mu.Unlock()
	}
	b, err := Open(dir, faultOpts(fs))
	if err != nil {
		t.Fatal(err)
	}
	checkAcks(t, b, all)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
}

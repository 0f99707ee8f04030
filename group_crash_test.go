package folio

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/foliolog/folio/group"
	"github.com/foliolog/folio/vfs/faultfs"
)

// committedOffset reads a group's committed offset of one partition.
func committedOffset(t testing.TB, b *Broker, groupID string, tp TopicPartition) int64 {
	t.Helper()
	c, err := b.GroupCoordinator()
	if err != nil {
		t.Fatal(err)
	}
	f, err := c.OffsetFetch(context.Background(), &group.OffsetFetchRequest{Group: groupID,
		Topics: []group.OffsetFetchTopic{{Topic: tp.Topic, Partitions: []int32{tp.Partition}}}})
	if err != nil {
		t.Fatal(err)
	}
	return f.Topics[0].Partitions[0].Offset
}

// powerCut cuts the power under a running Broker: the process dies first
// (every handle is dead, so nothing it does afterwards reaches the disk),
// then the disk loses what was not durable, then the dead Broker's objects
// are torn down (kill, whose writes through new handles land on the
// post-cut disk and are harmless: recovery rebuilds what they touch).
func powerCut(t testing.TB, b *Broker, fs *faultfs.FS) {
	t.Helper()
	fs.Crash()
	if err := fs.PowerCut(); err != nil {
		t.Fatal(err)
	}
	kill(t, b, nil)
}

// abandonGroups ends the group consumers and coordinator of a Broker that
// kill abandoned: their writes fail on the dead logs.
func abandonGroups(b *Broker, gcs ...*GroupConsumer) {
	for _, gc := range gcs {
		_ = gc.Close()
	}
	_ = b.closeGroups()
}

// TestGroupCommitsSurvivePowerCut: members commit in a loop under
// FlushSync; the power is cut at a random moment. After reopening, every
// group's offset is at least its last acknowledged commit and one of the
// values it committed.
func TestGroupCommitsSurvivePowerCut(t *testing.T) {
	seed := testSeed(t)
	rng := rand.New(rand.NewPCG(seed, 7))
	fs := faultfs.New()
	dir := t.TempDir()
	b, err := Open(dir, faultOpts(fs))
	if err != nil {
		t.Fatal(err)
	}
	createTopicT(t, b, "t", TopicConfig{Partitions: 1})
	p, err := b.NewProducer(nil)
	if err != nil {
		t.Fatal(err)
	}
	produceN(t, p, "t", "pc", 400)
	const groups = 3
	var (
		mu           sync.Mutex // guards acked and tried
		acked, tried = map[string]int64{}, map[string]int64{}
		ackCount     int
		dead         atomic.Bool // the process "died": later answers do not count
	)
	cutAfter := 30 + rng.IntN(150)
	cut := make(chan struct{})
	var gcs []*GroupConsumer
	for i := range groups {
		gcs = append(gcs, joinT(t, b, fmt.Sprint("g", i), []string{"t"}, &GroupOptions{DisableAutoCommit: true, Reset: ResetEarliest}))
	}
	var wg sync.WaitGroup
	for i, gc := range gcs {
		g := fmt.Sprint("g", i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for off := int64(1); off < 400; off++ {
				select {
				case <-cut:
					return
				default:
				}
				mu.Lock()
				tried[g] = off
				mu.Unlock()
				err := gc.CommitOffsets(context.Background(), map[TopicPartition]int64{{Topic: "t", Partition: 0}: off})
				if err != nil || dead.Load() {
					return
				}
				mu.Lock()
				acked[g] = off
				ackCount++
				if ackCount == cutAfter {
					close(cut)
				}
				mu.Unlock()
			}
		}()
	}
	<-cut
	dead.Store(true)
	powerCut(t, b, fs)
	wg.Wait()
	abandonGroups(b, gcs...)
	t.Logf("power cut after %d acknowledged commits", cutAfter)

	b = openT(t, dir, faultOpts(fs))
	for i := range groups {
		g := fmt.Sprint("g", i)
		off := committedOffset(t, b, g, TopicPartition{Topic: "t", Partition: 0})
		mu.Lock()
		a, tr := acked[g], tried[g]
		mu.Unlock()
		// Nothing acknowledged: no offset, or one that was tried.
		if valid := off == -1 && a == 0 || off >= max(a, 1) && off <= tr; !valid {
			t.Fatalf("%s at %d after the cut: last acknowledged %d, last tried %d", g, off, a, tr)
		}
	}
	c, _ := b.GroupCoordinator()
	if st := c.Stats(); st.Clamped != 0 {
		t.Fatalf("offsets clamped though the records were durable: %+v", st)
	}
}

// TestGroupClampAfterPowerCut: a group consumes and commits (FlushSync)
// records of a FlushNone topic; the power cut takes the records back. At
// load the commit is clamped to the log end and reported, so the group
// reads the records written next at those offsets instead of skipping them.
func TestGroupClampAfterPowerCut(t *testing.T) {
	fs := faultfs.New()
	dir := t.TempDir()
	b, err := Open(dir, faultOpts(fs))
	if err != nil {
		t.Fatal(err)
	}
	createTopicT(t, b, "fast", TopicConfig{Partitions: 1, Flush: FlushNone})
	p, err := b.NewProducer(nil)
	if err != nil {
		t.Fatal(err)
	}
	produceN(t, p, "fast", "lost", 100)
	gc := joinT(t, b, "g", []string{"fast"}, &GroupOptions{Reset: ResetEarliest, DisableAutoCommit: true})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for n := 0; n < 100; {
		recs, err := gc.Poll(ctx)
		if err != nil {
			t.Fatal(err)
		}
		n += len(recs)
	}
	if err := gc.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	powerCut(t, b, fs)
	abandonGroups(b, gc)

	b = openT(t, dir, faultOpts(fs))
	info, err := b.DescribeTopic("fast")
	if err != nil {
		t.Fatal(err)
	}
	end := info.Partitions[0].LogEndOffset
	if end >= 100 {
		t.Fatalf("the cut kept %d unsynced records; the test needs it to lose some", end)
	}
	c, err := b.GroupCoordinator()
	if err != nil {
		t.Fatal(err)
	}
	if st := c.Stats(); st.Clamped != 1 {
		t.Fatalf("stats %+v, want one clamped offset", st)
	}
	if off := committedOffset(t, b, "g", TopicPartition{Topic: "fast", Partition: 0}); off != end {
		t.Fatalf("committed %d after the cut, want it clamped to the log end %d", off, end)
	}
	p = producerT(t, b, nil)
	produced := produceN(t, p, "fast", "new", 10)
	gc = joinT(t, b, "g", []string{"fast"}, &GroupOptions{Reset: ResetEarliest})
	var got []Record
	for len(got) < 10 {
		recs, err := gc.Poll(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, recs...)
	}
	for i, r := range got {
		if r.Offset != produced[i][1] || string(r.Value) != string(value("new", i)) {
			t.Fatalf("record %d after the clamp: offset %d %q, want offset %d", i, r.Offset, r.Value, produced[i][1])
		}
	}
}

// groupChildEnv makes the test binary the child of
// TestGroupCommitsSurviveSIGKILL; childDirEnv carries its data directory.
const groupChildEnv = "FOLIO_GROUP_TEST_CHILD"

// TestGroupHelperChild is not a test: it is the body of the child process
// TestGroupCommitsSurviveSIGKILL starts and kills. It does nothing in a
// normal run.
func TestGroupHelperChild(t *testing.T) {
	if os.Getenv(groupChildEnv) == "" {
		t.Skip("only runs as a child of TestGroupCommitsSurviveSIGKILL")
	}
	out := os.Stdout
	fail := func(err error) {
		fmt.Fprintf(out, "error %v\n", err)
		os.Exit(2)
	}
	b, err := Open(os.Getenv(childDirEnv), nil)
	if err != nil {
		fail(err)
	}
	if _, err := b.CreateTopic("t", TopicConfig{Partitions: 1}); err != nil {
		fail(err)
	}
	p, err := b.NewProducer(nil)
	if err != nil {
		fail(err)
	}
	for i := range 1000 {
		if _, _, err := p.Produce(context.Background(), &Record{Topic: "t", Value: value("k", i)}); err != nil {
			fail(err)
		}
	}
	// Every group joins before any commits: on a fast disk (tmpfs) the
	// first group used to reach the parent's 400 acknowledgements before
	// the others had joined, and the parent saw one group, not three.
	var gcs []*GroupConsumer
	for g := range 3 {
		gc, err := b.JoinGroup(context.Background(), fmt.Sprint("g", g), []string{"t"}, &GroupOptions{DisableAutoCommit: true})
		if err != nil {
			fail(err)
		}
		gcs = append(gcs, gc)
	}
	start := make(chan struct{})
	var wg sync.WaitGroup
	for g, gc := range gcs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for off := int64(1); off < groupChildCommits; off++ {
				fmt.Fprintf(out, "try g%d %d\n", g, off)
				if err := gc.CommitOffsets(context.Background(), map[TopicPartition]int64{{Topic: "t", Partition: 0}: off}); err != nil {
					fail(err)
				}
				fmt.Fprintf(out, "ack g%d %d\n", g, off)
			}
		}()
	}
	fmt.Fprintf(out, "ready %d\n", os.Getpid())
	close(start)
	wg.Wait()
	fmt.Fprintf(out, "done\n")
	select {} // the parent kills it
}

// groupChildCommits bounds each group's commits in TestGroupHelperChild.
const groupChildCommits = 1000

// TestGroupCommitsSurviveSIGKILL kills (SIGKILL) a process whose group
// members commit in a loop: after reopening, each group's offset is at
// least its last acknowledged commit and at most its last attempted one.
// The kill comes once all three groups have commits acknowledged. A
// SIGKILL leaves the page cache to the kernel, so this test cannot see a
// missing fsync; the power-cut tests (faultfs) do.
func TestGroupCommitsSurviveSIGKILL(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestGroupHelperChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), groupChildEnv+"=1", childDirEnv+"="+dir)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	acked, tried := map[string]int64{}, map[string]int64{}
	sc := bufio.NewScanner(stdout)
	acks, killed := 0, false
	kill := func() {
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
	}
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 1 && f[0] == "error" {
			t.Fatalf("child: %s", sc.Text())
		}
		if len(f) == 1 && f[0] == "done" && !killed {
			killed = true
			kill() // every commit went through before the count was reached
		}
		if len(f) != 3 {
			continue
		}
		v, _ := strconv.ParseInt(f[2], 10, 64)
		switch f[0] {
		case "try":
			tried[f[1]] = v
		case "ack":
			acked[f[1]] = v
			// Killed in the middle of all three groups' commits.
			if acks++; acks >= 400 && len(acked) == 3 && !killed {
				killed = true
				kill()
			}
		}
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("child ended with %v, not by SIGKILL (after %d acks)", err, acks)
	}
	b := openT(t, dir, nil)
	for g, a := range acked {
		off := committedOffset(t, b, g, TopicPartition{Topic: "t", Partition: 0})
		if off < a || off > tried[g] {
			t.Fatalf("%s at %d after SIGKILL: last acknowledged %d, last tried %d", g, off, a, tried[g])
		}
	}
	if len(acked) != 3 {
		t.Fatalf("acknowledged commits from %d groups, want 3", len(acked))
	}
}

package group

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/foliolog/folio/log"
	"github.com/foliolog/folio/record"
	"github.com/foliolog/folio/vfs"
	"github.com/foliolog/folio/vfs/faultfs"
)

// openLogs opens (creating) n partition logs of the offsets topic under dir.
func openLogs(t testing.TB, fsys vfs.FS, dir string, n int, policy log.FlushPolicy) []*log.Log {
	t.Helper()
	logs, err := openLogsErr(fsys, dir, n, policy)
	if err != nil {
		t.Fatal(err)
	}
	return logs
}

func openLogsErr(fsys vfs.FS, dir string, n int, policy log.FlushPolicy) ([]*log.Log, error) {
	// The partition directories are made durable first, as the Broker's
	// topic catalog does: the log syncs its own files, not its parent.
	if err := mkdirDurable(fsys, dir); err != nil {
		return nil, err
	}
	for p := range n {
		if err := mkdirDurable(fsys, filepath.Join(dir, fmt.Sprintf("%s-%d", OffsetsTopic, p))); err != nil {
			return nil, err
		}
	}
	var logs []*log.Log
	for p := range n {
		l, err := log.Open(fsys, filepath.Join(dir, fmt.Sprintf("%s-%d", OffsetsTopic, p)), &log.Options{
			SegmentBytes: 1 << 20, FlushPolicy: policy, RetentionAge: -1, RetentionCheckInterval: -1,
		}, log.State{})
		if err != nil {
			closeLogs(logs)
			return nil, fmt.Errorf("opening offsets partition %d: %w", p, err)
		}
		logs = append(logs, l)
	}
	return logs, nil
}

// mkdirDurable creates dir, whose parent exists durably, and syncs the
// parent so that the new entry survives a power cut.
func mkdirDurable(fsys vfs.FS, dir string) error {
	if err := fsys.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return fsys.SyncDir(filepath.Dir(dir))
}

func closeLogs(logs []*log.Log) {
	for _, l := range logs {
		_ = l.Close()
	}
}

// bigTopics has topic "t" with n partitions whose logs end far away.
type bigTopics struct{ n int32 }

func (b bigTopics) Partitions(topic string) (int32, error) {
	if topic != "t" {
		return 0, fmt.Errorf("%q: %w", topic, ErrUnknownTopicOrPartition)
	}
	return b.n, nil
}

func (b bigTopics) Offsets(topic string, p int32) (PartitionOffsets, error) {
	if topic != "t" || p < 0 || p >= b.n {
		return PartitionOffsets{}, fmt.Errorf("%s-%d: %w", topic, p, ErrUnknownTopicOrPartition)
	}
	return PartitionOffsets{LogStart: 0, HighWatermark: 1 << 50, LogEnd: 1 << 50}, nil
}

func simpleCommit(c *Coordinator, group string, p int32, off int64) error {
	resp, err := c.OffsetCommit(context.Background(), &OffsetCommitRequest{Group: group, GenerationID: -1,
		Topics: []OffsetCommitTopic{{Topic: "t", Partitions: []OffsetCommitPartition{{Partition: p, Offset: off, LeaderEpoch: -1, Metadata: "m"}}}}})
	if err != nil {
		return err
	}
	return resp.Err()
}

func TestLogStoreKeepsCommitsAcrossReopen(t *testing.T) {
	dir := t.TempDir()
	logs := openLogs(t, vfs.Default, dir, 3, log.FlushSync)
	c := newTestCoordinator(t, LogStore(logs), bigTopics{4}, nil)
	groups := []string{"alpha", "beta", "gamma", "delta"}
	for i, g := range groups {
		for p := range int32(4) {
			for off := int64(1); off <= 5; off++ {
				if err := simpleCommit(c, g, p, off*int64(i+1)+int64(p)); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	if res, err := c.DeleteGroups(context.Background(), []string{"delta"}); err != nil || res[0].Err != nil {
		t.Fatalf("delete: %v %v", res, err)
	}
	c.Close()
	closeLogs(logs)

	logs = openLogs(t, vfs.Default, dir, 3, log.FlushSync)
	defer closeLogs(logs)
	c = newTestCoordinator(t, LogStore(logs), bigTopics{4}, nil)
	defer c.Close()
	for i, g := range groups {
		for p := range int32(4) {
			want := 5*int64(i+1) + int64(p)
			if g == "delta" {
				want = -1
			}
			if off := fetchOffset(t, c, g, TopicPartition{"t", p}); off != want {
				t.Fatalf("%s t-%d after reopen: %d, want %d", g, p, off, want)
			}
		}
	}
	st := c.Stats()
	// 4 groups x 4 partitions x 5 commits, delta's 4 offset tombstones and
	// its group metadata tombstone.
	if st.LoadedRecords != 4*4*5+4+1 || st.SkippedRecords != 0 || st.Groups != 3 {
		t.Fatalf("load stats %+v", st)
	}
	// Each group's records are in its own partition, as Kafka places them.
	for _, g := range groups[:3] {
		p := PartitionFor(g, 3)
		found := false
		_ = LogStore(logs).Scan(p, func(b record.Batch) error {
			it := b.Records(nil)
			defer it.Close()
			for it.Next() {
				r, _, err := decodeOffsetRecord(it.Record().Key(), it.Record().Value(), it.Record().ValueIsNull())
				if err == nil && r.group == g {
					found = true
				}
			}
			return nil
		})
		if !found {
			t.Fatalf("group %s has no records in partition %d", g, p)
		}
	}
}

func TestLoadSkipsRecordsThatDoNotDecode(t *testing.T) {
	dir := t.TempDir()
	logs := openLogs(t, vfs.Default, dir, 1, log.FlushSync)
	defer closeLogs(logs)
	c := newTestCoordinator(t, LogStore(logs), bigTopics{1}, nil)
	if err := simpleCommit(c, "g", 0, 7); err != nil {
		t.Fatal(err)
	}
	c.Close()
	bld, _ := record.NewBuilder(nil)
	_ = bld.Append(record.Record{Key: []byte{0, 1, 0, 9, 'x'}, Value: []byte{0, 3}})                        // truncated key
	_ = bld.Append(record.Record{Key: appendOffsetKey(nil, "g", TopicPartition{"t", 0}), Value: []byte{0}}) // short value
	_ = bld.Append(record.Record{Key: []byte{0, 2, 0, 1, 'g'}, Value: []byte{0, 3}})                        // truncated group metadata
	empty := kmsg.GroupMetadataValue{Version: 3, Generation: 4}
	_ = bld.Append(record.Record{Key: appendGroupKey(nil, "g"), Value: empty.AppendTo(nil)}) // a valid one
	b, err := bld.Build(nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := logs[0].Append(b); err != nil {
		t.Fatal(err)
	}
	c = newTestCoordinator(t, LogStore(logs), bigTopics{1}, nil)
	defer c.Close()
	if st := c.Stats(); st.SkippedRecords != 3 || st.LoadedRecords != 5 {
		t.Fatalf("stats %+v", st)
	}
	// The valid record's generation is kept; the group is Empty.
	if d, err := c.DescribeGroups(context.Background(), []string{"g"}); err != nil || d[0].GenerationID != 4 || d[0].State != StateEmpty {
		t.Fatalf("after load: %+v, %v", d, err)
	}
	if off := fetchOffset(t, c, "g", TopicPartition{"t", 0}); off != 7 {
		t.Fatalf("offset %d", off)
	}
}

// dataTopics is the Topics view of real data-topic logs.
type dataTopics map[string][]*log.Log

func (d dataTopics) Partitions(topic string) (int32, error) {
	ls, ok := d[topic]
	if !ok {
		return 0, fmt.Errorf("%q: %w", topic, ErrUnknownTopicOrPartition)
	}
	return int32(len(ls)), nil
}

func (d dataTopics) Offsets(topic string, p int32) (PartitionOffsets, error) {
	ls := d[topic]
	if p < 0 || int(p) >= len(ls) {
		return PartitionOffsets{}, fmt.Errorf("%s-%d: %w", topic, p, ErrUnknownTopicOrPartition)
	}
	l := ls[p]
	return PartitionOffsets{LogStart: l.LogStartOffset(), HighWatermark: l.HighWatermark(), LogEnd: l.LogEndOffset()}, nil
}

// TestClampAfterDataLoss: a group commits records of a FlushNone topic;
// a power cut takes the unsynced records back but not the (FlushSync)
// commit. At load the commit is clamped to the log end, durably, so the
// records written next at those offsets are consumed, not skipped.
func TestClampAfterDataLoss(t *testing.T) {
	fsys := faultfs.New()
	dir := t.TempDir()
	dataDir := filepath.Join(dir, "t-0")
	openData := func() *log.Log {
		l, err := log.Open(fsys, dataDir, &log.Options{SegmentBytes: 1 << 20, FlushPolicy: log.FlushNone, RetentionAge: -1, RetentionCheckInterval: -1}, log.State{})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	appendN := func(l *log.Log, n int) {
		for range n {
			bld, _ := record.NewBuilder(nil)
			_ = bld.Append(record.Record{Value: []byte("v")})
			b, _ := bld.Build(nil)
			if _, _, err := l.Append(b); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := mkdirDurable(fsys, dataDir); err != nil {
		t.Fatal(err)
	}
	data := openData()
	appendN(data, 10)
	if err := data.Sync(); err != nil {
		t.Fatal(err)
	}
	appendN(data, 40) // page cache only
	logs := openLogs(t, fsys, filepath.Join(dir, "offsets"), 2, log.FlushSync)
	c := newTestCoordinator(t, LogStore(logs), dataTopics{"t": {data}}, nil)
	if err := simpleCommit(c, "g", 0, 50); err != nil {
		t.Fatal(err)
	}
	c.Close()
	if err := fsys.PowerCut(); err != nil {
		t.Fatal(err)
	}
	_ = data.Close()
	closeLogs(logs)

	data = openData()
	defer data.Close()
	if end := data.LogEndOffset(); end != 10 {
		t.Fatalf("data log end after the cut: %d, want 10", end)
	}
	logs = openLogs(t, fsys, filepath.Join(dir, "offsets"), 2, log.FlushSync)
	defer closeLogs(logs)
	logged := &lockedBuffer{}
	c = newTestCoordinator(t, LogStore(logs), dataTopics{"t": {data}}, func(o *Options) {
		o.Logger = slog.New(slog.NewTextHandler(logged, nil))
	})
	if off := fetchOffset(t, c, "g", TopicPartition{"t", 0}); off != 10 {
		t.Fatalf("offset after load %d, want it clamped to 10", off)
	}
	if st := c.Stats(); st.Clamped != 1 {
		t.Fatalf("stats %+v", st)
	}
	if !strings.Contains(logged.String(), "clamping") {
		t.Fatalf("the clamp was not logged: %s", logged.String())
	}
	c.Close()
	// New records reach offset 60; the clamp was durable, so a later load
	// does not bring back 50 and skip 10..49.
	appendN(data, 50)
	c = newTestCoordinator(t, LogStore(logs), dataTopics{"t": {data}}, nil)
	defer c.Close()
	if off := fetchOffset(t, c, "g", TopicPartition{"t", 0}); off != 10 {
		t.Fatalf("offset after the second load %d, want 10", off)
	}
	if st := c.Stats(); st.Clamped != 0 {
		t.Fatalf("clamped again: %+v", st)
	}
	lag, err := c.Lag("g")
	if err != nil || len(lag) != 1 || lag[0].Lag != 50 || lag[0].Committed != 10 || lag[0].HighWatermark != 60 {
		t.Fatalf("lag %+v %v", lag, err)
	}
}

// TestCommitsSurvivePowerCut commits from several goroutines under
// FlushSync and cuts the power at a random moment: after reopening, every
// group's offset is at least its last acknowledged commit and is one of
// the values it committed.
func TestCommitsSurvivePowerCut(t *testing.T) {
	seed := testSeed(t)
	rounds := 8
	if testing.Short() {
		rounds = 3
	}
	for round := range rounds {
		rng := rand.New(rand.NewPCG(seed, uint64(round)))
		powerCutRound(t, rng, fmt.Sprintf("round %d (seed %d)", round, seed))
	}
}

func powerCutRound(t *testing.T, rng *rand.Rand, name string) {
	fsys := faultfs.New()
	dir := t.TempDir()
	logs := openLogs(t, fsys, dir, 2, log.FlushSync)
	c := newTestCoordinator(t, LogStore(logs), bigTopics{2}, nil)
	const groups = 6
	var (
		mu       sync.Mutex // guards acked and tried
		acked    = map[string]int64{}
		tried    = map[string]map[int64]bool{}
		ackCount int
	)
	cutAfter := 20 + rng.IntN(200)
	cut := make(chan struct{})
	// A real power cut ends the process: no acknowledgement arrives after
	// it. Here the goroutines run on (the log may even fsync through a
	// handle opened after the cut), so answers once the cut has begun
	// are not counted.
	var dead atomic.Bool
	var wg sync.WaitGroup
	for i := range groups {
		tried[fmt.Sprintf("g%d", i)] = map[int64]bool{}
	}
	for i := range groups {
		g := fmt.Sprintf("g%d", i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for off := int64(1); ; off++ {
				select {
				case <-cut:
					return
				default:
				}
				mu.Lock()
				tried[g][off] = true
				mu.Unlock()
				if err := simpleCommit(c, g, 0, off); err != nil || dead.Load() {
					return // the cut killed the log, or the process
				}
				mu.Lock()
				acked[g] = off
				ackCount++
				n := ackCount
				mu.Unlock()
				if n == cutAfter {
					close(cut)
				}
			}
		}()
	}
	<-cut
	dead.Store(true)
	if err := fsys.PowerCut(); err != nil {
		t.Fatalf("%s: power cut: %v", name, err)
	}
	wg.Wait()
	c.Close()
	closeLogs(logs)
	logs = openLogs(t, fsys, dir, 2, log.FlushSync)
	defer closeLogs(logs)
	c = newTestCoordinator(t, LogStore(logs), bigTopics{2}, nil)
	defer c.Close()
	for i := range groups {
		g := fmt.Sprintf("g%d", i)
		off := fetchOffset(t, c, g, TopicPartition{"t", 0})
		mu.Lock()
		a, ok := acked[g]
		valid := tried[g][off]
		mu.Unlock()
		if ok && off < a {
			t.Fatalf("%s: %s at %d after the cut, below its last acknowledged commit %d", name, g, off, a)
		}
		if off != -1 && !valid {
			t.Fatalf("%s: %s at %d, a value it never committed", name, g, off)
		}
	}
}

const crashChildEnv = "GROUP_CRASH_CHILD_DIR"

// TestCommitsSurviveSIGKILL runs a child process that commits in a loop on
// real files under FlushSync and kills it with SIGKILL: after reopening,
// each group is at or past its last acknowledged commit and at most at the
// last one it attempted. A SIGKILL leaves the page cache to the kernel, so
// this test cannot see a missing fsync; TestCommitsSurvivePowerCut does.
func TestCommitsSurviveSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns a child process")
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCommitsSurviveSIGKILL$")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	acked, tried := map[string]int64{}, map[string]int64{}
	sc := bufio.NewScanner(out)
	n := 0
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 3 {
			continue
		}
		v, _ := strconv.ParseInt(f[2], 10, 64)
		switch f[0] {
		case "try":
			tried[f[1]] = v
		case "ack":
			acked[f[1]] = v
			if n++; n == 300 {
				_ = cmd.Process.Signal(syscall.SIGKILL)
			}
		}
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("child: %v", err)
	}
	logs := openLogs(t, vfs.Default, dir, 2, log.FlushSync)
	defer closeLogs(logs)
	c := newTestCoordinator(t, LogStore(logs), bigTopics{2}, nil)
	defer c.Close()
	for g, a := range acked {
		off := fetchOffset(t, c, g, TopicPartition{"t", 0})
		if off < a || off > tried[g] {
			t.Fatalf("%s at %d after SIGKILL: last acknowledged %d, last tried %d", g, off, a, tried[g])
		}
	}
	if len(acked) == 0 {
		t.Fatal("the child acknowledged nothing")
	}
}

// crashChild is the child of TestCommitsSurviveSIGKILL: it commits until
// it is killed.
func crashChild(dir string) {
	logs, err := openLogsErr(vfs.Default, dir, 2, log.FlushSync)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	c, err := NewCoordinator(&Options{Store: LogStore(logs), Topics: bigTopics{2}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	var wg sync.WaitGroup
	for i := range 4 {
		g := fmt.Sprintf("g%d", i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for off := int64(1); ; off++ {
				fmt.Fprintf(os.Stdout, "try %s %d\n", g, off)
				if err := simpleCommit(c, g, 0, off); err != nil {
					fmt.Fprintln(os.Stderr, err)
					os.Exit(2)
				}
				fmt.Fprintf(os.Stdout, "ack %s %d\n", g, off)
			}
		}()
	}
	wg.Wait()
	time.Sleep(time.Hour)
}

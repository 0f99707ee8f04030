package group

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/foliolog/folio/log"
	"github.com/foliolog/folio/vfs"
)

// benchGroup is a group of in-process members polling on their own
// goroutines, with callbacks that return at once.
type benchGroup struct {
	c      *Coordinator
	topics *memTopics
}

type benchMember struct {
	m      *Member[testRec]
	cancel context.CancelFunc
	done   chan struct{}
}

func (g *benchGroup) join(b *testing.B, name string) *benchMember {
	r := newMemReader(g.topics)
	m, err := Join(context.Background(), g.c, "bench", r, &MemberOptions{
		Topics: []string{"t"}, ClientID: name, Reset: ResetEarliest,
		OnAssigned: func(context.Context, []TopicPartition) {},
		OnRevoked:  func(context.Context, []TopicPartition) {},
	})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	bm := &benchMember{m: m, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(bm.done)
		for ctx.Err() == nil {
			if _, err := m.Poll(ctx); err != nil && ctx.Err() == nil && !errors.Is(err, ErrClosed) {
				b.Error(err)
				return
			}
		}
	}()
	return bm
}

func (bm *benchMember) close() {
	bm.cancel()
	<-bm.done
	_ = bm.m.Close()
}

// settled reports whether the group is Stable, every member is in its
// generation with nothing pending, and the members own every partition.
func (g *benchGroup) settled(members []*benchMember, parts int) bool {
	grp, _ := g.c.lookup("bench")
	if grp == nil {
		return false
	}
	grp.mu.Lock()
	stable := grp.state == StateStable && len(grp.pendingSync) == 0 && len(grp.members) == len(members)
	gen := grp.generation
	grp.mu.Unlock()
	if !stable {
		return false
	}
	owned := 0
	for _, bm := range members {
		bm.m.mu.Lock()
		ok := bm.m.generation == gen && !bm.m.rejoin && !bm.m.inRebalance
		owned += len(bm.m.owned)
		bm.m.mu.Unlock()
		if !ok {
			return false
		}
	}
	return owned == parts
}

func (g *benchGroup) waitSettled(b *testing.B, members []*benchMember, parts int) {
	deadline := time.Now().Add(10 * time.Second)
	for !g.settled(members, parts) {
		if time.Now().After(deadline) {
			b.Fatalf("the group did not settle")
		}
		time.Sleep(20 * time.Microsecond)
	}
}

// BenchmarkRebalance measures, in a group of 10 members over 100
// partitions with the cooperative-sticky assignor, how long it takes from
// an 11th member's Join (or its clean Close) until the group is stable
// again with every partition owned: both rebalances of the cooperative
// hand-over included. Target: under 50 ms each.
func BenchmarkRebalance(b *testing.B) {
	const parts = 100
	topics := newMemTopics()
	topics.create("t", parts)
	c := newTestCoordinator(b, newMemStore(1), topics, nil)
	defer c.Close()
	g := &benchGroup{c: c, topics: topics}
	var members []*benchMember
	for i := range 10 {
		members = append(members, g.join(b, fmt.Sprint("m", i)))
	}
	g.waitSettled(b, members, parts)
	var joins, leaves []time.Duration
	b.ResetTimer()
	for i := range b.N {
		start := time.Now()
		extra := g.join(b, fmt.Sprint("x", i))
		all := append(slices.Clone(members), extra)
		g.waitSettled(b, all, parts)
		joins = append(joins, time.Since(start))
		start = time.Now()
		extra.close()
		g.waitSettled(b, members, parts)
		leaves = append(leaves, time.Since(start))
	}
	b.StopTimer()
	b.ReportMetric(ms(median(joins)), "ms/join-p50")
	b.ReportMetric(ms(percentile(joins, 0.99)), "ms/join-p99")
	b.ReportMetric(ms(median(leaves)), "ms/leave-p50")
	b.ReportMetric(ms(percentile(leaves, 0.99)), "ms/leave-p99")
	for _, bm := range members {
		bm.close()
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func median(ds []time.Duration) time.Duration { return percentile(ds, 0.5) }

func percentile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(int(q*float64(len(s))), len(s)-1)]
}

// benchDir is where the commit benchmarks write: FOLIO_BENCH_DIR, or a
// temporary directory (often tmpfs, whose fsyncs cost nothing: set the
// variable to a directory on a real disk).
func benchDir(b *testing.B) string {
	if d := os.Getenv("FOLIO_BENCH_DIR"); d != "" {
		dir, err := os.MkdirTemp(d, "group-bench")
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { os.RemoveAll(dir) })
		return dir
	}
	return b.TempDir()
}

// fsyncMedian measures the median latency of a small write plus fsync of a
// file in dir: the unit the commit targets are stated in.
func fsyncMedian(b *testing.B, dir string, n int) time.Duration {
	f, err := os.OpenFile(filepath.Join(dir, "fsync-probe"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	var ds []time.Duration
	buf := make([]byte, 128)
	for i := range n {
		start := time.Now()
		if _, err := f.WriteAt(buf, int64(i*len(buf))); err != nil {
			b.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			b.Fatal(err)
		}
		ds = append(ds, time.Since(start))
	}
	return median(ds)
}

// BenchmarkCommitSync measures synchronous commits of one member under
// FlushSync against the median fsync of the same disk, measured in the
// same run. Target: median commit under two median fsyncs.
func BenchmarkCommitSync(b *testing.B) {
	dir := benchDir(b)
	logs := openLogs(b, vfs.Default, filepath.Join(dir, "offsets"), 1, log.FlushSync)
	defer closeLogs(logs)
	c := newTestCoordinator(b, LogStore(logs), bigTopics{1}, nil)
	defer c.Close()
	fsync := fsyncMedian(b, dir, 200)
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		start := time.Now()
		if err := simpleCommit(c, "g", 0, int64(i+1)); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	p50 := median(lat)
	b.ReportMetric(float64(p50.Microseconds()), "µs/commit-p50")
	b.ReportMetric(float64(fsync.Microseconds()), "µs/fsync-p50")
	b.ReportMetric(float64(p50)/float64(max(fsync, 1)), "commit/fsync")
}

// BenchmarkCommitConcurrent measures commits per second from 16
// goroutines, each committing for its own group, all groups in one offsets
// partition so that their fsyncs are shared (group commit). Target: at
// least 10,000 commits/s.
func BenchmarkCommitConcurrent(b *testing.B) {
	dir := benchDir(b)
	logs := openLogs(b, vfs.Default, filepath.Join(dir, "offsets"), 1, log.FlushSync)
	defer closeLogs(logs)
	c := newTestCoordinator(b, LogStore(logs), bigTopics{1}, nil)
	defer c.Close()
	const committers = 16
	var next atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for w := range committers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			g := fmt.Sprint("g", w)
			for {
				n := next.Add(1)
				if n > int64(b.N) {
					return
				}
				if err := simpleCommit(c, g, 0, n); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "commits/s")
	b.ReportMetric(float64(b.N)/float64(max(logs[0].Stats().Syncs, 1)), "commits/fsync")
}

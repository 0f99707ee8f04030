package log

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/foliolog/folio/errs"
	"github.com/foliolog/folio/record"
	"github.com/foliolog/folio/vfs"
	"github.com/foliolog/folio/vfs/faultfs"
)

func TestEpochCheckpointFormat(t *testing.T) {
	entries := []EpochEntry{{0, 0}, {3, 17}, {9, 4000}}
	data := FormatEpochCheckpoint(entries)
	if want := "0\n3\n0 0\n3 17\n9 4000\n"; string(data) != want {
		t.Fatalf("format: %q, want %q", data, want)
	}
	got, err := ParseEpochCheckpoint(data)
	if err != nil || !slices.Equal(got, entries) {
		t.Fatalf("parse: %v, %v", got, err)
	}
	if got, err := ParseEpochCheckpoint([]byte("0\n0\n")); err != nil || len(got) != 0 {
		t.Fatalf("empty: %v, %v", got, err)
	}
	if got, err := ParseEpochCheckpoint([]byte("0\n1\n2 5")); err != nil || !slices.Equal(got, []EpochEntry{{2, 5}}) {
		t.Fatalf("no final newline: %v, %v", got, err)
	}
	for _, bad := range []string{
		"", "0", "1\n0\n", "0\n2\n0 0\n", "0\n1\n0 0\n1 5\n", "0\n1\n0  0\n", "0\n1\n-1 0\n",
		"0\n1\n0 -3\n", "0\n2\n3 10\n2 20\n", "0\n2\n2 10\n3 10\n", "0\n01\n0 0\n", "0\n1\n+1 0\n",
		"0\n1\n99999999999 0\n", "0\n1\n0 0 0\n", "0\n1\n0 0\n\n", "0\n1\r\n0 0\n",
	} {
		if _, err := ParseEpochCheckpoint([]byte(bad)); !errors.Is(err, ErrBadEpochCheckpoint) || !errors.Is(err, ErrCorrupt) {
			t.Errorf("parse %q: %v, want ErrBadEpochCheckpoint", bad, err)
		}
	}
}

func FuzzParseEpochCheckpoint(f *testing.F) {
	f.Add([]byte("0\n3\n0 0\n3 17\n9 4000\n"))
	f.Add([]byte("0\n0\n"))
	f.Add([]byte("0\n1\n2 5"))
	f.Add([]byte("0\n2\n2 10\n3 10\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		entries, err := ParseEpochCheckpoint(data)
		if err != nil {
			if !errors.Is(err, ErrBadEpochCheckpoint) {
				t.Fatalf("error of another class: %v", err)
			}
			return
		}
		// What parses is canonical: formatting gives the input back (up to
		// the optional final newline) and parses to the same entries.
		out := FormatEpochCheckpoint(entries)
		if strings.TrimSuffix(string(out), "\n") != strings.TrimSuffix(string(data), "\n") {
			t.Fatalf("parsed %q to %v, which formats as %q", data, entries, out)
		}
		again, err := ParseEpochCheckpoint(out)
		if err != nil || !slices.Equal(again, entries) {
			t.Fatalf("round trip of %v: %v, %v", entries, again, err)
		}
	})
}

// TestEndOffsetForEpoch checks Kafka's OffsetForLeaderEpoch answers on a
// lineage 0@0, 2@10, 5@20 with the log ending at 30.
func TestEndOffsetForEpoch(t *testing.T) {
	l := openT(t, nil, t.TempDir(), &Options{FlushPolicy: FlushNone}, State{})
	for _, step := range []struct {
		epoch int32
		n     int
	}{{0, 10}, {2, 10}, {5, 10}} {
		if err := l.SetLeaderEpoch(step.epoch); err != nil {
			t.Fatal(err)
		}
		for range step.n {
			if _, _, err := l.Append(makeBatch(t, "e", 0, 1, 10, 1)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if got, want := l.LeaderEpochs(), []EpochEntry{{0, 0}, {2, 10}, {5, 20}}; !slices.Equal(got, want) {
		t.Fatalf("epochs %v, want %v", got, want)
	}
	check := func(asked, wantEpoch int32, wantEnd int64) {
		t.Helper()
		if e, end := l.EndOffsetForEpoch(asked); e != wantEpoch || end != wantEnd {
			t.Errorf("EndOffsetForEpoch(%d) = %d, %d; want %d, %d", asked, e, end, wantEpoch, wantEnd)
		}
	}
	check(5, 5, 30) // the latest: the log end
	check(4, 2, 20) // between: the largest epoch below, ending where 5 starts
	check(2, 2, 20)
	check(1, 0, 10)
	check(0, 0, 10)
	check(6, UndefinedEpoch, UndefinedOffset) // above the latest
	check(-1, UndefinedEpoch, UndefinedOffset)
	if err := l.SetLeaderEpoch(4); !errors.Is(err, ErrEpochRegressed) {
		t.Fatalf("SetLeaderEpoch below the latest: %v", err)
	}
	// The log start moving past epoch 0 moves its entry; an epoch below
	// the first known one is answered with the first start offset.
	if _, err := l.DeleteRecordsBefore(15); err != nil {
		t.Fatal(err)
	}
	if got, want := l.LeaderEpochs(), []EpochEntry{{2, 15}, {5, 20}}; !slices.Equal(got, want) {
		t.Fatalf("epochs after the log start moved to 15: %v, want %v", got, want)
	}
	check(1, 1, 15)
	check(3, 2, 20)
}

// readEpochFileT reads the log's checkpoint file as the next Open would.
func readEpochFileT(t *testing.T, fsys vfs.FS, dir string) []EpochEntry {
	t.Helper()
	if fsys == nil {
		fsys = vfs.Default
	}
	f, err := fsys.OpenFile(filepath.Join(dir, EpochCheckpointFile), os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, _ := f.Stat()
	buf := make([]byte, fi.Size())
	if _, err := f.ReadAt(buf, 0); err != nil && fi.Size() > 0 {
		t.Fatal(err)
	}
	e, err := ParseEpochCheckpoint(buf)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// TestEpochsPersist: the checkpoint is written by SetLeaderEpoch and by
// truncation before they return, follows both ends of the log, and comes
// back at Open, clean or not; a damaged file is reported naming it and
// rebuilt from the batches.
func TestEpochsPersist(t *testing.T) {
	dir := t.TempDir()
	o := &Options{FlushPolicy: FlushSync, SegmentBytes: 400}
	l := openT(t, nil, dir, o, State{})
	for _, ep := range []int32{1, 3, 4} {
		if err := l.SetLeaderEpoch(ep); err != nil {
			t.Fatal(err)
		}
		if got := readEpochFileT(t, nil, dir); got[len(got)-1] != (EpochEntry{ep, l.LogEndOffset()}) {
			t.Fatalf("file after SetLeaderEpoch(%d): %v", ep, got)
		}
		for range 6 {
			if _, _, err := l.Append(makeBatch(t, "e", 0, 2, 40, 1)); err != nil {
				t.Fatal(err)
			}
		}
	}
	want := []EpochEntry{{1, 0}, {3, 12}, {4, 24}}
	if got := readEpochFileT(t, nil, dir); !slices.Equal(got, want) {
		t.Fatalf("file %v, want %v", got, want)
	}
	// Truncating into epoch 3 removes epoch 4, from the file at once.
	if err := l.TruncateTo(20); err != nil {
		t.Fatal(err)
	}
	want = want[:2]
	if got := readEpochFileT(t, nil, dir); !slices.Equal(got, want) {
		t.Fatalf("file after TruncateTo(20): %v, want %v", got, want)
	}
	if e, end := l.EndOffsetForEpoch(4); e != UndefinedEpoch || end != UndefinedOffset {
		t.Fatalf("epoch 4 after the truncation: %d, %d", e, end)
	}
	// A new leader epoch after the truncation starts at the new end.
	if err := l.SetLeaderEpoch(6); err != nil {
		t.Fatal(err)
	}
	if _, _, err := l.Append(makeBatch(t, "e", 0, 2, 40, 1)); err != nil {
		t.Fatal(err)
	}
	want = append(want, EpochEntry{6, 20})
	st := l.Checkpoint()
	l.kill() // a crash: no clean close
	l2 := openT(t, nil, dir, o, st)
	if got := l2.LeaderEpochs(); !slices.Equal(got, want) {
		t.Fatalf("after a crash: %v, want %v", got, want)
	}
	if err := l2.Close(); err != nil {
		t.Fatal(err)
	}
	// Garbage in the file: reported naming it, rebuilt from the batches.
	path := filepath.Join(dir, EpochCheckpointFile)
	if err := os.WriteFile(path, []byte("0\n3\n1 0\n3 1"), 0o644); err != nil {
		t.Fatal(err)
	}
	l3 := openT(t, nil, dir, o, l2.Checkpoint())
	var c *errs.Corruption
	rec := l3.Recovery()
	if !errors.As(rec.EpochCheckpoint, &c) || c.Path != path || !rec.EpochsRebuilt {
		t.Fatalf("damage report: %+v", rec)
	}
	if got := l3.LeaderEpochs(); !slices.Equal(got, want) {
		t.Fatalf("rebuilt: %v, want %v", got, want)
	}
	if err := l3.Close(); err != nil {
		t.Fatal(err)
	}
	if got := readEpochFileT(t, nil, dir); !slices.Equal(got, want) {
		t.Fatalf("rewritten file %v, want %v", got, want)
	}
	// A full truncation (below the log start) empties the cache.
	l4 := openT(t, nil, dir, o, l3.Checkpoint())
	if l4.Recovery().EpochCheckpoint != nil || l4.Recovery().EpochsRebuilt {
		t.Fatalf("clean reopen: %+v", l4.Recovery())
	}
	if _, err := l4.DeleteRecordsBefore(10); err != nil {
		t.Fatal(err)
	}
	if err := l4.TruncateTo(5); err != nil {
		t.Fatal(err)
	}
	if got := l4.LeaderEpochs(); len(got) != 0 || l4.LatestEpoch() != UndefinedEpoch {
		t.Fatalf("after a full truncation: %v", got)
	}
}

// epochsOfBatches derives the leader-epoch lineage from the log's batches,
// for comparison with the cache.
func epochsOfBatches(t *testing.T, l *Log) []EpochEntry {
	t.Helper()
	var c epochCache
	c.latest.Store(UndefinedEpoch)
	for pos := l.LogStartOffset(); pos < l.LogEndOffset(); {
		v, err := l.ReadBounded(pos, 1<<20, BoundLogEnd)
		if err != nil {
			t.Fatal(err)
		}
		buf, _ := v.Bytes()
		for len(buf) > 0 {
			b := record.Batch(buf[:record.Batch(buf).Size()])
			if b.LastOffset() >= pos {
				if b.PartitionLeaderEpoch() != c.latest.Load() {
					c.assign(b.PartitionLeaderEpoch(), b.BaseOffset())
				}
				pos = b.LastOffset() + 1
			}
			buf = buf[len(b):]
		}
		v.Release()
	}
	c.truncateFromStart(l.LogStartOffset())
	return c.all()
}

// TestEpochsPowerCut cuts the power at every file operation of a workload
// that changes epochs, appends, flushes and truncates: after recovery the
// cache is exactly the lineage of the batches that survived, and every
// epoch started below the durable end at the cut is still known.
func TestEpochsPowerCut(t *testing.T) {
	for _, policy := range []FlushPolicy{FlushSync, FlushNone} {
		cuts := 0
		for cutAt := 1; epochPowerCutOnce(t, policy, cutAt); cutAt++ {
			cuts++
		}
		if cuts < 20 {
			t.Fatalf("%v: only %d file operations to cut at", policy, cuts)
		}
		t.Logf("%v: cut at each of %d file operations", policy, cuts)
	}
}

func epochPowerCutOnce(t *testing.T, policy FlushPolicy, cutAt int) (cutInside bool) {
	fsys := faultfs.New()
	dir := t.TempDir()
	o := &Options{FlushPolicy: policy, SegmentBytes: 300, noBackground: true}
	var (
		mu  sync.Mutex
		ops int
		cut bool
	)
	fsys.SetHook(func(faultfs.Op) error {
		mu.Lock()
		defer mu.Unlock()
		if !cut {
			if ops++; ops == cutAt {
				cut = true
				if err := fsys.PowerCut(); err != nil {
					t.Errorf("power cut: %v", err)
				}
			}
		}
		return nil
	})
	cutNow := func() bool { mu.Lock(); defer mu.Unlock(); return cut }
	l, err := Open(fsys, dir, o, State{})
	var ckpt State
	var durableEpochs []EpochEntry
	if err == nil {
		steps := []func() error{
			func() error { return l.SetLeaderEpoch(1) },
			func() error { _, _, err := l.Append(makeBatch(t, "a", 0, 3, 30, 1)); return err },
			func() error { _, _, err := l.Append(makeBatch(t, "a", 3, 3, 30, 1)); return err },
			l.Sync,
			func() error { return l.SetLeaderEpoch(2) },
			func() error { _, _, err := l.Append(makeBatch(t, "b", 0, 3, 30, 1)); return err },
			func() error { ckpt = l.Checkpoint(); return nil },
			l.Sync,
			func() error { return l.TruncateTo(7) },
			func() error { return l.SetLeaderEpoch(5) },
			func() error { _, _, err := l.Append(makeBatch(t, "c", 0, 4, 30, 1)); return err },
			l.Sync,
			func() error {
				// A follower's copy of a later leader's batch.
				b := makeBatch(t, "d", 0, 3, 30, 1)
				b.SetBaseOffset(l.LogEndOffset())
				b.SetPartitionLeaderEpoch(8)
				_, _, err := l.AppendFollower(b)
				return err
			},
			func() error { ckpt = l.Checkpoint(); return nil },
			l.Sync,
		}
		for _, step := range steps {
			if cutNow() {
				break
			}
			_ = step()
			if !cutNow() {
				// What is durable now must come back with its epochs.
				durableEpochs = nil
				for _, e := range l.LeaderEpochs() {
					if e.StartOffset < l.DurableEndOffset() {
						durableEpochs = append(durableEpochs, e)
					}
				}
			}
		}
		l.kill()
	}
	mu.Lock()
	inside := cut
	if !cut {
		cut = true
		if err := fsys.PowerCut(); err != nil {
			t.Fatal(err)
		}
	}
	mu.Unlock()
	fsys.SetHook(nil)
	ckpt.Clean = false
	l2, err := Open(fsys, dir, o, ckpt)
	if err != nil {
		t.Fatalf("%v cut at op %d: reopen: %v", policy, cutAt, err)
	}
	defer l2.Close()
	got, want := l2.LeaderEpochs(), epochsOfBatches(t, l2)
	if !slices.Equal(got, want) {
		t.Fatalf("%v cut at op %d: cache %v, the batches say %v", policy, cutAt, got, want)
	}
	for _, e := range durableEpochs {
		if e.StartOffset < l2.LogEndOffset() && !slices.Contains(got, e) {
			t.Fatalf("%v cut at op %d: durable epoch %v lost (cache %v)", policy, cutAt, e, got)
		}
	}
	return inside
}

// TestTruncateWakesWaiters: a truncation below the offsets waiters wait
// at wakes them: Wait reports ErrTruncated, channel and callback waiters
// fire; a waiter at or below the new end keeps waiting.
func TestTruncateWakesWaiters(t *testing.T) {
	l := openT(t, nil, t.TempDir(), &Options{FlushPolicy: FlushNone, ExternalHighWatermark: true}, State{})
	for range 4 {
		if _, _, err := l.Append(makeBatch(t, "w", 0, 3, 10, 1)); err != nil {
			t.Fatal(err)
		}
	}
	waited := make(chan error, 1)
	go func() { waited <- l.Wait(context.Background(), 10) }()
	for l.hwWake.waiters.Load() == 0 {
		runtime.Gosched() // until Wait has registered (it read the truncation generation before)
	}
	fired := make(chan struct{})
	cancelFn := l.WaitFunc(9, func() { close(fired) })
	defer cancelFn()
	ch, cancelCh := l.WaitChan(3)
	defer cancelCh()
	if err := l.TruncateTo(6); err != nil {
		t.Fatal(err)
	}
	if err := <-waited; !errors.Is(err, ErrTruncated) {
		t.Fatalf("Wait(10) after truncation to 6: %v", err)
	}
	<-fired
	select {
	case <-ch:
		t.Fatal("a waiter at 3, inside the log, fired")
	default:
	}
	if err := l.SetHighWatermark(6); err != nil {
		t.Fatal(err)
	}
	<-ch
}

// blockingFS holds the copy a truncation makes of a segment prefix until
// release is closed.
type blockingFS struct {
	vfs.FS
	entered chan struct{}
	release chan struct{}
	once    sync.Once
}

func (b *blockingFS) OpenFile(name string, flag int, perm os.FileMode) (vfs.File, error) {
	if strings.HasSuffix(name, ".truncate") {
		b.once.Do(func() { close(b.entered) })
		<-b.release
	}
	return b.FS.OpenFile(name, flag, perm)
}

// TestTruncateDoesNotStallOthers: while one log's truncation copies a
// prefix (a reader holds a view of the segment), another log's group
// commits complete.
func TestTruncateDoesNotStallOthers(t *testing.T) {
	fsys := &blockingFS{FS: vfs.Default, entered: make(chan struct{}), release: make(chan struct{})}
	o := &Options{FlushPolicy: FlushSync, ReadPath: 0}
	a := openT(t, fsys, t.TempDir(), o, State{})
	b := openT(t, fsys, t.TempDir(), o, State{})
	for range 5 {
		if _, _, err := a.Append(makeBatch(t, "a", 0, 2, 100, 1)); err != nil {
			t.Fatal(err)
		}
	}
	v, err := a.Read(0, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Release()
	done := make(chan error, 1)
	go func() { done <- a.TruncateTo(4) }()
	<-fsys.entered
	for i := range 3 {
		if _, _, err := b.Append(makeBatch(t, "b", int64(i), 1, 10, 1)); err != nil {
			t.Fatal(err)
		}
	}
	if b.DurableEndOffset() != 3 {
		t.Fatalf("the other log's durable end: %d", b.DurableEndOffset())
	}
	close(fsys.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if a.LogEndOffset() != 4 {
		t.Fatalf("truncated log ends at %d", a.LogEndOffset())
	}
}

// TestEpochSurvivesReopen: after a reopen, and after a follower copied a
// later epoch, Append stamps the lineage's latest epoch, never a lower one
// that would cut the lineage.
func TestEpochSurvivesReopen(t *testing.T) {
	dir := t.TempDir()
	o := &Options{FlushPolicy: FlushNone}
	l := openT(t, nil, dir, o, State{})
	if err := l.SetLeaderEpoch(4); err != nil {
		t.Fatal(err)
	}
	if _, _, err := l.Append(makeBatch(t, "r", 0, 2, 10, 1)); err != nil {
		t.Fatal(err)
	}
	b := makeBatch(t, "r", 2, 2, 10, 1)
	b.SetBaseOffset(2)
	b.SetPartitionLeaderEpoch(7)
	if _, _, err := l.AppendFollower(b); err != nil {
		t.Fatal(err)
	}
	if l.LeaderEpoch() != 7 {
		t.Fatalf("after copying epoch 7 the log stamps %d", l.LeaderEpoch())
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l2 := openT(t, nil, dir, o, l.Checkpoint())
	if l2.LeaderEpoch() != 7 {
		t.Fatalf("reopened log stamps epoch %d, want 7", l2.LeaderEpoch())
	}
	if _, _, err := l2.Append(makeBatch(t, "r", 4, 1, 10, 1)); err != nil {
		t.Fatal(err)
	}
	if got, want := l2.LeaderEpochs(), []EpochEntry{{4, 0}, {7, 2}}; !slices.Equal(got, want) {
		t.Fatalf("epochs %v, want %v", got, want)
	}
}

// TestEpochsConcurrent: appenders racing leader-epoch changes and flushes
// leave a cache equal to the lineage of the batches, before and after a
// reopen.
func TestEpochsConcurrent(t *testing.T) {
	dir := t.TempDir()
	o := &Options{FlushPolicy: FlushEveryN(3), SegmentBytes: 2000}
	l := openT(t, nil, dir, o, State{})
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for w := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				if _, _, err := l.Append(makeBatch(t, "c", int64(w*1000+i), 1+i%2, 20, 1)); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	for ep := int32(1); ep <= 20; ep++ {
		if err := l.SetLeaderEpoch(ep); err != nil {
			t.Fatal(err)
		}
		if ep%5 == 0 {
			if err := l.Sync(); err != nil {
				t.Fatal(err)
			}
		}
	}
	close(stop)
	wg.Wait()
	got, want := l.LeaderEpochs(), epochsOfBatches(t, l)
	// SetLeaderEpoch enters an epoch before its first batch: the cache may
	// hold epochs with no batch yet, each starting where the next begins.
	var withBatches []EpochEntry
	for i, e := range got {
		if i+1 < len(got) && got[i+1].StartOffset == e.StartOffset {
			continue
		}
		if i+1 == len(got) && e.StartOffset == l.LogEndOffset() {
			continue
		}
		withBatches = append(withBatches, e)
	}
	if !slices.Equal(withBatches, want) {
		t.Fatalf("cache %v (with batches %v), the batches say %v", got, withBatches, want)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l2 := openT(t, nil, dir, o, l.Checkpoint())
	if again := l2.LeaderEpochs(); !slices.Equal(again, got) {
		t.Fatalf("after reopen %v, before %v", again, got)
	}
}

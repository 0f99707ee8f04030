package log

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/foliolog/folio/record"
	"github.com/foliolog/folio/segment"
	"github.com/foliolog/folio/vfs/faultfs"
)

// TestCompactConcurrent appends, reads and compacts at once (run it with
// -race): a shared cleaner with a short interval cleans in the background
// while a goroutine calls Compact in a loop. Readers must never get an
// error, only ever see offsets ascending and, per key, values written
// later at later offsets; a view held across passes stays readable. At the
// end every key's last value is there.
func TestCompactConcurrent(t *testing.T) {
	seed := testSeed(t)
	c, err := NewCleaner(&CleanerOptions{Workers: 2, CheckInterval: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	opts := &Options{SegmentBytes: 1024, Compact: true, Cleaner: c, MinCleanableDirtyRatio: 0.05, FlushPolicy: FlushNone}
	l, err := Open(nil, t.TempDir(), opts, State{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()

	const keys = 20
	writes := 300
	if testing.Short() {
		writes = 100
	}
	var (
		done   atomic.Bool
		wg     sync.WaitGroup
		last   [keys]int // the seq of each key's last write
		passes atomic.Int64
	)
	// The appender.
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer done.Store(true)
		rng := newRand(seed)
		for seq := 1; seq <= writes; seq++ {
			k := rng.IntN(keys)
			var recs []kv
			v := []byte(fmt.Sprintf("k%d:%d:%s", k, seq, strings.Repeat("x", rng.IntN(60))))
			recs = append(recs, kv{key: fmt.Sprint("k", k), value: v})
			b := keyedBatch(t, recs, 1, noProducer, testCodecs[seq%len(testCodecs)])
			if _, _, err := l.Append(b); err != nil {
				t.Errorf("append %d: %v", seq, err)
				return
			}
			last[k] = seq
		}
	}()
	// Readers from the start, over and over.
	for r := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !done.Load() {
				if err := readConsistent(l); err != nil {
					t.Errorf("reader %d: %v", r, err)
					return
				}
			}
		}()
	}
	// A reader holding a view across passes.
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !done.Load() {
			v, err := l.Read(l.LogStartOffset(), 4096)
			if errors.Is(err, ErrNoData) {
				continue
			}
			if err != nil {
				t.Errorf("held view: %v", err)
				return
			}
			want := passes.Load() + 2
			for passes.Load() < want && !done.Load() {
				time.Sleep(time.Millisecond)
			}
			_, err = decodeBatches(v)
			v.Release()
			if err != nil {
				t.Errorf("a view held across compaction passes: %v", err)
				return
			}
		}
	}()
	// Compact on demand, beside the cleaner's workers.
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !done.Load() {
			res, err := l.Compact(context.Background())
			if err != nil {
				t.Errorf("compact: %v", err)
				return
			}
			passes.Add(int64(res.Passes))
			time.Sleep(time.Millisecond)
		}
	}()
	wg.Wait()
	if t.Failed() {
		return
	}
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Compact(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := readConsistent(l); err != nil {
		t.Fatal(err)
	}
	latest := map[string]int{}
	for _, r := range recordsOf(readBatches(t, l)) {
		seq, _ := strconv.Atoi(strings.Split(r.value, ":")[1])
		latest[r.key] = seq
	}
	for k, seq := range last {
		if seq != 0 && latest[fmt.Sprint("k", k)] != seq {
			t.Fatalf("key k%d: last value read is write %d, the last written was %d", k, latest[fmt.Sprint("k", k)], seq)
		}
	}
	st := l.CompactionStats()
	t.Logf("%d passes (%d on demand), cleaner %+v, %d records removed", st.Passes, passes.Load(), c.Stats(), st.RecordsRemoved)
	if st.Passes == 0 || st.RecordsRemoved == 0 {
		t.Fatalf("nothing was compacted: %+v", st)
	}
}

// readConsistent reads the log from its start to the high watermark and
// checks what a consumer of a compacted log may rely on: no error, offsets
// ascending, each value naming its key, and a key's values in the order
// they were written.
func readConsistent(l *Log) error {
	off := l.LogStartOffset()
	hw := l.HighWatermark()
	seen := map[string]int{}
	prev := int64(-1)
	for off < hw {
		v, err := l.Read(off, 2048)
		if errors.Is(err, ErrNoData) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read at %d: %w", off, err)
		}
		bs, err := decodeBatches(v)
		v.Release()
		if err != nil {
			return fmt.Errorf("decode at %d: %w", off, err)
		}
		for _, b := range bs {
			if b.last < off {
				continue
			}
			for _, r := range b.recs {
				if r.offset <= prev {
					return fmt.Errorf("offset %d after %d", r.offset, prev)
				}
				prev = r.offset
				parts := strings.Split(r.value, ":")
				if len(parts) != 3 || parts[0] != r.key {
					return fmt.Errorf("record %v: value does not belong to its key", r)
				}
				seq, _ := strconv.Atoi(parts[1])
				if seq <= seen[r.key] {
					return fmt.Errorf("record %v: write %d of its key came before it", r, seen[r.key])
				}
				seen[r.key] = seq
			}
			off = b.last + 1
		}
	}
	return nil
}

// TestCompactBackground: a log opened with Compact and no Cleaner cleans
// itself on its own goroutine once its dirty ratio is reached, and Close
// stops it (the leak check of TestMain sees to that).
func TestCompactBackground(t *testing.T) {
	l, err := Open(nil, t.TempDir(), &Options{SegmentBytes: 512, Compact: true, FlushPolicy: FlushNone}, State{})
	if err != nil {
		t.Fatal(err)
	}
	m := newKVModel()
	for i := range 60 {
		m.appendKV(t, l, []kv{{fmt.Sprint("k", i%4), []byte(fmt.Sprintf("value-%03d-%040d", i, i))}}, 1, noProducer, record.CodecNone)
	}
	deadline := time.Now().Add(20 * time.Second)
	for l.CompactionStats().Passes == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no pass 20 s after the dirty ratio passed the threshold: %+v", l.CompactionStats())
		}
		time.Sleep(5 * time.Millisecond)
	}
	m.checkCompacted(t, l, l.CompactionStats().FirstDirtyOffset, false)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Compact(context.Background()); !errors.Is(err, ErrClosed) {
		t.Fatalf("Compact after Close: %v, want ErrClosed", err)
	}
}

// TestCleanerSharedByLogs: one Cleaner with two workers cleans three logs,
// and Compact on a log whose cleaner is closed returns ErrClosed.
func TestCleanerSharedByLogs(t *testing.T) {
	c, err := NewCleaner(&CleanerOptions{Workers: 2, BufferBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	var ls []*Log
	for range 3 {
		l, err := Open(nil, t.TempDir(), &Options{SegmentBytes: 512, Compact: true, Cleaner: c, FlushPolicy: FlushNone}, State{})
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
		for i := range 40 {
			newKVModel().appendKV(t, l, []kv{{fmt.Sprint("k", i%3), []byte(fmt.Sprintf("%050d", i))}}, 1, noProducer, record.CodecNone)
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	for _, l := range ls {
		for l.CompactionStats().Passes == 0 {
			if time.Now().After(deadline) {
				t.Fatalf("a log of the shared cleaner was not cleaned: %+v", c.Stats())
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	if st := c.Stats(); st.Logs != 3 || st.Passes < 3 || st.Failures != 0 {
		t.Fatalf("cleaner stats %+v", st)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); !errors.Is(err, ErrClosed) {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := ls[0].Compact(context.Background()); !errors.Is(err, ErrClosed) {
		t.Fatalf("Compact with the cleaner closed: %v, want ErrClosed", err)
	}
	for _, l := range ls {
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// hookedCompaction opens a compacted log with several sealed segments on a
// FaultFS and returns it with its model; the caller sets a hook.
func hookedCompaction(t *testing.T) (*faultfs.FS, *Log, *kvModel) {
	fsys := faultfs.New()
	l, err := Open(fsys, t.TempDir(), compactOpts(t, 600, nil), State{})
	if err != nil {
		t.Fatal(err)
	}
	m := newKVModel()
	for i := range 40 {
		m.appendKV(t, l, []kv{{fmt.Sprint("k", i%6), []byte(fmt.Sprintf("%040d", i))}}, 1, noProducer, record.CodecNone)
	}
	return fsys, l, m
}

// TestCompactAbortedByTruncation: a truncation into the segments a pass is
// cleaning, while it writes them, makes the pass give up without changing
// the log; the next pass works.
func TestCompactAbortedByTruncation(t *testing.T) {
	fsys, l, m := hookedCompaction(t)
	defer l.Close()
	var once sync.Once
	cut := int64(10)
	fsys.SetHook(func(op faultfs.Op) error {
		if op.Kind == faultfs.OpCreate && strings.HasSuffix(op.Path, segment.LogSuffix+cleanedSuffix) {
			once.Do(func() {
				if err := l.TruncateTo(cut); err != nil {
					t.Errorf("truncate: %v", err)
				}
			})
		}
		return nil
	})
	_, err := l.Compact(context.Background())
	fsys.SetHook(nil)
	if !errors.Is(err, ErrCompactionAborted) {
		t.Fatalf("compaction across a truncation: %v, want ErrCompactionAborted", err)
	}
	if left := leftovers(t, l.Dir()); len(left) != 0 {
		t.Fatalf("files left: %v", left)
	}
	for o := range m.recs {
		if o >= cut {
			delete(m.recs, o)
		}
	}
	got := recordsOf(readBatches(t, l))
	if int64(len(got)) != cut || l.LogEndOffset() != cut {
		t.Fatalf("after the truncation to %d the log holds %d records, ends at %d", cut, len(got), l.LogEndOffset())
	}
	for i := range 30 {
		m.appendKV(t, l, []kv{{fmt.Sprint("k", i%6), []byte(fmt.Sprintf("again-%040d", i))}}, 1, noProducer, record.CodecNone)
	}
	res, err := l.Compact(context.Background())
	if err != nil || res.Passes != 1 {
		t.Fatalf("the pass after: %+v, %v", res, err)
	}
	m.checkCompacted(t, l, res.FirstDirtyOffset, false)
}

// TestCompactAbandonedByClose: Close during a pass stops it (ErrClosed),
// waits for it, and leaves no file of it behind.
func TestCompactAbandonedByClose(t *testing.T) {
	fsys, l, _ := hookedCompaction(t)
	inPass := make(chan struct{})
	var once sync.Once
	fsys.SetHook(func(op faultfs.Op) error {
		if op.Kind == faultfs.OpCreate && strings.HasSuffix(op.Path, cleanedSuffix) {
			once.Do(func() {
				close(inPass)
				<-l.quit // hold the pass until Close has begun
			})
		}
		return nil
	})
	errc := make(chan error, 1)
	go func() {
		_, err := l.Compact(context.Background())
		errc <- err
	}()
	<-inPass
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; !errors.Is(err, ErrClosed) {
		t.Fatalf("compaction across Close: %v, want ErrClosed", err)
	}
	fsys.SetHook(nil)
	if left := leftovers(t, l.Dir()); len(left) != 0 {
		t.Fatalf("files left: %v", left)
	}
}

// TestCompactCanceled: a context that ends stops a pass the same way.
func TestCompactCanceled(t *testing.T) {
	fsys, l, m := hookedCompaction(t)
	defer l.Close()
	ctx, cancel := context.WithCancel(context.Background())
	handles := fsys.OpenHandles()
	fsys.SetHook(func(op faultfs.Op) error {
		if op.Kind == faultfs.OpCreate && strings.HasSuffix(op.Path, cleanedSuffix) {
			cancel()
		}
		return nil
	})
	_, err := l.Compact(ctx)
	fsys.SetHook(nil)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("compaction with its context canceled: %v", err)
	}
	if got := fsys.OpenHandles(); got != handles {
		t.Fatalf("%d files open after the abandoned pass, %d before", got, handles)
	}
	if left := leftovers(t, l.Dir()); len(left) != 0 {
		t.Fatalf("files left: %v", left)
	}
	m.checkCompacted(t, l, 0, false)
	if got := l.CompactionStats(); got.Passes != 0 || got.FirstDirtyOffset != 0 {
		t.Fatalf("an abandoned pass counted: %+v", got)
	}
}

// TestCleanablePlanDuringFullTruncation: a truncation to below the first
// segment (the group coordinator cuts a damaged __consumer_offsets
// partition at its first offset) publishes a snapshot without segments
// while it deletes their files, before the new empty segment is in. The
// cleaner's plan, computed concurrently without the cleaner's lock for the
// dirty ratio, indexed the first segment and panicked (damage table, seed
// 301 with the flip forced onto base offsets, clean/offsets.log/flip); a
// log without segments has nothing to clean.
func TestCleanablePlanDuringFullTruncation(t *testing.T) {
	fsys := faultfs.New()
	dir := t.TempDir()
	l := openT(t, fsys, dir, &Options{SegmentBytes: 1024, FlushPolicy: FlushNone}, State{})
	defer l.Close()
	appendN(t, l, "b", 20, 2, 60)
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	fsys.SetHook(func(op faultfs.Op) error {
		if (op.Kind == faultfs.OpRename || op.Kind == faultfs.OpRemove) && strings.HasSuffix(op.Path, segment.LogSuffix) {
			once.Do(func() {
				close(entered)
				<-release
			})
		}
		return nil
	})
	done := make(chan error, 1)
	go func() { done <- l.TruncateTo(0) }()
	<-entered
	ratio, ok := func() (float64, bool) {
		defer close(release) // even if the plan panics, or Close waits forever
		return l.cleanable()
	}()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if ok && ratio != 0 {
		t.Fatalf("a log without segments has a dirty ratio %v", ratio)
	}
	if l.LogEndOffset() != 0 {
		t.Fatalf("log end %d after truncating to 0", l.LogEndOffset())
	}
}

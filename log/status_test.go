package log

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/foliolog/folio/vfs/faultfs"
	"go.uber.org/goleak"
)

func closedNow(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// TestWaitChan: ready closes once data at or after the offset is visible,
// not before, and not for a later offset; at once for an offset already
// visible; for every waiter when the log closes.
func TestWaitChan(t *testing.T) {
	for _, p := range []FlushPolicy{FlushNone, FlushSync} {
		t.Run(p.String(), func(t *testing.T) {
			l, err := Open(nil, t.TempDir(), &Options{FlushPolicy: p}, State{})
			if err != nil {
				t.Fatal(err)
			}
			appendN(t, l, "w", 2, 1, 10) // offsets 0, 1
			now, cancelNow := l.WaitChan(1)
			if !closedNow(now) {
				t.Fatal("WaitChan for a visible offset is not ready")
			}
			cancelNow()
			at2, cancel2 := l.WaitChan(2)
			at4, cancel4 := l.WaitChan(4)
			at9, cancel9 := l.WaitChan(9)
			defer cancel2()
			defer cancel4()
			cancel9()
			if closedNow(at2) || closedNow(at4) || closedNow(at9) {
				t.Fatal("a WaitChan channel closed before anything was appended")
			}
			if _, _, err := l.Append(makeBatch(t, "w", 2, 2, 10, 1)); err != nil { // offsets 2, 3
				t.Fatal(err)
			}
			waitFor(t, at2, "WaitChan(2) after offsets 2 and 3 were appended")
			if closedNow(at4) {
				t.Fatal("WaitChan(4) closed with the high watermark at 4")
			}
			if n := l.hwWake.chanWaiters.Load(); n != 1 {
				t.Fatalf("%d channel waiters registered, want 1 (offset 4; 9 was cancelled)", n)
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			waitFor(t, at4, "WaitChan(4) after Close")
			if closedNow(at9) {
				t.Fatal("a cancelled WaitChan channel was closed")
			}
			if after, c := l.WaitChan(100); !closedNow(after) {
				t.Fatal("WaitChan on a closed log is not ready")
			} else {
				c()
			}
		})
	}
}

// TestWaitChanCancelLeavesNothing registers and cancels many waits, from
// several goroutines while an appender moves the high watermark: every
// channel that closed did so with its offset visible (or the log closed),
// nothing stays registered, and no goroutine is left behind.
func TestWaitChanCancelLeavesNothing(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	l, err := Open(nil, t.TempDir(), &Options{FlushPolicy: FlushNone}, State{})
	if err != nil {
		t.Fatal(err)
	}
	const perGoroutine = 5000
	var fired atomic.Int64
	var wg sync.WaitGroup
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := int64(0); i < 300; i++ {
			if _, _, err := l.Append(makeBatch(t, "c", i, 1, 10, 1)); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < perGoroutine; i++ {
				off := int64(i % 400)
				ready, cancel := l.WaitChan(off)
				if closedNow(ready) {
					if hw := l.HighWatermark(); hw <= off {
						t.Errorf("WaitChan(%d) ready with the high watermark at %d", off, hw)
					}
					fired.Add(1)
				}
				cancel()
				cancel() // idempotent
			}
		}()
	}
	wg.Wait()
	<-done
	if n := l.hwWake.chanWaiters.Load(); n != 0 {
		t.Fatalf("%d channel waiters left after every wait was cancelled", n)
	}
	l.hwWake.chanMu.Lock()
	left := len(l.hwWake.byOffset)
	l.hwWake.chanMu.Unlock()
	if left != 0 {
		t.Fatalf("%d registrations left", left)
	}
	if fired.Load() == 0 {
		t.Fatal("no wait was ever ready")
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestErrReportsBackgroundFailure: a failed background flush
// (FlushInterval) shows in Err before any append sees it; Close turns it
// into ErrClosed.
func TestErrReportsBackgroundFailure(t *testing.T) {
	fsys := faultfs.New()
	var armed atomic.Bool
	fsys.SetHook(onceWhen(&armed, faultfs.OpSync, syscall.EIO))
	l, err := Open(fsys, t.TempDir(), &Options{FlushPolicy: FlushInterval(time.Millisecond)}, State{})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Err(); err != nil {
		t.Fatalf("Err of a healthy log: %v", err)
	}
	armed.Store(true)
	if _, _, err := l.Append(makeBatch(t, "e", 0, 1, 10, 1)); err != nil {
		t.Fatalf("append under FlushInterval: %v", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for l.Err() == nil && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if err := l.Err(); !errors.Is(err, ErrFailed) || !errors.Is(err, syscall.EIO) {
		t.Fatalf("Err after a failed background flush: %v", err)
	}
	if err := l.Close(); err != nil {
		t.Fatalf("Close of a failed log: %v", err)
	}
	if err := l.Err(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Err after Close: %v", err)
	}
}

// logBytesOnDisk sums the sizes of the .log files in dir.
func logBytesOnDisk(t testing.TB, dir string) int64 {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".log") {
			fi, err := os.Stat(filepath.Join(dir, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			total += fi.Size()
		}
	}
	return total
}

// TestStatsBytes: Stats.Bytes is the size of the segments through rolls,
// retention, truncation and a reopen.
func TestStatsBytes(t *testing.T) {
	dir := t.TempDir()
	o := &Options{FlushPolicy: FlushNone, SegmentBytes: 1024, RetentionBytes: 3000, RetentionAge: -1}
	l := openT(t, nil, dir, o, State{})
	check := func(when string) {
		t.Helper()
		if got, want := l.Stats().Bytes, logBytesOnDisk(t, dir); got != want || want == 0 {
			t.Fatalf("%s: Stats.Bytes %d, the .log files hold %d", when, got, want)
		}
	}
	appendN(t, l, "b", 40, 2, 40)
	check("after appends and rolls")
	if n, err := l.EnforceRetention(time.Now()); err != nil || n == 0 {
		t.Fatalf("retention: %d %v", n, err)
	}
	check("after retention")
	if err := l.TruncateTo(l.LogEndOffset() - 15); err != nil {
		t.Fatal(err)
	}
	check("after truncation")
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openT(t, nil, dir, o, l.Checkpoint())
	check("after reopen")
}

// TestStatsFsync: every group commit's fsync and every seal is timed; a
// slow fsync shows in Max and in the high buckets.
func TestStatsFsync(t *testing.T) {
	fsys := faultfs.New()
	var slow atomic.Bool
	fsys.SetHook(func(op faultfs.Op) error {
		if op.Kind == faultfs.OpSync && isLogFile(op.Path) && slow.CompareAndSwap(true, false) {
			time.Sleep(30 * time.Millisecond)
		}
		return nil
	})
	l := openT(t, fsys, t.TempDir(), &Options{FlushPolicy: FlushSync, SegmentBytes: 1024}, State{})
	appendN(t, l, "s", 20, 2, 40)
	st := l.Stats()
	if st.Fsync.Count < 20 || st.Rolls == 0 {
		t.Fatalf("%d fsyncs timed for 20 FlushSync appends (%d rolls)", st.Fsync.Count, st.Rolls)
	}
	var sum int64
	for _, n := range st.Fsync.Buckets {
		sum += n
	}
	if sum != st.Fsync.Count || st.Fsync.Max > st.Fsync.Total || st.Fsync.Max <= 0 {
		t.Fatalf("inconsistent fsync stats %+v", st.Fsync)
	}
	slow.Store(true)
	appendN(t, l, "t", 1, 1, 40)
	st = l.Stats()
	if st.Fsync.Max < 30*time.Millisecond {
		t.Fatalf("a 30ms fsync left Max at %v", st.Fsync.Max)
	}
	if q := st.Fsync.Quantile(1); q < 30*time.Millisecond || q > st.Fsync.Max {
		t.Fatalf("Quantile(1) = %v with Max %v", q, st.Fsync.Max)
	}
	if st.Fsync.Quantile(0.5) > st.Fsync.Quantile(1) || st.Fsync.Mean() <= 0 {
		t.Fatalf("quantiles out of order: p50 %v p100 %v mean %v", st.Fsync.Quantile(0.5), st.Fsync.Quantile(1), st.Fsync.Mean())
	}
}

// TestFsyncRecorderBuckets checks the bucketing and the quantiles on known
// durations.
func TestFsyncRecorderBuckets(t *testing.T) {
	var r fsyncRecorder
	for _, d := range []time.Duration{
		10 * time.Microsecond, 50 * time.Microsecond, // bucket 0 (<= 50µs)
		51 * time.Microsecond, // bucket 1
		3 * time.Millisecond,  // bucket 6 (2.5ms, 5ms]
		3 * time.Millisecond,  //
		2 * time.Second,       // the last bucket
	} {
		r.record(d)
	}
	s := r.stats()
	want := map[int]int64{0: 2, 1: 1, 6: 2, FsyncBucketCount - 1: 1}
	for i, n := range s.Buckets {
		if n != want[i] {
			t.Fatalf("bucket %d (<= %v) holds %d, want %d: %v", i, FsyncBucketBound(i), n, want[i], s.Buckets)
		}
	}
	if s.Count != 6 || s.Max != 2*time.Second || s.Total != 2*time.Second+6*time.Millisecond+111*time.Microsecond {
		t.Fatalf("count %d max %v total %v", s.Count, s.Max, s.Total)
	}
	for _, c := range []struct {
		q    float64
		want time.Duration
	}{{0.1, 50 * time.Microsecond}, {0.5, 100 * time.Microsecond}, {0.6, 5 * time.Millisecond}, {0.8, 5 * time.Millisecond}, {0.99, 2 * time.Second}, {1, 2 * time.Second}} {
		if got := s.Quantile(c.q); got != c.want {
			t.Errorf("Quantile(%v) = %v, want %v", c.q, got, c.want)
		}
	}
	if (FsyncStats{}).Quantile(0.5) != 0 || (FsyncStats{}).Mean() != 0 {
		t.Fatal("quantile or mean of nothing is not 0")
	}
}

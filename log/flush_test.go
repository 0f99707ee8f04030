package log

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/foliolog/folio/vfs/faultfs"
)

// waitFor receives from ch or fails the test after a generous deadline (a
// hang would otherwise only show as the test binary's timeout).
func waitFor[T any](t testing.TB, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(30 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
	var zero T
	return zero
}

func isLogFile(path string) bool { return strings.HasSuffix(path, ".log") }

// TestGroupCommit holds one fsync blocked while N appenders append: their
// writes go through (fsync never runs under the append lock), and their
// fsyncs start beside the blocked one (group commits overlap, up to
// maxFlushes), each covering every write before it. None of them is
// acknowledged while the blocked fsync runs: an fsync's success counts only
// once every fsync beside it ended without error (syncActive). Once it is
// released, every append is acknowledged, the second fsync (held until all
// have written) and at most one more serving them all.
func TestGroupCommit(t *testing.T) {
	const n = 16
	fsys := faultfs.New()
	var (
		armed   atomic.Bool
		syncs   atomic.Int64
		written atomic.Int64          // .log writes since armed
		allIn   = make(chan struct{}) // closed at the last appender's write
		writes  = make(chan struct{}, 4*n)
		blocked = make(chan struct{})
		release = make(chan struct{})
		once    sync.Once
		// covered[i] is how many writes had happened when fsync i+2
		// started: the appenders it may acknowledge.
		coverMu sync.Mutex
		covered []int64
		// secondDone is closed when the second fsync has ended.
		secondDone = make(chan struct{})
	)
	fsys.SetHook(func(op faultfs.Op) error {
		if !armed.Load() || !isLogFile(op.Path) {
			return nil
		}
		switch op.Kind {
		case faultfs.OpWrite:
			if written.Add(1) == n+1 {
				close(allIn)
			}
			writes <- struct{}{}
		case faultfs.OpSync:
			if syncs.Add(1) == 1 {
				once.Do(func() { close(blocked) })
				<-release
				return nil
			}
			coverMu.Lock()
			w := written.Load()
			covered = append(covered, w)
			coverMu.Unlock()
			if syncs.Load() == 2 {
				// Hold the second fsync until every appender wrote, so
				// that the appenders behind it have to share a third.
				<-allIn
				defer close(secondDone)
			}
		}
		return nil
	})
	l := openT(t, fsys, t.TempDir(), &Options{FlushPolicy: FlushSync}, State{})
	releaseOnce := sync.OnceFunc(func() { close(release) })
	t.Cleanup(releaseOnce) // before Close, which waits for the blocked fsync
	if _, _, err := l.Append(makeBatch(t, "w", 0, 1, 10, 1)); err != nil {
		t.Fatal(err)
	}
	armed.Store(true)

	type result struct {
		first int64
		err   error
	}
	results := make(chan result, n+1)
	appendOne := func(id int64) {
		first, _, err := l.Append(makeBatch(t, "g", id, 1, 10, 1))
		results <- result{first, err}
	}
	go appendOne(0)
	waitFor(t, writes, "the first append's write")
	waitFor(t, blocked, "the first append's fsync")
	for i := int64(1); i <= n; i++ {
		go appendOne(i)
	}
	waitFor(t, secondDone, "the second fsync, beside the blocked one")
	select {
	case r := <-results:
		t.Fatalf("an append was acknowledged while an fsync beside its own was still running: %+v", r)
	default:
	}
	if hw := l.HighWatermark(); hw != 1 {
		t.Fatalf("high watermark %d while the first fsync is held, want 1", hw)
	}
	seen := map[int64]bool{}
	releaseOnce()
	for range n + 1 {
		r := waitFor(t, results, "the acknowledgements once the blocked fsync ended")
		if r.err != nil {
			t.Fatal(r.err)
		}
		seen[r.first] = true
	}
	if len(seen) != n+1 {
		t.Fatalf("offsets assigned twice: %v", seen)
	}
	coverMu.Lock()
	cov := slices.Clone(covered)
	coverMu.Unlock()
	if len(cov) > 2 || cov[len(cov)-1] != n+1 {
		t.Fatalf("fsyncs after the blocked one started after %v writes; want at most 2 fsyncs for %d appenders, the last after all %d writes", cov, n, n+1)
	}
	if l.DurableEndOffset() != n+2 || l.HighWatermark() != n+2 {
		t.Fatalf("durable %d hw %d, want %d", l.DurableEndOffset(), l.HighWatermark(), n+2)
	}
}

func TestFlushEveryN(t *testing.T) {
	fsys := faultfs.New()
	var syncs atomic.Int64
	fsys.SetHook(func(op faultfs.Op) error {
		if op.Kind == faultfs.OpSync && isLogFile(op.Path) {
			syncs.Add(1)
		}
		return nil
	})
	l := openT(t, fsys, t.TempDir(), &Options{FlushPolicy: FlushEveryN(5)}, State{})
	for i := int64(0); i < 23; i++ {
		if _, _, err := l.Append(makeBatch(t, "n", i, 1, 10, 1)); err != nil {
			t.Fatal(err)
		}
		if want := (i + 1) / 5 * 5; l.DurableEndOffset() != want {
			t.Fatalf("after record %d durable end %d, want %d", i, l.DurableEndOffset(), want)
		}
		if l.LogEndOffset()-l.DurableEndOffset() >= 5 {
			t.Fatalf("%d unsynced records acknowledged", l.LogEndOffset()-l.DurableEndOffset())
		}
		if l.HighWatermark() != i+1 {
			t.Fatalf("high watermark %d, want the log end %d", l.HighWatermark(), i+1)
		}
	}
	if got := syncs.Load(); got != 4 {
		t.Fatalf("%d fsyncs for 23 records every 5, want 4", got)
	}
	// A batch of 7 records alone reaches n.
	if _, _, err := l.Append(makeBatch(t, "n", 23, 7, 10, 1)); err != nil {
		t.Fatal(err)
	}
	if l.DurableEndOffset() != 30 {
		t.Fatalf("durable end %d after a 7-record batch, want 30", l.DurableEndOffset())
	}
}

func TestFlushInterval(t *testing.T) {
	fsys := faultfs.New()
	synced := make(chan struct{}, 16)
	fsys.SetHook(func(op faultfs.Op) error {
		if op.Kind == faultfs.OpSync && isLogFile(op.Path) {
			synced <- struct{}{}
		}
		return nil
	})
	l := openT(t, fsys, t.TempDir(), &Options{FlushPolicy: FlushInterval(20 * time.Millisecond)}, State{})
	for round := int64(0); round < 3; round++ {
		start := time.Now()
		if _, _, err := l.Append(makeBatch(t, "i", round, 1, 10, 1)); err != nil {
			t.Fatal(err)
		}
		if l.HighWatermark() != round+1 {
			t.Fatalf("high watermark %d, want the log end", l.HighWatermark())
		}
		waitFor(t, synced, "the interval flush")
		t.Logf("round %d: flushed %v after the append", round, time.Since(start))
		// The flush's durable end is published right after its fsync;
		// Sync returns at once if it is already there, and waits for the
		// flush in flight (syncMu) otherwise.
		if err := l.Sync(); err != nil {
			t.Fatal(err)
		}
		if l.DurableEndOffset() != round+1 {
			t.Fatalf("durable end %d, want %d", l.DurableEndOffset(), round+1)
		}
		select {
		case <-synced:
			t.Fatal("Sync fsynced again what the interval flush covered")
		default:
		}
	}
}

func TestFlushNoneNeverSyncsOnAppend(t *testing.T) {
	fsys := faultfs.New()
	var syncs atomic.Int64
	fsys.SetHook(func(op faultfs.Op) error {
		if op.Kind == faultfs.OpSync {
			syncs.Add(1)
		}
		return nil
	})
	l := openT(t, fsys, t.TempDir(), &Options{FlushPolicy: FlushNone}, State{})
	for i := int64(0); i < 10; i++ {
		if _, _, err := l.Append(makeBatch(t, "z", i, 1, 10, 1)); err != nil {
			t.Fatal(err)
		}
	}
	if syncs.Load() != 0 || l.DurableEndOffset() != 0 || l.HighWatermark() != 10 {
		t.Fatalf("FlushNone: %d fsyncs, durable %d, hw %d", syncs.Load(), l.DurableEndOffset(), l.HighWatermark())
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if l.Checkpoint().RecoveryPoint != 10 {
		t.Fatalf("Close did not flush: %+v", l.Checkpoint())
	}
}

// TestFailStop covers a failed write, a failed fsync and a torn write: the
// log refuses appends with ErrFailed, tries no fsync again, serves what it
// had made visible, and a reopen recovers it.
func TestFailStop(t *testing.T) {
	cases := []struct {
		name   string
		policy FlushPolicy
		hook   func(armed *atomic.Bool) faultfs.Hook
		cause  error
		// visible: is the failed append's record readable before reopen
		visibleAfterReopen bool
	}{
		{"write EIO", FlushSync, func(a *atomic.Bool) faultfs.Hook {
			return onceWhen(a, faultfs.OpWrite, syscall.EIO)
		}, syscall.EIO, false},
		{"write ENOSPC", FlushNone, func(a *atomic.Bool) faultfs.Hook {
			return onceWhen(a, faultfs.OpWrite, syscall.ENOSPC)
		}, syscall.ENOSPC, false},
		{"fsync EIO", FlushSync, func(a *atomic.Bool) faultfs.Hook {
			return onceWhen(a, faultfs.OpSync, syscall.EIO)
		}, syscall.EIO, true},
		{"torn write", FlushNone, func(a *atomic.Bool) faultfs.Hook {
			return func(op faultfs.Op) error {
				if op.Kind == faultfs.OpWrite && isLogFile(op.Path) && a.CompareAndSwap(true, false) {
					return &faultfs.ShortWriteError{N: 30, Err: syscall.EIO}
				}
				return nil
			}
		}, faultfs.ErrShortWrite, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fsys := faultfs.New()
			var armed atomic.Bool
			var syncsAfter atomic.Int64
			failing := c.hook(&armed)
			fsys.SetHook(func(op faultfs.Op) error {
				if !armed.Load() && op.Kind == faultfs.OpSync {
					syncsAfter.Add(1)
				}
				return failing(op)
			})
			dir := t.TempDir()
			o := &Options{FlushPolicy: c.policy}
			l, err := Open(fsys, dir, o, State{})
			if err != nil {
				t.Fatal(err)
			}
			want := appendN(t, l, "ok", 5, 2, 20)
			if err := l.Sync(); err != nil {
				t.Fatal(err)
			}
			syncsAfter.Store(0)
			armed.Store(true)
			_, _, err = l.Append(makeBatch(t, "bad", 0, 2, 20, 1))
			if !errors.Is(err, ErrFailed) || !errors.Is(err, c.cause) {
				t.Fatalf("failing append: %v, want ErrFailed wrapping %v", err, c.cause)
			}
			if _, _, err := l.Append(makeBatch(t, "later", 0, 1, 20, 1)); !errors.Is(err, ErrFailed) {
				t.Fatalf("append after the failure: %v", err)
			}
			if err := l.Sync(); !errors.Is(err, ErrFailed) {
				t.Fatalf("sync after the failure: %v", err)
			}
			if n := syncsAfter.Load(); n != 0 {
				t.Fatalf("%d fsyncs after the failure: nothing may be retried", n)
			}
			// Durable data stays readable.
			got := readAll(t, l, 0)
			if len(got) < len(want) {
				t.Fatalf("after the failure %d records readable, want at least %d", len(got), len(want))
			}
			sameRecs(t, got[:len(want)], want)
			if err := l.Close(); err != nil {
				t.Logf("close of a failed log: %v", err)
			}
			st := l.Checkpoint()
			if st.Clean {
				t.Fatalf("a failed log checkpointed clean: %+v", st)
			}
			l2 := openT(t, fsys, dir, o, st)
			got = readAll(t, l2, 0)
			if c.visibleAfterReopen {
				if len(got) != len(want)+2 {
					t.Fatalf("after reopen %d records, want %d (the written batch survives a failed fsync in the page cache)", len(got), len(want)+2)
				}
				got = got[:len(want)]
			}
			sameRecs(t, got, want)
			if c.name == "torn write" && l2.Recovery().BytesCut != 30 {
				t.Fatalf("recovery cut %d bytes of a 30-byte torn write", l2.Recovery().BytesCut)
			}
			first, _, err := l2.Append(makeBatch(t, "again", 0, 1, 20, 1))
			if err != nil || first != l2.LogEndOffset()-1 {
				t.Fatalf("append after reopen: %d %v", first, err)
			}
			sameRecs(t, readAll(t, l2, 0)[:len(want)], want)
		})
	}
}

// onceWhen fails the first op of kind on a .log file after armed is set,
// and disarms.
func onceWhen(armed *atomic.Bool, kind faultfs.OpKind, err error) faultfs.Hook {
	return func(op faultfs.Op) error {
		if op.Kind == kind && isLogFile(op.Path) && armed.CompareAndSwap(true, false) {
			return err
		}
		return nil
	}
}

// TestFailedFsyncKeepsUnackedHidden: under FlushSync a record whose fsync
// failed is never made visible, and waiters are not woken for it.
func TestFailedFsyncKeepsUnackedHidden(t *testing.T) {
	fsys := faultfs.New()
	var armed atomic.Bool
	fsys.SetHook(onceWhen(&armed, faultfs.OpSync, syscall.EIO))
	l := openT(t, fsys, t.TempDir(), &Options{FlushPolicy: FlushSync}, State{})
	appendN(t, l, "a", 1, 1, 10)
	armed.Store(true)
	if _, _, err := l.Append(makeBatch(t, "b", 0, 1, 10, 1)); !errors.Is(err, ErrFailed) {
		t.Fatal(err)
	}
	if l.HighWatermark() != 1 {
		t.Fatalf("high watermark %d after a failed fsync, want 1", l.HighWatermark())
	}
	if _, err := l.Read(1, 100); !errors.Is(err, ErrNoData) {
		t.Fatalf("read of the unacknowledged record: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := l.Wait(ctx, 1); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait for the unacknowledged record: %v", err)
	}
}

// TestOverlappingFsyncAfterAFailedOne: of two overlapping fsyncs of the
// active .log, the first fails (EIO) after the second succeeded. On Linux
// the second may have succeeded only because the first took the
// write-back error, so its success does not count: neither appender is
// acknowledged, and the durable end and high watermark stay below both.
func TestOverlappingFsyncAfterAFailedOne(t *testing.T) {
	fsys := faultfs.New()
	var (
		armed    atomic.Bool
		syncs    atomic.Int64
		writes   = make(chan struct{}, 8)
		first    = make(chan struct{}) // the first fsync is running
		second   = make(chan struct{}) // the second fsync ended
		failWith = errors.New("EIO on the first fsync")
	)
	fsys.SetHook(func(op faultfs.Op) error {
		if !armed.Load() || !isLogFile(op.Path) {
			return nil
		}
		switch op.Kind {
		case faultfs.OpWrite:
			writes <- struct{}{}
		case faultfs.OpSync:
			switch syncs.Add(1) {
			case 1:
				close(first)
				<-second // held until the one beside it succeeded
				return failWith
			case 2:
				defer close(second)
			}
		}
		return nil
	})
	l := openT(t, fsys, t.TempDir(), &Options{FlushPolicy: FlushSync}, State{})
	if _, _, err := l.Append(makeBatch(t, "w", 0, 1, 10, 1)); err != nil {
		t.Fatal(err)
	}
	armed.Store(true)
	results := make(chan error, 2)
	go func() {
		_, _, err := l.Append(makeBatch(t, "a", 1, 1, 10, 1))
		results <- err
	}()
	waitFor(t, first, "the first append's fsync")
	go func() {
		_, _, err := l.Append(makeBatch(t, "b", 2, 1, 10, 1))
		results <- err
	}()
	for i := range 2 {
		if err := waitFor(t, results, "the appenders' outcomes"); !errors.Is(err, ErrFailed) {
			t.Fatalf("appender %d: %v, want an error wrapping ErrFailed", i, err)
		}
	}
	if d, hw := l.DurableEndOffset(), l.HighWatermark(); d > 1 || hw > 1 {
		t.Fatalf("durable end %d, high watermark %d after the failed fsync; want at most 1", d, hw)
	}
}

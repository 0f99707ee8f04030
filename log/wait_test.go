package log

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"
	"time"
)

func TestWaitWakesOnAppend(t *testing.T) {
	for _, p := range []FlushPolicy{FlushNone, FlushSync, FlushEveryN(1), FlushInterval(5 * time.Millisecond)} {
		t.Run(p.String(), func(t *testing.T) {
			l := openT(t, nil, t.TempDir(), &Options{FlushPolicy: p}, State{})
			appendN(t, l, "w", 1, 1, 10)
			if err := l.Wait(context.Background(), 0); err != nil {
				t.Fatalf("Wait for a visible offset: %v", err)
			}
			const waiters = 8
			woke := make(chan int64, waiters)
			var wg sync.WaitGroup
			for i := 0; i < waiters; i++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if err := l.Wait(context.Background(), 1); err != nil {
						t.Error(err)
						return
					}
					woke <- l.HighWatermark()
				}()
			}
			// Every waiter is registered (and so will be woken by the
			// next advance) before anything is appended.
			waitWaiters(t, l, waiters)
			select {
			case hw := <-woke:
				t.Fatalf("a waiter woke before anything was appended (hw %d)", hw)
			default:
			}
			if _, _, err := l.Append(makeBatch(t, "w", 1, 1, 10, 1)); err != nil {
				t.Fatal(err)
			}
			for i := 0; i < waiters; i++ {
				if hw := waitFor(t, woke, "waiters"); hw < 2 {
					t.Fatalf("woke with high watermark %d, want 2", hw)
				}
			}
			wg.Wait()
			// The data a woken reader looks for is there.
			v, err := l.Read(1, 100)
			if err != nil {
				t.Fatal(err)
			}
			v.Release()
		})
	}
}

func TestWaitContextAndClose(t *testing.T) {
	l, err := Open(nil, t.TempDir(), &Options{FlushPolicy: FlushNone}, State{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Wait(ctx, 5) }()
	cancel()
	if err := waitFor(t, done, "Wait after cancel"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait after cancel: %v", err)
	}
	go func() { done <- l.Wait(context.Background(), 5) }()
	waitWaiters(t, l, 1) // Close wakes a Wait that is waiting, not one not yet begun
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := waitFor(t, done, "Wait after Close"); !errors.Is(err, ErrClosed) {
		t.Fatalf("Wait after Close: %v", err)
	}
	if err := l.Wait(context.Background(), 5); !errors.Is(err, ErrClosed) {
		t.Fatalf("Wait on a closed log: %v", err)
	}
}

// TestWaitersUnderLoad: readers that wait, read and wait again follow a
// stream of appends to the end without missing a wake-up.
func TestWaitersUnderLoad(t *testing.T) {
	l := openT(t, nil, t.TempDir(), &Options{FlushPolicy: FlushNone, SegmentBytes: 8192}, State{})
	const total = 300
	var wg sync.WaitGroup
	for r := 0; r < 4; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			off := int64(0)
			for off < total {
				if err := l.Wait(ctx, off); err != nil {
					t.Errorf("waiting at %d: %v", off, err)
					return
				}
				v, err := l.Read(off, 4096)
				if err != nil {
					t.Errorf("read at %d: %v", off, err)
					return
				}
				next, _, err := decodeView(v, off)
				v.Release()
				if err != nil {
					t.Error(err)
					return
				}
				off = next
			}
		}()
	}
	for i := int64(0); i < total; i++ {
		if _, _, err := l.Append(makeBatch(t, "l", i, 1, 50, 1)); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
}

// waitWaiters returns once n readers wait on l (Log.Waiters): the proof,
// without a sleep, that they parked before the test acts.
func waitWaiters(t testing.TB, l *Log, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for l.Waiters() < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d readers wait on the log, want %d", l.Waiters(), n)
		}
		runtime.Gosched()
	}
}

// TestWaiters: Waiters counts Wait calls and WaitChan registrations while
// they wait, and none once they are woken or cancelled.
func TestWaiters(t *testing.T) {
	l := openT(t, nil, t.TempDir(), &Options{FlushPolicy: FlushNone}, State{})
	if n := l.Waiters(); n != 0 {
		t.Fatalf("%d waiters on a new log", n)
	}
	ready, cancel := l.WaitChan(0)
	_, cancel2 := l.WaitChan(3)
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Wait(ctx, 0) }()
	waitWaiters(t, l, 3)
	cancel2()
	if n := l.Waiters(); n != 2 {
		t.Fatalf("%d waiters after a cancel, want 2", n)
	}
	appendN(t, l, "w", 1, 1, 10)
	<-ready
	if err := waitFor(t, done, "Wait"); err != nil {
		t.Fatal(err)
	}
	cancel()
	stop()
	if n := l.Waiters(); n != 0 {
		t.Fatalf("%d waiters once all were woken, want 0", n)
	}
}

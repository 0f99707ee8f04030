package log

import (
	"sync/atomic"
	"testing"
)

func TestWaitFuncFiresOnceWhenPassed(t *testing.T) {
	l := openT(t, nil, t.TempDir(), &Options{FlushPolicy: FlushNone}, State{})
	appendN(t, l, "w", 1, 1, 10)

	// Already visible: fn runs before WaitFunc returns.
	var now atomic.Int32
	l.WaitFunc(0, func() { now.Add(1) })()
	if now.Load() != 1 {
		t.Fatalf("fn for a visible offset ran %d times before return, want 1", now.Load())
	}

	woke := make(chan int64, 4)
	var calls atomic.Int32
	cancelA := l.WaitFunc(1, func() { calls.Add(1); woke <- l.HighWatermark() })
	defer cancelA()
	cancelled := l.WaitFunc(1, func() { t.Error("a cancelled WaitFunc fired") })
	cancelled()
	far := l.WaitFunc(5, func() { t.Error("WaitFunc(5) fired at high watermark 2") })
	select {
	case <-woke:
		t.Fatal("fired before the append")
	default:
	}
	if _, _, err := l.Append(makeBatch(t, "w", 1, 1, 10, 1)); err != nil {
		t.Fatal(err)
	}
	if hw := waitFor(t, woke, "WaitFunc callback"); hw < 2 {
		t.Fatalf("fired at high watermark %d, want 2", hw)
	}
	appendN(t, l, "w", 2, 1, 10)
	if calls.Load() != 1 {
		t.Fatalf("fn ran %d times, want once", calls.Load())
	}
	far()

	// Close fires what is still registered.
	closed := make(chan struct{})
	l.WaitFunc(100, func() { close(closed) })
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, closed, "WaitFunc on Close")
}

func TestMaxTimestamp(t *testing.T) {
	l := openT(t, nil, t.TempDir(), &Options{FlushPolicy: FlushNone, SegmentBytes: 4096}, State{})
	if _, _, ok, err := l.MaxTimestamp(); err != nil || ok {
		t.Fatalf("empty log: ok %v err %v, want no answer", ok, err)
	}
	// Timestamps rise and fall across several segments; the largest is in
	// the batch at offset 30 (records 30..39).
	var want int64 = -1
	for i := int64(0); i < 8; i++ {
		ts := []int64{100, 300, 200, 900, 400, 900, 50, 10}[i]
		if _, _, err := l.Append(makeBatch(t, "m", i*10, 10, 100, ts)); err != nil {
			t.Fatal(err)
		}
		if ts == 900 && want < 0 {
			want = i * 10
		}
	}
	off, ts, ok, err := l.MaxTimestamp()
	if err != nil || !ok || ts != 900 || off != want {
		t.Fatalf("MaxTimestamp = %d, %d, %v, %v; want %d, 900, true", off, ts, ok, err, want)
	}
}

func TestMaxTimestampAboveHighWatermark(t *testing.T) {
	// Records above the high watermark are not visible: a maximum among
	// them is not answered, the visible one is (the header scan).
	l := openT(t, nil, t.TempDir(), &Options{FlushPolicy: FlushNone, ExternalHighWatermark: true}, State{})
	if _, _, err := l.Append(makeBatch(t, "m", 0, 3, 10, 500)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := l.Append(makeBatch(t, "m", 3, 3, 10, 700)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := l.Append(makeBatch(t, "m", 6, 3, 10, 900)); err != nil {
		t.Fatal(err)
	}
	if err := l.SetHighWatermark(6); err != nil {
		t.Fatal(err)
	}
	off, ts, ok, err := l.MaxTimestamp()
	if err != nil || !ok || ts != 700 || off != 3 {
		t.Fatalf("MaxTimestamp = %d, %d, %v, %v; want 3, 700", off, ts, ok, err)
	}
	if err := l.SetHighWatermark(9); err != nil {
		t.Fatal(err)
	}
	if off, ts, _, _ = l.MaxTimestamp(); ts != 900 || off != 6 {
		t.Fatalf("after the high watermark passed it: %d, %d; want 6, 900", off, ts)
	}
}

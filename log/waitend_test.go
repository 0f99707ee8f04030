package log

import (
	"testing"
)

// TestWaitEndFunc: a wait for the log end fires on the append that passes
// it while the external high watermark stands still (a follower's fetch
// parked at the leader's end), not before; it fires at once for an offset
// already below the end, on a truncation below it, and on Close.
func TestWaitEndFunc(t *testing.T) {
	l := openT(t, nil, t.TempDir(), &Options{FlushPolicy: FlushNone, ExternalHighWatermark: true}, State{})
	if _, _, err := l.Append(makeBatch(t, "e", 0, 3, 10, 1)); err != nil {
		t.Fatal(err)
	}
	now := make(chan struct{})
	l.WaitEndFunc(2, func() { close(now) })
	<-now // 2 < end 3

	fired := make(chan struct{})
	cancel := l.WaitEndFunc(3, func() { close(fired) })
	defer cancel()
	hwFired := make(chan struct{})
	cancelHW := l.WaitFunc(3, func() { close(hwFired) })
	defer cancelHW()
	select {
	case <-fired:
		t.Fatal("a wait at the log end fired before an append")
	default:
	}
	if _, _, err := l.Append(makeBatch(t, "e", 3, 2, 10, 1)); err != nil {
		t.Fatal(err)
	}
	<-fired
	select {
	case <-hwFired:
		t.Fatal("the high-watermark wait fired though the high watermark did not move")
	default:
	}

	truncated := make(chan struct{})
	cancelT := l.WaitEndFunc(5, func() { close(truncated) })
	defer cancelT()
	if err := l.TruncateTo(3); err != nil {
		t.Fatal(err)
	}
	<-truncated

	closed := make(chan struct{})
	cancelC := l.WaitEndFunc(100, func() { close(closed) })
	defer cancelC()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	<-closed
}

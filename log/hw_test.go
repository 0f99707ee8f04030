package log

import (
	"errors"
	"testing"
)

// TestExternalHighWatermarkMonotonicInEpoch: within a leader epoch the
// high watermark set from outside only moves forward; a new epoch may
// start lower; the checkpointed value comes back at Open, clamped to the
// log end, so a restarted replica shows nothing it had not shown.
func TestExternalHighWatermarkMonotonicInEpoch(t *testing.T) {
	dir := t.TempDir()
	o := &Options{FlushPolicy: FlushSync, ExternalHighWatermark: true}
	l := openT(t, nil, dir, o, State{})
	if err := l.SetLeaderEpoch(1); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		if _, _, err := l.Append(makeBatch(t, "h", int64(i), 1, 10, 1)); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.SetHighWatermark(8); err != nil {
		t.Fatal(err)
	}
	if err := l.SetHighWatermark(5); !errors.Is(err, ErrBadHighWatermark) || l.HighWatermark() != 8 {
		t.Fatalf("moving back within epoch 1: %v, high watermark %d", err, l.HighWatermark())
	}
	if err := l.SetHighWatermark(8); err != nil {
		t.Fatalf("the same value again: %v", err)
	}
	if err := l.SetLeaderEpoch(2); err != nil {
		t.Fatal(err)
	}
	if err := l.SetHighWatermark(6); err != nil || l.HighWatermark() != 6 {
		t.Fatalf("a new epoch starting lower: %v, %d", err, l.HighWatermark())
	}
	if err := l.SetHighWatermark(9); err != nil {
		t.Fatal(err)
	}
	st := l.Checkpoint()
	if st.HighWatermark != 9 {
		t.Fatalf("checkpointed high watermark %d", st.HighWatermark)
	}
	l.kill()
	l2 := openT(t, nil, dir, o, st)
	if l2.HighWatermark() != 9 {
		t.Fatalf("restored high watermark %d, want 9", l2.HighWatermark())
	}
	if _, err := l2.Read(9, 1<<20); !errors.Is(err, ErrNoData) {
		t.Fatalf("a record above the restored high watermark is visible: %v", err)
	}
	// A restored value is not a setting: the leader may tell a lower one.
	if err := l2.SetHighWatermark(7); err != nil {
		t.Fatal(err)
	}
	// Truncation pulls it down with the end.
	if err := l2.SetHighWatermark(10); err != nil {
		t.Fatal(err)
	}
	if err := l2.TruncateTo(4); err != nil || l2.HighWatermark() != 4 {
		t.Fatalf("after truncation to 4: %v, high watermark %d", err, l2.HighWatermark())
	}
}

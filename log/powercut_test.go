package log

import (
	"fmt"
	"sync"
	"testing"

	"github.com/foliolog/folio/vfs/faultfs"
)

// cutCase is one flush policy under the power-cut workload.
type cutCase struct {
	name   string
	policy FlushPolicy
	// ops bounds where the cut lands: a random one of the first ops
	// operations the workload makes on the file system.
	ops int
	// lossWindow checks the policy's promise: acked is the end of the
	// acknowledged records, end the log end after reopening.
	lossWindow func(t *testing.T, acked, end int64)
}

var cutCases = []cutCase{
	{"sync", FlushSync, 500, func(t *testing.T, acked, end int64) {
		if end < acked {
			t.Fatalf("FlushSync lost acknowledged records: end %d after reopen, acknowledged up to %d", end, acked)
		}
	}},
	{"every4", FlushEveryN(4), 200, func(t *testing.T, acked, end int64) {
		if acked-end >= 4 {
			t.Fatalf("FlushEveryN(4) lost %d acknowledged records (end %d, acknowledged %d)", acked-end, end, acked)
		}
	}},
	// The interval policy's flush is driven by hand here (the timer's
	// path, Sync); its promise is the general one checked for every case:
	// nothing below the durable end is lost.
	{"interval", FlushInterval(1 << 40), 200, func(*testing.T, int64, int64) {}},
	{"none", FlushNone, 150, func(*testing.T, int64, int64) {}},
}

// TestPowerCut runs a random workload on the fault-injecting file system
// and cuts the power at a random operation (from inside its hook, so the
// cut can land between any two steps of an append, a roll, a seal or a
// flush). The log then reopens from the last checkpoint and must hold a
// valid prefix of what was written: contiguous offsets from the start, each
// record intact, nothing below the durable end lost, the policy's window
// respected, and appends continuing from the end. A process crash (the page
// cache survives) must lose no acknowledged record under any policy.
func TestPowerCut(t *testing.T) {
	seed := testSeed(t)
	iters := 24
	if testing.Short() {
		iters = 6
	}
	for _, c := range cutCases {
		for _, crash := range []bool{false, true} {
			name := c.name + "/powercut"
			if crash {
				name = c.name + "/crash"
			}
			t.Run(name, func(t *testing.T) {
				n := iters
				if crash {
					n = iters / 3
				}
				for i := 0; i < n; i++ {
					s := seed + uint64(i)*7919
					if !t.Run(fmt.Sprint(i), func(t *testing.T) { powerCutOnce(t, c, crash, s) }) {
						t.Fatalf("iteration %d failed (replay with -seed=%d -run 'TestPowerCut/%s/%d')", i, seed, name, i)
					}
				}
			})
		}
	}
}

func powerCutOnce(t *testing.T, c cutCase, crash bool, seed uint64) {
	rng := newRand(seed)
	fsys := faultfs.New()
	dir := t.TempDir()
	o := &Options{
		SegmentBytes:       int64(800 + rng.IntN(2000)),
		IndexIntervalBytes: 50 + rng.IntN(400),
		MaxIndexBytes:      int64(240 + 12*rng.IntN(20)),
		FlushPolicy:        c.policy,
		noBackground:       true,
	}
	var (
		mu     sync.Mutex
		ops    int
		cutAt  = 1 + rng.IntN(c.ops)
		cut    bool
		cutErr error
	)
	doCut := func() {
		cut = true
		if crash {
			fsys.Crash()
		} else {
			cutErr = fsys.PowerCut()
		}
	}
	fsys.SetHook(func(op faultfs.Op) error {
		mu.Lock()
		defer mu.Unlock()
		if cut {
			return nil
		}
		if ops++; ops == cutAt {
			// Called from the only goroutine touching the log (no
			// background): nothing else is in flight.
			doCut()
		}
		return nil
	})
	cutNow := func() bool { mu.Lock(); defer mu.Unlock(); return cut }
	l, err := Open(fsys, dir, o, State{})
	if err != nil && !cutNow() {
		t.Fatal(err)
	}
	written := map[int64]string{} // offset -> value of every record ever attempted
	var (
		acked   int64 // end of the acknowledged records
		ckpt    State // the owner's last checkpoint
		seq     int64
		durable int64
	)
	for step := 0; step < 120 && l != nil && !cutNow(); step++ {
		switch r := rng.IntN(20); {
		case r < 15:
			n := 1 + rng.IntN(4)
			size := 10 + rng.IntN(150)
			base := l.LogEndOffset()
			for j := 0; j < n; j++ {
				written[base+int64(j)] = string(payload("p", seq+int64(j), size))
			}
			_, last, err := l.Append(makeBatch(t, "p", seq, n, size, 1000+seq))
			seq += int64(n)
			if err == nil {
				acked = last + 1
			}
		case r < 17:
			ckpt = l.Checkpoint()
		case r < 19:
			_ = l.Sync() // the interval flush, or an explicit one
		default:
			l.sealPending() // the background seal, by hand
		}
	}
	mu.Lock()
	if !cut {
		doCut()
	}
	mu.Unlock()
	if cutErr != nil {
		t.Fatalf("power cut: %v", cutErr)
	}
	if l != nil {
		durable = l.DurableEndOffset()
		l.kill()
	}
	fsys.SetHook(nil)

	ckpt.Clean = false
	l2, err := Open(fsys, dir, o, ckpt)
	if err != nil {
		t.Fatalf("reopen after the cut (checkpoint %+v): %v", ckpt, err)
	}
	defer l2.Close()
	end := l2.LogEndOffset()
	got := readAll(t, l2, 0)
	if int64(len(got)) != end || l2.LogStartOffset() != 0 {
		t.Fatalf("reopened log holds %d records for offsets [%d, %d)", len(got), l2.LogStartOffset(), end)
	}
	for i, r := range got {
		if r.offset != int64(i) || r.value != written[r.offset] {
			t.Fatalf("record %d after reopen: offset %d value %.20q, written %.20q", i, r.offset, r.value, written[r.offset])
		}
	}
	if end < durable {
		t.Fatalf("lost records below the durable end: end %d, durable %d at the cut", end, durable)
	}
	if crash {
		if end < acked {
			t.Fatalf("a process crash lost acknowledged records: end %d, acknowledged %d", end, acked)
		}
	} else {
		c.lossWindow(t, acked, end)
	}
	// Offsets continue from the recovered end, and the result is stable.
	first, _, err := l2.Append(makeBatch(t, "after", 0, 2, 20, 1))
	if err != nil || first != end {
		t.Fatalf("append after reopen: %d, %v; want %d", first, err, end)
	}
	if err := l2.Close(); err != nil {
		t.Fatal(err)
	}
	l3, err := Open(fsys, dir, o, l2.Checkpoint())
	if err != nil {
		t.Fatal(err)
	}
	defer l3.Close()
	again := readAll(t, l3, 0)
	if len(again) != len(got)+2 {
		t.Fatalf("clean reopen after recovery: %d records, want %d", len(again), len(got)+2)
	}
	sameRecs(t, again[:len(got)], got)
}

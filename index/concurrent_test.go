package index

import (
	"sync"
	"sync/atomic"
	"testing"
)

// Entry positions in these tests are a function of the offset and of a
// generation that changes whenever entries are dropped and rewritten, so a
// reader can tell a real entry from one torn between an old and a new
// write: position = 7*offset + gen*genStride.
const genStride = 1 << 20

func posFor(off, gen int64) int64 { return 7*off + gen*genStride }

// wellFormed reports whether e could have been written by the test writer.
func wellFormed(e OffsetEntry) bool {
	d := e.Position - 7*e.Offset
	return d >= 0 && d%genStride == 0
}

// Many goroutines look up while one appends: every answer is an entry that
// was written whole, is at or below the target, and is the exact floor
// whenever that entry was visible before the lookup began.
func TestConcurrentLookupsDuringAppends(t *testing.T) {
	before := faultsCaught.Load()
	x := openOffset(t, tempPath(t, "c.index"), 0, true, nil)
	defer func() { mustNil(t, "Close", x.Close()) }()
	const total = 3 * AllocStepEntries // crosses allocation steps while read
	var done atomic.Bool
	var wg sync.WaitGroup
	r := newRand(t)
	for g := range 4 {
		seed := r.Uint64()
		wg.Go(func() {
			rr := newRandFrom(seed)
			for lookups := 0; !done.Load() || lookups < 1000; lookups++ {
				visible := int64(x.Entries())
				target := rr.Int64N(3*total + 10)
				e := x.Lookup(target)
				if e.Offset > target || !wellFormed(e) || e.Offset%3 != 0 {
					t.Errorf("reader %d: Lookup(%d) = %+v", g, target, e)
					return
				}
				if j := target / 3; j < visible && e.Offset != 3*j {
					t.Errorf("reader %d: Lookup(%d) = %+v with entry %d visible", g, target, e, j)
					return
				}
				if e.Offset < 3*min(target/3, visible-1) {
					t.Errorf("reader %d: Lookup(%d) = %+v older than visible entry %d", g, target, e, visible-1)
					return
				}
			}
		})
	}
	for i := range int64(total) {
		if err := x.Append(3*i, posFor(3*i, 0)); err != nil {
			t.Errorf("Append: %v", err)
			break
		}
	}
	done.Store(true)
	wg.Wait()
	if n := faultsCaught.Load() - before; n != 0 {
		t.Fatalf("%d memory faults were caught during lookups", n)
	}
}

// Lookups, Entry and LastEntry run while the writer seals, reactivates,
// truncates and rewrites. No reader may fault or see a torn entry.
func TestConcurrentLookupsDuringSealReactivateTruncate(t *testing.T) {
	before := faultsCaught.Load()
	x := openOffset(t, tempPath(t, "c.index"), 0, true, nil)
	defer func() { mustNil(t, "Close", x.Close()) }()
	var done atomic.Bool
	var wg sync.WaitGroup
	var lookups atomic.Int64
	r := newRand(t)
	for g := range 2 {
		seed := r.Uint64()
		wg.Go(func() {
			rr := newRandFrom(seed)
			for !done.Load() {
				target := rr.Int64N(5000)
				e := x.Lookup(target)
				if e.Offset > target || !wellFormed(e) {
					t.Errorf("reader %d: Lookup(%d) = %+v", g, target, e)
					return
				}
				if e, ok := x.LastEntry(); ok && !wellFormed(e) {
					t.Errorf("reader %d: LastEntry = %+v", g, e)
					return
				}
				if e := x.Entry(rr.IntN(2000)); !wellFormed(e) {
					t.Errorf("reader %d: Entry = %+v", g, e)
					return
				}
				if e, ok := x.UpperBound(target); ok && (e.Offset < target || !wellFormed(e)) {
					t.Errorf("reader %d: UpperBound(%d) = %+v", g, target, e)
					return
				}
				lookups.Add(1)
			}
		})
	}
	next, gen := int64(0), int64(0)
	for round := range 80 {
		for range 1 + r.IntN(30) {
			if err := x.Append(next, posFor(next, gen)); err != nil {
				t.Fatalf("round %d: Append(%d): %v", round, next, err)
			}
			next++
		}
		switch r.IntN(3) {
		case 0:
			mustNil(t, "Seal", x.Seal())
			if r.IntN(2) == 0 { // truncating a sealed index remaps it smaller
				next = max(0, next-int64(r.IntN(20)))
				gen++
				mustNil(t, "TruncateTo sealed", x.TruncateTo(next))
			}
			mustNil(t, "Reactivate", x.Reactivate())
		case 1:
			next = max(0, next-int64(r.IntN(20)))
			gen++
			mustNil(t, "TruncateTo", x.TruncateTo(next))
		case 2:
			mustNil(t, "Sync", x.Sync())
		}
	}
	done.Store(true)
	wg.Wait()
	t.Logf("%d lookups ran during the churn", lookups.Load())
	if n := faultsCaught.Load() - before; n != 0 {
		t.Fatalf("%d memory faults were caught during lookups", n)
	}
}

// Sync runs beside Append (it does not take the appender's lock) and beside
// Seal, which closes the handle Sync uses.
func TestConcurrentSyncAppendSeal(t *testing.T) {
	x := openTime(t, tempPath(t, "c.timeindex"), 0, true, nil)
	defer func() { mustNil(t, "Close", x.Close()) }()
	var done atomic.Bool
	var wg sync.WaitGroup
	wg.Go(func() {
		for !done.Load() {
			if err := x.Sync(); err != nil {
				t.Errorf("Sync: %v", err)
				return
			}
		}
	})
	wg.Go(func() {
		for !done.Load() {
			e := x.Lookup(1 << 40)
			if e.Timestamp != NoTimestamp && e.Timestamp != 1000+e.Offset {
				t.Errorf("Lookup = %+v", e)
				return
			}
		}
	})
	for i := range int64(3000) {
		mustNil(t, "Append", x.Append(1000+i, i))
		if i%500 == 499 {
			mustNil(t, "Seal", x.Seal())
			mustNil(t, "Reactivate", x.Reactivate())
		}
	}
	done.Store(true)
	wg.Wait()
	if x.Entries() != 3000 {
		t.Fatalf("Entries = %d", x.Entries())
	}
}

// Close waits for lookups in flight and later lookups answer "empty".
func TestConcurrentClose(t *testing.T) {
	before := faultsCaught.Load()
	x := openOffset(t, tempPath(t, "c.index"), 0, true, nil)
	for i := range int64(5000) {
		mustNil(t, "Append", x.Append(i, posFor(i, 0)))
	}
	var wg sync.WaitGroup
	var started sync.WaitGroup
	for range 4 {
		started.Add(1)
		wg.Go(func() {
			started.Done()
			for range 20000 {
				if e := x.Lookup(4000); e != (OffsetEntry{4000, posFor(4000, 0)}) && e != (OffsetEntry{}) {
					t.Errorf("Lookup = %+v", e)
					return
				}
			}
		})
	}
	started.Wait()
	mustNil(t, "Close", x.Close())
	wg.Wait()
	if n := faultsCaught.Load() - before; n != 0 {
		t.Fatalf("%d memory faults were caught", n)
	}
}

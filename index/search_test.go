package index

import (
	"math"
	"math/rand/v2"
	"testing"
)

func linearFloor(keys []int64, target int64) int {
	i := -1
	for j, k := range keys {
		if k <= target {
			i = j
		}
	}
	return i
}

func linearCeil(keys []int64, target int64) int {
	for j, k := range keys {
		if k >= target {
			return j
		}
	}
	return -1
}

// randomKeys returns n non-decreasing keys; strict makes them increasing.
func randomKeys(r *rand.Rand, n int, strict bool) []int64 {
	keys := make([]int64, n)
	k := r.Int64N(1000) - 500
	for i := range keys {
		step := r.Int64N(4)
		if strict {
			step++
		}
		if r.IntN(50) == 0 {
			step += r.Int64N(1 << 20) // occasional big gap
		}
		k += step
		keys[i] = k
	}
	return keys
}

func targetsFor(r *rand.Rand, keys []int64) []int64 {
	ts := []int64{math.MinInt64, math.MaxInt64, math.MinInt64 + 1, math.MaxInt64 - 1}
	if len(keys) == 0 {
		return append(ts, 0)
	}
	for range 300 {
		k := keys[r.IntN(len(keys))]
		ts = append(ts, k-1, k, k+1)
	}
	lo, hi := keys[0]-10, keys[len(keys)-1]+10
	for range 100 {
		ts = append(ts, lo+r.Int64N(hi-lo+1))
	}
	return ts
}

// floorSlot and ceilSlot agree with a linear scan, on strictly increasing
// keys (offsets, timestamps) and on keys with repeats (positions, time-index
// offsets), for sizes around the warm-section boundary.
func TestSearchMatchesLinearScan(t *testing.T) {
	r := newRand(t)
	sizes := []int{0, 1, 2, 3, 681, 682, 683, 684, 1023, 1024, 1025, 1026, 2048, 5000}
	for range 20 {
		sizes = append(sizes, r.IntN(6000))
	}
	for _, warm := range []int{warmBytes / OffsetEntrySize, warmBytes / TimeEntrySize, 1, 0} {
		for _, n := range sizes {
			for _, strict := range []bool{true, false} {
				keys := randomKeys(r, n, strict)
				key := func(i int) int64 { return keys[i] }
				for _, target := range targetsFor(r, keys) {
					if got, want := floorSlot(n, warm, key, target), linearFloor(keys, target); got != want {
						t.Fatalf("warm %d n %d strict %v: floorSlot(%d) = %d, want %d", warm, n, strict, target, got, want)
					}
					if got, want := ceilSlot(n, warm, key, target), linearCeil(keys, target); got != want {
						t.Fatalf("warm %d n %d strict %v: ceilSlot(%d) = %d, want %d", warm, n, strict, target, got, want)
					}
				}
			}
		}
	}
}

// A target inside the warm section is found without touching any entry
// below it except the first (the "below everything" check), so lookups near
// the end stay on resident pages.
func TestSearchStaysInWarmSection(t *testing.T) {
	r := newRand(t)
	const n, warm = 100000, warmBytes / OffsetEntrySize
	keys := randomKeys(r, n, true)
	firstHot := n - 1 - warm
	var coldProbes, probes int
	key := func(i int) int64 {
		probes++
		if i != 0 && i < firstHot {
			coldProbes++
		}
		return keys[i]
	}
	for range 1000 {
		target := keys[firstHot] + r.Int64N(keys[n-1]-keys[firstHot]+100)
		coldProbes, probes = 0, 0
		got := floorSlot(n, warm, key, target)
		if want := linearFloor(keys, target); got != want {
			t.Fatalf("floorSlot(%d) = %d, want %d", target, got, want)
		}
		if coldProbes != 0 {
			t.Fatalf("target %d in the warm section probed %d cold entries", target, coldProbes)
		}
		// 2 range checks plus a binary search over warm+1 entries.
		if limit := 2 + int(math.Ceil(math.Log2(warm+1))); probes > limit {
			t.Fatalf("target %d took %d probes, want at most %d", target, probes, limit)
		}
	}
	// Below the warm section the search covers the cold part and is still exact.
	for range 1000 {
		target := keys[0] + r.Int64N(keys[firstHot]-keys[0])
		if got, want := floorSlot(n, warm, func(i int) int64 { return keys[i] }, target), linearFloor(keys, target); got != want {
			t.Fatalf("cold floorSlot(%d) = %d, want %d", target, got, want)
		}
	}
}

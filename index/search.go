package index

import "math"

// warmBytes is the tail of the index searched first: Kafka's KAFKA-6432
// "warm section". Appends and in-sync lookups all land near the end of the
// index, so a lookup that stays inside the last 8 KiB (three 4 KiB pages at
// most) touches only pages that are already resident, where a plain binary
// search would start in the cold middle and could page-fault on every probe
// of the first few levels.
const warmBytes = 8192

// floorSlot returns the largest slot i in [0, n) with key(i) <= target, or -1
// when there is none. Keys must not decrease with i for the answer to be
// exact; on garbage it still terminates and returns a slot in range or -1.
//
// The search runs over the warm section [firstHot, n-1] when its first key
// is not above target, else over the cold part below it, as Kafka's
// AbstractIndex.indexSlotRangeFor does (firstHot = n-1-warmEntries).
func floorSlot(n, warmEntries int, key func(int) int64, target int64) int {
	if n <= 0 || key(0) > target {
		return -1
	}
	firstHot := max(0, n-1-warmEntries)
	// Kafka tests key(firstHot) < target; <= gives the same slot for strictly
	// increasing keys and also stays exact where equal keys run across
	// firstHot (the time index's offsets may repeat).
	lo, hi := firstHot, n-1
	if key(firstHot) > target {
		lo, hi = 0, firstHot-1 // firstHot > 0 here: key(0) <= target
	}
	// Invariant: key(lo) <= target and every slot above hi has a key above
	// target.
	for lo < hi {
		mid := int(uint(lo+hi+1) >> 1)
		if key(mid) <= target {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo
}

// ceilSlot returns the smallest slot i in [0, n) with key(i) >= target, or -1
// when every key is below target. With integer keys that is one past the
// floor of target-1, which keeps the warm-section search in one place.
func ceilSlot(n, warmEntries int, key func(int) int64, target int64) int {
	if n <= 0 {
		return -1
	}
	i := 0
	if target != math.MinInt64 {
		i = floorSlot(n, warmEntries, key, target-1) + 1
	}
	if i >= n {
		return -1
	}
	return i
}

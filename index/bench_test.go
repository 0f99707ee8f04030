package index

import (
	"fmt"
	"testing"
)

// fullOffsetIndex builds an index filled to the default MaxIndexBytes
// (1,310,720 entries) with offsets 0, 2, 4, ...
func fullOffsetIndex(b *testing.B, sealed bool) *OffsetIndex {
	b.Helper()
	x := openOffset(b, tempPath(b, "b.index"), 0, true, nil)
	for i := range int64(x.MaxEntries()) {
		if err := x.Append(2*i, 100*i); err != nil {
			b.Fatal(err)
		}
	}
	if sealed {
		mustNil(b, "Seal", x.Seal())
	}
	b.Cleanup(func() { mustNil(b, "Close", x.Close()) })
	return x
}

// BenchmarkOffsetLookup measures Lookup on a full, page-cache-warm 10 MiB
// index: "warm" targets fall in the last 8 KiB of entries (the in-sync
// consumer and the appender), "whole" targets anywhere (catch-up reads).
// Targets come from a precomputed pseudo-random table so the generator's
// cost is not measured.
func BenchmarkOffsetLookup(b *testing.B) {
	for _, sealed := range []bool{false, true} {
		x := fullOffsetIndex(b, sealed)
		n := int64(x.Entries())
		warmFrom := 2 * (n - int64(warmBytes/OffsetEntrySize))
		for _, rng := range []struct {
			name     string
			lo, span int64
		}{{"warm", warmFrom, 2*n - warmFrom}, {"whole", 0, 2 * n}} {
			targets := make([]int64, 1<<14)
			r := newRandFrom(uint64(len(rng.name)))
			for i := range targets {
				targets[i] = rng.lo + r.Int64N(rng.span)
			}
			b.Run(fmt.Sprintf("%s/sealed=%v", rng.name, sealed), func(b *testing.B) {
				var sink int64
				i := 0
				for b.Loop() {
					sink += x.Lookup(targets[i&(len(targets)-1)]).Position
					i++
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(i), "ns/lookup")
				b.ReportMetric(float64(n), "entries")
				if sink == -1 {
					b.Fatal("unreachable")
				}
			})
		}
	}
}

// BenchmarkOffsetLookupParallel is warm lookups from all Ps at once, which
// is where the shared reader count costs the most.
func BenchmarkOffsetLookupParallel(b *testing.B) {
	x := fullOffsetIndex(b, false)
	n := int64(x.Entries())
	b.RunParallel(func(pb *testing.PB) {
		var i, sink int64
		for pb.Next() {
			sink += x.Lookup(2*n - 1 - (i*7919)%2048).Position
			i++
		}
		if sink == -1 {
			b.Error("unreachable")
		}
	})
}

// BenchmarkTimeLookup is BenchmarkOffsetLookup for a full time index.
func BenchmarkTimeLookup(b *testing.B) {
	x := openTime(b, tempPath(b, "b.timeindex"), 0, true, nil)
	b.Cleanup(func() { mustNil(b, "Close", x.Close()) })
	for i := range int64(x.MaxEntries()) {
		if err := x.Append(1000+3*i, i); err != nil {
			b.Fatal(err)
		}
	}
	n := int64(x.Entries())
	warmFrom := 1000 + 3*(n-int64(warmBytes/TimeEntrySize))
	for _, rng := range []struct {
		name     string
		lo, span int64
	}{{"warm", warmFrom, 1000 + 3*n - warmFrom}, {"whole", 1000, 3 * n}} {
		targets := make([]int64, 1<<14)
		r := newRandFrom(uint64(len(rng.name)))
		for i := range targets {
			targets[i] = rng.lo + r.Int64N(rng.span)
		}
		b.Run(rng.name, func(b *testing.B) {
			var sink int64
			i := 0
			for b.Loop() {
				sink += x.Lookup(targets[i&(len(targets)-1)]).Offset
				i++
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(i), "ns/lookup")
			b.ReportMetric(float64(n), "entries")
			if sink == -1 {
				b.Fatal("unreachable")
			}
		})
	}
}

// BenchmarkOffsetAppend measures Append including the fallocate every
// AllocStepEntries entries; each round fills a fresh index.
func BenchmarkOffsetAppend(b *testing.B) {
	b.SetBytes(OffsetEntrySize)
	var x *OffsetIndex
	var next int64
	for b.Loop() {
		if x == nil || x.Full() {
			if x != nil {
				mustNil(b, "Close", x.Close())
			}
			x = openOffset(b, tempPath(b, "a.index"), 0, true, nil)
			next = 0
		}
		if err := x.Append(next, next*64); err != nil {
			b.Fatal(err)
		}
		next++
	}
	if x != nil {
		mustNil(b, "Close", x.Close())
	}
}

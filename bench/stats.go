package main

import (
	"math"
	"sort"
	"time"
)

// summary condenses the runs of one figure. The median is what tables show;
// min and max travel with it so a reader can see how much the runs agreed.
type summary struct {
	Median float64   `json:"median"`
	Min    float64   `json:"min"`
	Max    float64   `json:"max"`
	Runs   []float64 `json:"runs"`
}

// summarize returns the median, min and max of runs. NaN values (a run
// that could not produce the figure) are dropped; with no values left the
// summary is all NaN so that rendering shows a gap instead of a zero that
// reads like a measurement.
func summarize(runs []float64) summary {
	vals := make([]float64, 0, len(runs))
	for _, v := range runs {
		if !math.IsNaN(v) {
			vals = append(vals, v)
		}
	}
	kept := append([]float64(nil), runs...)
	if len(vals) == 0 {
		return summary{Median: math.NaN(), Min: math.NaN(), Max: math.NaN(), Runs: kept}
	}
	sort.Float64s(vals)
	n := len(vals)
	med := vals[n/2]
	if n%2 == 0 {
		med = (vals[n/2-1] + vals[n/2]) / 2
	}
	return summary{Median: med, Min: vals[0], Max: vals[n-1], Runs: kept}
}

// percentile returns the p-quantile (0 <= p <= 1) of sorted by the
// nearest-rank method: the smallest value with at least p of the samples at
// or below it. Nearest rank never invents a value between two samples, which
// matters for tail latencies measured from a few thousand samples.
func percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	if p <= 0 {
		return sorted[0]
	}
	if p >= 1 {
		return sorted[len(sorted)-1]
	}
	rank := int(math.Ceil(p * float64(len(sorted))))
	if rank < 1 {
		rank = 1
	}
	return sorted[rank-1]
}

func nan() float64 { return math.NaN() }

// mbps is megabytes (10^6, as disk and network rates are quoted) per second.
func mbps(bytes int64, d time.Duration) float64 {
	if d <= 0 {
		return math.NaN()
	}
	return float64(bytes) / 1e6 / d.Seconds()
}

// perSecond is a count per second of wall time.
func perSecond(n int64, d time.Duration) float64 {
	if d <= 0 {
		return math.NaN()
	}
	return float64(n) / d.Seconds()
}

// valid is how many runs produced the figure.
func (s summary) valid() int {
	n := 0
	for _, v := range s.Runs {
		if !math.IsNaN(v) {
			n++
		}
	}
	return n
}

// spread is how far the runs disagree, relative to their median:
// (max − min) / |median|. It is NaN with fewer than two runs, where
// nothing can be said, and for a zero median.
func (s summary) spread() float64 {
	if s.valid() < 2 || s.Median == 0 || math.IsNaN(s.Median) {
		return math.NaN()
	}
	return (s.Max - s.Min) / math.Abs(s.Median)
}

// median returns the median of vals, NaN for none; vals is not changed.
func median(vals []float64) float64 {
	return summarize(vals).Median
}

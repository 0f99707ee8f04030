package main

import (
	"math"
	"testing"
	"time"
)

func TestSummarize(t *testing.T) {
	tests := []struct {
		name          string
		runs          []float64
		med, min, max float64
	}{
		{"one", []float64{3}, 3, 3, 3},
		{"odd", []float64{5, 1, 3}, 3, 1, 5},
		{"even takes the mean of the middle two", []float64{4, 1, 3, 2}, 2.5, 1, 4},
		{"NaN runs are dropped", []float64{math.NaN(), 7, 9, math.NaN()}, 8, 7, 9},
		{"negative", []float64{-1, -3, -2}, -2, -3, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := summarize(tt.runs)
			if s.Median != tt.med || s.Min != tt.min || s.Max != tt.max {
				t.Fatalf("summarize(%v) = %v/%v/%v, want %v/%v/%v", tt.runs, s.Median, s.Min, s.Max, tt.med, tt.min, tt.max)
			}
			if len(s.Runs) != len(tt.runs) {
				t.Fatalf("kept %d runs, want all %d", len(s.Runs), len(tt.runs))
			}
		})
	}
	s := summarize(nil)
	if !math.IsNaN(s.Median) || !math.IsNaN(s.Min) || !math.IsNaN(s.Max) {
		t.Fatalf("summarize(nil) = %+v, want NaN", s)
	}
	in := []float64{3, 1, 2}
	summarize(in)
	if in[0] != 3 || in[1] != 1 {
		t.Fatalf("summarize sorted its input: %v", in)
	}
}

func TestPercentile(t *testing.T) {
	sorted := make([]float64, 1000)
	for i := range sorted {
		sorted[i] = float64(i + 1) // 1..1000
	}
	for _, tt := range []struct{ p, want float64 }{
		{0, 1}, {0.5, 500}, {0.99, 990}, {0.999, 999}, {1, 1000}, {0.0001, 1},
	} {
		if got := percentile(sorted, tt.p); got != tt.want {
			t.Errorf("percentile(1..1000, %v) = %v, want %v", tt.p, got, tt.want)
		}
	}
	if got := percentile([]float64{42}, 0.999); got != 42 {
		t.Errorf("one sample: %v", got)
	}
	if !math.IsNaN(percentile(nil, 0.5)) {
		t.Error("percentile of nothing is not NaN")
	}
}

func TestRates(t *testing.T) {
	if got := mbps(3e6, 2*time.Second); got != 1.5 {
		t.Errorf("mbps = %v, want 1.5", got)
	}
	if !math.IsNaN(mbps(1, 0)) || !math.IsNaN(perSecond(1, 0)) {
		t.Error("a zero duration must give NaN, not Inf")
	}
	if got := perSecond(500, 250*time.Millisecond); got != 2000 {
		t.Errorf("perSecond = %v", got)
	}
	u := usage{User: 3 * time.Second, Sys: time.Second, MinFlt: 10, InBlock: 96}
	v := usage{User: time.Second, Sys: time.Second, MinFlt: 4, InBlock: 32}
	d := u.sub(v)
	if d.cpu() != 2*time.Second || d.MinFlt != 6 || d.InBlock != 64 {
		t.Errorf("sub = %+v", d)
	}
	if d.add(v) != u {
		t.Errorf("add does not undo sub: %+v", d.add(v))
	}
	if got := d.nsPerByte(1e9); got != 2 {
		t.Errorf("nsPerByte = %v, want 2", got)
	}
	if !math.IsNaN(d.nsPerByte(0)) {
		t.Error("nsPerByte(0) is not NaN")
	}
}

func TestSelfUsageAdvances(t *testing.T) {
	u0, err := selfUsage()
	if err != nil {
		t.Fatal(err)
	}
	// Burn CPU until the clock of this process moves: getrusage must see it.
	deadline := time.Now().Add(5 * time.Second)
	x := uint64(1)
	for time.Now().Before(deadline) {
		for i := 0; i < 1e6; i++ {
			x = x*6364136223846793005 + 1
		}
		u1, err := selfUsage()
		if err != nil {
			t.Fatal(err)
		}
		if u1.sub(u0).cpu() > 10*time.Millisecond {
			return
		}
	}
	t.Fatalf("getrusage saw no CPU time after 5 s of spinning (x=%d)", x)
}

//go:build !linux

package folio

import "time"

// pacer ticks at a fixed interval. Outside Linux it sleeps, which on most
// systems wakes too late for intervals of tens of microseconds: records
// then go in bursts, and the latencies measured include queueing behind
// them (see the Linux pacer).
type pacer struct {
	start    time.Time
	interval time.Duration
	ticks    int64 // delivered so far
}

func newPacer(interval time.Duration) (*pacer, error) {
	return &pacer{start: time.Now(), interval: interval}, nil
}

// wait blocks until the next tick and returns how many ticks passed since
// the previous wait: more than one when the caller fell behind.
func (p *pacer) wait() (int, error) {
	time.Sleep(time.Until(p.start.Add(time.Duration(p.ticks+1) * p.interval)))
	k := int64(time.Since(p.start)/p.interval) - p.ticks
	p.ticks += k
	return int(k), nil
}

func (p *pacer) close() error { return nil }

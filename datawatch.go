package folio

import (
	"context"
	"errors"
	"sync"

	"github.com/foliolog/folio/log"
)

// dataWatch tells waiters that a partition has visible records at or after
// an offset. A consumer assigned many partitions registers one channel with
// each of them instead of parking a goroutine on each log: the partition
// runs one goroutine, only while someone waits, that waits on the log for
// the lowest offset asked and wakes every waiter it satisfies. The log wakes
// that goroutine without polling (log.Wait).
type dataWatch struct {
	l *log.Log

	// mu guards the fields below.
	mu      sync.Mutex
	waiters map[*dataWaiter]int64 // the offset each waits to see data at or after
	running bool                  // the goroutine is running
	planned int64                 // the offset it waits for now
	replan  context.CancelFunc    // interrupts its wait, to plan for a lower offset
	closed  bool                  // the partition closed: nothing more to wait for

	wg sync.WaitGroup // the goroutine, joined by close
}

// dataWaiter is one waiting Poll; ch has room for one wake-up.
type dataWaiter struct {
	ch chan struct{}
}

func newDataWaiter() *dataWaiter { return &dataWaiter{ch: make(chan struct{}, 1)} }

func (w *dataWaiter) wake() {
	select {
	case w.ch <- struct{}{}:
	default:
	}
}

func newDataWatch(l *log.Log) *dataWatch {
	return &dataWatch{l: l, waiters: map[*dataWaiter]int64{}}
}

// register makes w wake once records at or after offset are visible (or
// the partition closes). It wakes w at once if they already are.
func (d *dataWatch) register(w *dataWaiter, offset int64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed || offset < d.l.HighWatermark() {
		w.wake()
		return
	}
	d.waiters[w] = offset
	switch {
	case !d.running:
		d.running = true
		d.wg.Add(1)
		go d.run()
	case offset < d.planned && d.replan != nil:
		d.replan()
	}
}

// unregister forgets w.
func (d *dataWatch) unregister(w *dataWaiter) {
	d.mu.Lock()
	delete(d.waiters, w)
	d.mu.Unlock()
}

// run waits on the log for the lowest offset any waiter wants and wakes the
// waiters that have their data, until none is left.
func (d *dataWatch) run() {
	defer d.wg.Done()
	for {
		d.mu.Lock()
		if len(d.waiters) == 0 {
			d.running, d.replan = false, nil
			d.mu.Unlock()
			return
		}
		first := true
		for _, off := range d.waiters {
			if first || off < d.planned {
				d.planned, first = off, false
			}
		}
		ctx, cancel := context.WithCancel(context.Background())
		d.replan = cancel
		offset := d.planned
		d.mu.Unlock()

		err := d.l.Wait(ctx, offset)
		cancel()

		d.mu.Lock()
		gone := errors.Is(err, log.ErrClosed)
		hw := d.l.HighWatermark()
		for w, off := range d.waiters {
			if gone || off < hw {
				w.wake()
				delete(d.waiters, w)
			}
		}
		if gone {
			d.closed = true
		}
		d.mu.Unlock()
	}
}

// close wakes every waiter for good and waits for the goroutine. The log
// must be closed first (its Wait then returns at once).
func (d *dataWatch) close() {
	d.mu.Lock()
	d.closed = true
	for w := range d.waiters {
		w.wake()
		delete(d.waiters, w)
	}
	if d.replan != nil {
		d.replan()
	}
	d.mu.Unlock()
	d.wg.Wait()
}

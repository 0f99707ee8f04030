package log

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Cleaner defaults, Kafka's where Kafka has one.
const (
	DefaultCleanerWorkers       = 1                // log.cleaner.threads
	DefaultCleanerBufferBytes   = 128 << 20        // log.cleaner.dedupe.buffer.size
	DefaultCleanerLoadFactor    = 0.9              // log.cleaner.io.buffer.load.factor
	DefaultCleanerCheckInterval = 15 * time.Second // log.cleaner.backoff.ms
	DefaultCleanerIOBufferBytes = 512 << 10        // log.cleaner.io.buffer.size
)

// CleanerOptions configure a Cleaner. A nil *CleanerOptions, and every zero
// field, means the default stated on the field.
type CleanerOptions struct {
	// Workers is how many logs are cleaned at once, each by a goroutine of
	// the Cleaner's. Default 1.
	Workers int
	// BufferBytes is the memory for the key-to-offset maps, shared by the
	// workers: a pass (a worker's, or a Compact call's, which waits for a
	// worker's share) allocates at most BufferBytes/Workers for its map,
	// 24 bytes a slot, and less when the dirty part of the log has fewer
	// offsets. A map that fills up cleans the log up to where it filled,
	// and the next pass goes on from there. Default 128 MiB; each worker's
	// share must hold at least two slots.
	BufferBytes int64
	// LoadFactor is the share of a map's slots that may be filled before
	// the map counts as full. Default 0.9; at most 0.95.
	LoadFactor float64
	// CheckInterval is how often idle workers look for a log to clean. A
	// log also wakes them when it seals a segment, which is when its dirty
	// ratio can grow; the interval covers MinCompactionLag running out, and
	// is how long a log whose cleaning failed waits before the next try.
	// Default 15 s.
	CheckInterval time.Duration
	// IOBufferBytes is the size of each read and write buffer of a pass.
	// Default 512 KiB; a batch larger than it is read whole anyway.
	IOBufferBytes int
}

func (o *CleanerOptions) withDefaults() CleanerOptions {
	var c CleanerOptions
	if o != nil {
		c = *o
	}
	if c.Workers == 0 {
		c.Workers = DefaultCleanerWorkers
	}
	if c.BufferBytes == 0 {
		c.BufferBytes = DefaultCleanerBufferBytes
	}
	if c.LoadFactor == 0 {
		c.LoadFactor = DefaultCleanerLoadFactor
	}
	if c.CheckInterval == 0 {
		c.CheckInterval = DefaultCleanerCheckInterval
	}
	if c.IOBufferBytes == 0 {
		c.IOBufferBytes = DefaultCleanerIOBufferBytes
	}
	return c
}

func (o *CleanerOptions) validate() error {
	bad := func(field string, format string, args ...any) error {
		return fmt.Errorf("%w: CleanerOptions.%s %s", ErrInvalidOptions, field, fmt.Sprintf(format, args...))
	}
	switch {
	case o.Workers < 1:
		return bad("Workers", "%d is not positive", o.Workers)
	case o.BufferBytes/int64(o.Workers) < 2*mapEntrySize:
		return bad("BufferBytes", "%d leaves each of %d workers less than two %d-byte map slots", o.BufferBytes, o.Workers, mapEntrySize)
	case !(o.LoadFactor > 0 && o.LoadFactor <= maxLoadFactor):
		return bad("LoadFactor", "%v outside (0, %v]", o.LoadFactor, maxLoadFactor)
	case o.CheckInterval < 0:
		return bad("CheckInterval", "%v is negative", o.CheckInterval)
	case o.IOBufferBytes < 0:
		return bad("IOBufferBytes", "%d is negative", o.IOBufferBytes)
	}
	return nil
}

// Cleaner compacts logs opened with Options.Compact: a pool of workers,
// each cleaning one log at a time, the dirtiest first, whenever a log's
// dirty ratio reaches its MinCleanableDirtyRatio (Kafka's LogCleaner). Share
// one Cleaner between the logs of a process (Options.Cleaner) to bound the
// memory and I/O that cleaning takes; a log opened without one gets a
// private Cleaner with the default options, which it closes itself.
//
// Its creator owns it: Close stops the workers (a pass under way is
// abandoned, its files removed) and must come after the logs that use it
// are closed, or they stop being cleaned. A Cleaner is safe for concurrent
// use.
type Cleaner struct {
	opts CleanerOptions
	// slots holds one token per worker; every pass holds one, so that at
	// most Workers maps exist at a time, whoever runs the passes.
	slots  chan struct{}
	kickCh chan struct{}
	ctx    context.Context // cancelled by Close
	cancel context.CancelFunc
	wg     sync.WaitGroup

	// logsMu guards logs and closed.
	logsMu sync.Mutex
	logs   map[*Log]*cleanerLog
	closed bool

	passes   atomic.Int64
	failures atomic.Int64
	lastErr  atomic.Pointer[error]
}

// cleanerLog is the Cleaner's bookkeeping for one registered log.
type cleanerLog struct {
	busy    bool      // a worker is cleaning it
	retryAt time.Time // after a failure, not before this (the cleaner's clock)
}

// NewCleaner starts a Cleaner with opts (nil means the defaults).
func NewCleaner(opts *CleanerOptions) (*Cleaner, error) {
	c, err := newCleaner(opts)
	if err != nil {
		return nil, err
	}
	c.start()
	return c, nil
}

// newCleaner makes a Cleaner whose workers are not started: tests drive it
// with cleanDirtiest, and a log opened without its background goroutine
// uses one for its Compact calls alone.
func newCleaner(opts *CleanerOptions) (*Cleaner, error) {
	o := opts.withDefaults()
	if err := o.validate(); err != nil {
		return nil, err
	}
	c := &Cleaner{
		opts:   o,
		slots:  make(chan struct{}, o.Workers),
		kickCh: make(chan struct{}, 1),
		logs:   map[*Log]*cleanerLog{},
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	for range o.Workers {
		c.slots <- struct{}{}
	}
	return c, nil
}

func (c *Cleaner) start() {
	for range c.opts.Workers {
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			c.work()
		}()
	}
}

// Close stops the workers and waits for them; a pass under way is
// abandoned. Compact on a log that uses the Cleaner then returns ErrClosed.
// Close is idempotent; later calls return ErrClosed.
func (c *Cleaner) Close() error {
	c.logsMu.Lock()
	if c.closed {
		c.logsMu.Unlock()
		return ErrClosed
	}
	c.closed = true
	c.logsMu.Unlock()
	c.cancel()
	c.wg.Wait()
	return nil
}

// CleanerStats are counters of a Cleaner.
type CleanerStats struct {
	Logs     int   // logs registered
	Passes   int64 // cleaning passes that completed, by workers and Compact calls
	Failures int64 // passes of the workers that failed
	// LastError is the error of the last failed pass of a worker, nil if
	// none failed. Nothing else reports it: no caller waits on a worker.
	LastError error
}

// Stats returns the Cleaner's counters.
func (c *Cleaner) Stats() CleanerStats {
	c.logsMu.Lock()
	n := len(c.logs)
	c.logsMu.Unlock()
	st := CleanerStats{Logs: n, Passes: c.passes.Load(), Failures: c.failures.Load()}
	if p := c.lastErr.Load(); p != nil {
		st.LastError = *p
	}
	return st
}

// mapSlots is the largest map one pass may allocate, in slots.
func (c *Cleaner) mapSlots() int {
	return int(c.opts.BufferBytes / int64(c.opts.Workers) / mapEntrySize)
}

// register adds a log for the workers to watch.
func (c *Cleaner) register(l *Log) {
	c.logsMu.Lock()
	if !c.closed {
		c.logs[l] = &cleanerLog{}
	}
	c.logsMu.Unlock()
	c.kick()
}

// unregister removes a log; a pass on it that is under way goes on until
// the log's Close makes it stop (Close waits for it).
func (c *Cleaner) unregister(l *Log) {
	c.logsMu.Lock()
	delete(c.logs, l)
	c.logsMu.Unlock()
}

// kick wakes a worker to look for work.
func (c *Cleaner) kick() { kick(c.kickCh) }

// acquire takes a worker's share of the memory budget for one pass.
func (c *Cleaner) acquire(ctx context.Context, quit <-chan struct{}) error {
	if c.ctx.Err() != nil {
		return fmt.Errorf("%w: the cleaner", ErrClosed)
	}
	select {
	case <-c.slots:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-c.ctx.Done():
		return fmt.Errorf("%w: the cleaner", ErrClosed)
	case <-quit:
		return ErrClosed
	}
}

func (c *Cleaner) release() { c.slots <- struct{}{} }

// work is a worker: it waits for a kick or the check interval, then cleans
// the dirtiest eligible logs one pass at a time until none is left.
func (c *Cleaner) work() {
	var tick <-chan time.Time
	if c.opts.CheckInterval > 0 {
		t := time.NewTicker(c.opts.CheckInterval)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-c.kickCh:
		case <-tick:
		}
		for c.ctx.Err() == nil && c.cleanDirtiest() {
		}
	}
}

// cleanDirtiest runs one pass on the registered log with the highest dirty
// ratio among those at or above their MinCleanableDirtyRatio, and reports
// whether it found one (so the caller looks again).
func (c *Cleaner) cleanDirtiest() bool {
	c.logsMu.Lock()
	var cands []*Log
	for l, st := range c.logs {
		if !st.busy && !time.Now().Before(st.retryAt) {
			cands = append(cands, l)
		}
	}
	c.logsMu.Unlock()

	var best *Log
	bestRatio := -1.0
	for _, l := range cands {
		ratio, ok := l.cleanable()
		if ok && ratio >= l.cur().o.MinCleanableDirtyRatio && ratio > bestRatio {
			best, bestRatio = l, ratio
		}
	}
	if best == nil {
		return false
	}
	c.logsMu.Lock()
	st := c.logs[best]
	if st == nil || st.busy {
		c.logsMu.Unlock()
		return st != nil // another worker took it: look again
	}
	st.busy = true
	c.logsMu.Unlock()

	_, err := best.compactPasses(c.ctx, 1)
	c.logsMu.Lock()
	st.busy = false
	if err != nil && !errors.Is(err, ErrClosed) && !errors.Is(err, context.Canceled) {
		st.retryAt = time.Now().Add(c.opts.CheckInterval)
		c.failures.Add(1)
		c.lastErr.Store(&err)
	}
	c.logsMu.Unlock()
	return true
}

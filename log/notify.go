package log

import (
	"container/heap"
	"sync"
	"sync/atomic"
)

// notifier wakes goroutines waiting for a value to change, without polling:
// a waiter takes the current channel, re-checks its condition, and blocks on
// the channel; whoever changes the value closes that channel and installs a
// fresh one. Closing costs an allocation, so it is skipped while nobody
// waits; the waiter count and the value are both read and written with
// sequentially consistent atomics, so a waiter that registers after the
// change was published sees the new value on its re-check (Dekker's
// argument: notify stores the value, then loads waiters; wait adds to
// waiters, then loads the value).
//
// It also keeps channel waiters (waitChan) keyed by the offset they wait
// to pass, each with a channel of its own that is closed only once the
// value passes it, so that a caller can select on many logs at once
// without a goroutine per wait. The same argument covers them: waitChan
// publishes its registration in chanWaiters, then loads the value.
type notifier struct {
	ch      atomic.Pointer[chan struct{}]
	waiters atomic.Int64

	// level returns the value channel waiters wait to pass: the high
	// watermark, or math.MaxInt64 once the log is closed. Set once, before
	// the notifier is shared.
	level func() int64

	// chanMu guards byOffset. It is a leaf: fire takes it under appendMu.
	chanMu      sync.Mutex
	byOffset    chanHeap
	chanWaiters atomic.Int64 // len(byOffset), for notify's fast path
}

func newNotifier() *notifier {
	n := &notifier{}
	ch := make(chan struct{})
	n.ch.Store(&ch)
	return n
}

// register announces a waiter and returns the channel to block on. The
// caller must check its condition after register and call unregister when
// done.
func (n *notifier) register() <-chan struct{} {
	n.waiters.Add(1)
	return *n.ch.Load()
}

func (n *notifier) unregister() { n.waiters.Add(-1) }

// notify wakes every registered waiter and the channel waiters whose
// offset the value passed. Call it after publishing the change.
func (n *notifier) notify() {
	if n.waiters.Load() != 0 {
		n.wake()
	}
	if n.chanWaiters.Load() != 0 {
		n.fire()
	}
}

// broadcast wakes waiters unconditionally (used by Close, after which
// level passes every offset).
func (n *notifier) broadcast() {
	n.wake()
	n.fire()
}

func (n *notifier) wake() {
	fresh := make(chan struct{})
	old := n.ch.Swap(&fresh)
	close(*old)
}

// chanWaiter is one waitChan registration.
type chanWaiter struct {
	offset int64
	ch     chan struct{} // nil for a waitFunc registration
	fn     func()        // called instead of closing ch
	idx    int           // index in byOffset; -1 once fired or cancelled
}

// closedChan is what waitChan returns when the wait is over before it
// began.
var closedChan = func() chan struct{} {
	ch := make(chan struct{})
	close(ch)
	return ch
}()

// waitChan returns a channel closed once level passes offset, and a cancel
// function that unregisters it (idempotent, and harmless after the channel
// closed). No goroutine is involved: fire closes the channel.
func (n *notifier) waitChan(offset int64) (<-chan struct{}, func()) {
	if offset < n.level() {
		return closedChan, func() {}
	}
	w := &chanWaiter{offset: offset, ch: make(chan struct{})}
	n.chanMu.Lock()
	heap.Push(&n.byOffset, w)
	n.chanWaiters.Store(int64(len(n.byOffset)))
	n.chanMu.Unlock()
	if offset < n.level() {
		// The value moved between the check and the registration, maybe
		// before notify could see it.
		n.fire()
	}
	return w.ch, func() { n.cancel(w) }
}

// waitFunc is waitChan with a callback instead of a channel: fn is called
// once, by the goroutine that moves level past offset (or closes the log),
// unless cancel ran first. fn must not block nor call back into the log:
// it runs under the appender's locks. If level already passed offset, fn
// runs before waitFunc returns.
func (n *notifier) waitFunc(offset int64, fn func()) func() {
	if offset < n.level() {
		fn()
		return func() {}
	}
	w := &chanWaiter{offset: offset, fn: fn}
	n.chanMu.Lock()
	heap.Push(&n.byOffset, w)
	n.chanWaiters.Store(int64(len(n.byOffset)))
	n.chanMu.Unlock()
	if offset < n.level() {
		n.fire()
	}
	return func() { n.cancel(w) }
}

func (n *notifier) cancel(w *chanWaiter) {
	n.chanMu.Lock()
	if w.idx >= 0 {
		heap.Remove(&n.byOffset, w.idx)
		n.chanWaiters.Store(int64(len(n.byOffset)))
	}
	n.chanMu.Unlock()
}

// fire closes the channels of the waiters whose offset level passed.
func (n *notifier) fire() {
	lvl := n.level()
	n.chanMu.Lock()
	for len(n.byOffset) > 0 && n.byOffset[0].offset < lvl {
		w := heap.Pop(&n.byOffset).(*chanWaiter)
		if w.fn != nil {
			w.fn()
		} else {
			close(w.ch)
		}
	}
	n.chanWaiters.Store(int64(len(n.byOffset)))
	n.chanMu.Unlock()
}

// chanHeap is a min-heap of channel waiters by offset (container/heap).
type chanHeap []*chanWaiter

func (h chanHeap) Len() int           { return len(h) }
func (h chanHeap) Less(i, j int) bool { return h[i].offset < h[j].offset }
func (h chanHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].idx, h[j].idx = i, j
}

func (h *chanHeap) Push(x any) {
	w := x.(*chanWaiter)
	w.idx = len(*h)
	*h = append(*h, w)
}

func (h *chanHeap) Pop() any {
	old := *h
	w := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	w.idx = -1
	return w
}

// truncated wakes, after a truncation to end, every waiter: the ones
// blocked in Wait re-check (and see the truncation), and the channel and
// callback waiters for offsets beyond end fire, since the offset they wait
// to pass is no longer in the log (their next read finds it out of range).
func (n *notifier) truncated(end int64) {
	n.wake()
	n.chanMu.Lock()
	var keep chanHeap
	for _, w := range n.byOffset {
		if w.offset <= end {
			keep = append(keep, w)
			continue
		}
		w.idx = -1
		if w.fn != nil {
			w.fn()
		} else {
			close(w.ch)
		}
	}
	n.byOffset = n.byOffset[:0]
	for _, w := range keep {
		heap.Push(&n.byOffset, w)
	}
	n.chanWaiters.Store(int64(len(n.byOffset)))
	n.chanMu.Unlock()
}

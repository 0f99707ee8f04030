package log

import (
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
type notifier struct {
	ch      atomic.Pointer[chan struct{}]
	waiters atomic.Int64
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

// notify wakes every registered waiter. Call it after publishing the change.
func (n *notifier) notify() {
	if n.waiters.Load() == 0 {
		return
	}
	n.broadcast()
}

// broadcast wakes waiters unconditionally (used by Close).
func (n *notifier) broadcast() {
	fresh := make(chan struct{})
	old := n.ch.Swap(&fresh)
	close(*old)
}

package log

import (
	"math"
	"sync/atomic"
	"time"

	"github.com/foliolog/folio/segment"
)

// WaitChan is Wait for callers that wait on many logs at once (a consumer
// assigned many partitions selects on one channel per log): ready is closed
// as soon as a record at or beyond offset is visible (offset is below the
// high watermark), or when the log closes (then LogEndOffset and Read say
// which: Read returns ErrClosed). cancel unregisters the wait; call it
// when done, whether ready closed or not. It is idempotent and cheap.
//
// No goroutine waits on the caller's behalf: the appender or flusher that
// moves the high watermark closes the channels it passes. A read-only log's
// high watermark moves only in Refresh.
func (l *Log) WaitChan(offset int64) (ready <-chan struct{}, cancel func()) {
	return l.hwWake.waitChan(offset)
}

// WaitFunc is WaitChan with a callback: fn is called once, as soon as a
// record at or beyond offset is visible or the log closes, unless cancel
// was called first (cancel is idempotent and cheap). It lets one waiter
// (a Kafka fetch parked on many partitions) wait on one notification of
// its own without a channel or a goroutine per log. fn runs on the
// goroutine that moved the high watermark, under the log's locks, so it
// must not block nor call into the log: a non-blocking send on a buffered
// channel is the intended use. If the offset is visible already, fn runs
// before WaitFunc returns.
func (l *Log) WaitFunc(offset int64, fn func()) (cancel func()) {
	return l.hwWake.waitFunc(offset, fn)
}

// WaitEndFunc is WaitFunc bounded by the log end instead of the high
// watermark: fn is called once a record at or beyond offset has been
// appended (offset is below the log end), or the log closes or is
// truncated below offset, unless cancel was called first. A leader's fetch
// for a follower parks on it: the follower copies what is not yet
// committed, and under an external high watermark the high watermark only
// moves once the follower has fetched it, so waiting on the high watermark
// would stall replication until the fetch's MaxWait. fn runs under the
// log's locks, as with WaitFunc.
func (l *Log) WaitEndFunc(offset int64, fn func()) (cancel func()) {
	return l.endWake.waitFunc(offset, fn)
}

// endWaitLevel is the offset WaitEndFunc's waiters wait to pass: the log
// end readers see, or every offset once the log is closed.
func (l *Log) endWaitLevel() int64 {
	if l.closed.Load() {
		return math.MaxInt64
	}
	return l.endPub.offset.Load()
}

// waitLevel is the offset WaitChan's waiters wait to pass: the high
// watermark, or every offset once the log is closed.
func (l *Log) waitLevel() int64 {
	if l.closed.Load() {
		return math.MaxInt64
	}
	return l.hw.Load().offset
}

// Err reports the log's state: nil while it accepts writes, ErrClosed after
// Close, or the error wrapping ErrFailed (and the cause) once a write or an
// fsync failed, including one in the background (a FlushInterval flush, a
// seal) that no append has seen yet. A read-only log reports nil or
// ErrClosed.
func (l *Log) Err() error { return l.err() }

// fsyncBounds are the upper bounds of the buckets of FsyncStats.Buckets;
// the last bucket counts the fsyncs slower than the last bound.
var fsyncBounds = [...]time.Duration{
	50 * time.Microsecond,
	100 * time.Microsecond,
	250 * time.Microsecond,
	500 * time.Microsecond,
	time.Millisecond,
	2500 * time.Microsecond,
	5 * time.Millisecond,
	10 * time.Millisecond,
	25 * time.Millisecond,
	50 * time.Millisecond,
	100 * time.Millisecond,
	250 * time.Millisecond,
	500 * time.Millisecond,
	time.Second,
}

// FsyncBucketCount is the number of buckets in FsyncStats.Buckets: one per
// bound of FsyncBucketBound and one for the slower rest.
const FsyncBucketCount = 15

// One bucket per bound and one more, checked at compile time.
var _ = [1]struct{}{}[FsyncBucketCount-len(fsyncBounds)-1]

// FsyncBucketBound returns the upper bound of bucket i of
// FsyncStats.Buckets: 50µs, 100µs, 250µs, 500µs, 1ms, 2.5ms, 5ms, 10ms,
// 25ms, 50ms, 100ms, 250ms, 500ms, 1s, and for the last bucket (and any i
// out of range) the largest Duration.
func FsyncBucketBound(i int) time.Duration {
	if i < 0 || i >= len(fsyncBounds) {
		return math.MaxInt64
	}
	return fsyncBounds[i]
}

// FsyncStats describe how long the log's fsyncs took: every fsync an
// acknowledgement or a seal waits on, that is each group commit's fsync of
// the active segment's .log and each seal of a rolled segment (which fsyncs
// its .log and both indexes; timed as one).
type FsyncStats struct {
	Count int64
	Total time.Duration
	Max   time.Duration
	// Buckets[i] counts the fsyncs that took more than
	// FsyncBucketBound(i-1) and at most FsyncBucketBound(i).
	Buckets [FsyncBucketCount]int64
}

// Mean is Total/Count, or 0 when nothing was fsynced.
func (s FsyncStats) Mean() time.Duration {
	if s.Count == 0 {
		return 0
	}
	return s.Total / time.Duration(s.Count)
}

// Quantile returns an upper bound of the q-quantile (0 < q <= 1) of the
// fsync latencies: the upper bound of the bucket that holds it, or Max if
// that is lower (always for the last bucket). 0 when nothing was fsynced.
func (s FsyncStats) Quantile(q float64) time.Duration {
	if s.Count == 0 {
		return 0
	}
	rank := int64(math.Ceil(q * float64(s.Count)))
	rank = min(max(rank, 1), s.Count)
	var seen int64
	for i, n := range s.Buckets {
		seen += n
		if seen >= rank {
			return min(FsyncBucketBound(i), s.Max)
		}
	}
	return s.Max
}

// fsyncRecorder accumulates FsyncStats without a lock.
type fsyncRecorder struct {
	count   atomic.Int64
	total   atomic.Int64
	max     atomic.Int64
	buckets [FsyncBucketCount]atomic.Int64
}

func (r *fsyncRecorder) record(d time.Duration) {
	r.count.Add(1)
	r.total.Add(int64(d))
	for {
		cur := r.max.Load()
		if int64(d) <= cur || r.max.CompareAndSwap(cur, int64(d)) {
			break
		}
	}
	i := 0
	for i < len(fsyncBounds) && d > fsyncBounds[i] {
		i++
	}
	r.buckets[i].Add(1)
}

func (r *fsyncRecorder) stats() FsyncStats {
	s := FsyncStats{
		Count: r.count.Load(),
		Total: time.Duration(r.total.Load()),
		Max:   time.Duration(r.max.Load()),
	}
	for i := range r.buckets {
		s.Buckets[i] = r.buckets[i].Load()
	}
	return s
}

// timeFsync runs fn, an fsync or a seal, and records how long it took.
func (l *Log) timeFsync(fn func() error) error {
	start := time.Now()
	err := fn()
	l.fsyncs.record(time.Since(start))
	return err
}

// seal seals a segment (see segment.Seal), timing it as an fsync.
func (l *Log) seal(seg *segment.Segment) error {
	return l.timeFsync(seg.Seal)
}

// bytesOf sums the sizes of the segments in a snapshot: the last one from
// the segment (its append state, when active), the others from their
// .log's size on disk, which is exactly their batches. A segment deleted
// meanwhile counts for nothing. Stat, not the segment's Size, so that
// computing stats loads no idle segment behind the caps' back.
func (l *Log) bytesOf(sn *snapshot) int64 {
	var total int64
	last, ok := sn.segs.Max()
	sn.segs.Ascend(func(e *segEntry) bool {
		if ok && e == last {
			// Under the caps: after a clean open, or closed idle, the
			// last segment may hold no files, and Size may load them.
			l.caps.acquire(&e.capEntry)
			size, err := e.seg.Size()
			l.caps.release(&e.capEntry)
			if err == nil {
				total += size
				return true
			}
		}
		if fi, err := l.fs.Stat(segment.LogPath(l.dir, e.base)); err == nil {
			total += fi.Size()
		}
		return true
	})
	return total
}

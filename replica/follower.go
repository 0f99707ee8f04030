package replica

import "fmt"

// FollowerLog is what reconciliation needs of a follower's local log: its
// epoch lineage (the leader-epoch cache, Kafka's leader-epoch-checkpoint)
// and truncation. The log package's follower append and persistent epoch
// cache will satisfy it; the simulator has an in-memory one.
type FollowerLog interface {
	LogEndOffset() int64
	// LastEpoch returns the largest leader epoch in the log's epoch cache,
	// -1 for none.
	LastEpoch() int32
	// EndOffsetForEpoch returns the largest epoch <= epoch the cache holds
	// and its end offset (the start of the next larger epoch, or the log
	// end for the last), or (-1, -1) when it holds none (Kafka's
	// OffsetForLeaderEpoch answer).
	EndOffsetForEpoch(epoch int32) (int32, int64)
	// TruncateTo removes every record at or after offset, and the epochs
	// that start there or later.
	TruncateTo(offset int64) error
}

// TruncationPoint is one step of a follower's reconciliation by epoch
// lineage (KIP-101, KIP-279): the follower asked for its LastEpoch, the
// leader answered with the largest epoch it knows at or below it and that
// epoch's end. It returns where the follower truncates: the least of the
// leader's end of that epoch and the follower's own (KIP-279: the
// follower's tail may be of epochs the leader never had, after a fast
// double failover), and whether it is then reconciled: it is when the
// follower holds that very epoch (the records of one epoch are one
// leader's, so the shorter is a prefix of the longer), or nothing is
// left; otherwise it asks again with its new last epoch. It never
// truncates to a local high watermark.
func TruncationPoint(l FollowerLog, leaderEpoch int32, leaderEnd int64) (offset int64, reconciled bool) {
	if leaderEpoch < 0 || leaderEnd < 0 {
		return 0, true // the leader knows no epoch this old: keep nothing
	}
	mine, end := l.EndOffsetForEpoch(leaderEpoch)
	if end < 0 {
		end = 0
	}
	offset = min(leaderEnd, end, l.LogEndOffset())
	return offset, mine == leaderEpoch || offset == 0
}

// Reconcile truncates l at the point TruncationPoint computes and reports
// whether it is reconciled.
func Reconcile(l FollowerLog, leaderEpoch int32, leaderEnd int64) (bool, error) {
	at, done := TruncationPoint(l, leaderEpoch, leaderEnd)
	if at < l.LogEndOffset() {
		if err := l.TruncateTo(at); err != nil {
			return false, fmt.Errorf("replica: truncating to %d: %w", at, err)
		}
	}
	return done, nil
}

// CheckEpoch answers a request carrying the follower's current leader
// epoch (a fetch, an OffsetForLeaderEpoch, KIP-320): nil if it is this
// leader's, else ErrFencedLeaderEpoch (older), ErrUnknownLeaderEpoch
// (newer), or ErrNotLeader once this leader is fenced. Reconciliation is
// answered only in the leader's own epoch (Kip320 rule 2).
func (l *Leader) CheckEpoch(epoch int32) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.checkEpochLocked(epoch)
}

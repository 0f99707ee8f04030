package replica

import (
	"fmt"
	"slices"
)

// entry is one record of the simulator's log: the leader epoch that
// wrote it and a value unique across the run.
type entry struct {
	epoch int32
	value uint64
}

type epochStart struct {
	epoch int32
	start int64
}

// memLog is the simulator's in-memory log, standing in for the log
// package's follower append and epoch cache (replica-log's work): records
// at offsets from 0, the epoch cache, a durable prefix (what survives a
// crash), and the local high watermark.
type memLog struct {
	entries []entry
	epochs  []epochStart
	durable int64
	hw      int64
	// sync makes every append durable at once (the topic's FlushSync).
	sync bool
	// cutBelowHW is set when a truncation cut below the local high
	// watermark: committed records removed, an invariant broken.
	cutBelowHW string
}

func (l *memLog) LogEndOffset() int64 { return int64(len(l.entries)) }

func (l *memLog) SetHighWatermark(o int64) error {
	if o > l.LogEndOffset() || o < 0 {
		return fmt.Errorf("high watermark %d outside [0, %d]", o, l.LogEndOffset())
	}
	l.hw = max(l.hw, o)
	return nil
}

func (l *memLog) LastEpoch() int32 {
	if len(l.epochs) == 0 {
		return -1
	}
	return l.epochs[len(l.epochs)-1].epoch
}

func (l *memLog) EndOffsetForEpoch(epoch int32) (int32, int64) {
	i := len(l.epochs) - 1
	for i >= 0 && l.epochs[i].epoch > epoch {
		i--
	}
	if i < 0 {
		return -1, -1
	}
	if i == len(l.epochs)-1 {
		return l.epochs[i].epoch, l.LogEndOffset()
	}
	return l.epochs[i].epoch, l.epochs[i+1].start
}

func (l *memLog) TruncateTo(o int64) error {
	if o < 0 || o > l.LogEndOffset() {
		return fmt.Errorf("truncate to %d outside [0, %d]", o, l.LogEndOffset())
	}
	if o < l.hw && l.cutBelowHW == "" {
		l.cutBelowHW = fmt.Sprintf("truncated to %d below the local high watermark %d", o, l.hw)
	}
	l.entries = l.entries[:o]
	l.epochs = slices.DeleteFunc(l.epochs, func(e epochStart) bool { return e.start >= o })
	l.durable = min(l.durable, o)
	l.hw = min(l.hw, o)
	return nil
}

// beginEpoch records epoch as starting at the log end, as a new leader
// does on election (so it can answer for an epoch it has not written in).
func (l *memLog) beginEpoch(epoch int32) {
	if l.LastEpoch() < epoch {
		l.epochs = append(l.epochs, epochStart{epoch, l.LogEndOffset()})
	}
}

// SetLeaderEpoch is what NewLeader calls: the epoch begins here.
func (l *memLog) SetLeaderEpoch(epoch int32) { l.beginEpoch(epoch) }

// append adds es as they are (a follower's append keeps the leader's
// offsets and epochs; a leader's carry its own epoch).
func (l *memLog) append(es ...entry) {
	for _, e := range es {
		if e.epoch > l.LastEpoch() {
			l.epochs = append(l.epochs, epochStart{e.epoch, l.LogEndOffset()})
		}
		l.entries = append(l.entries, e)
	}
	if l.sync {
		l.durable = l.LogEndOffset()
	}
}

var _ FollowerLog = (*memLog)(nil)
var _ Log = (*memLog)(nil)

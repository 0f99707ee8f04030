package folio

import (
	"os"
	"slices"
	"sync"
	"time"

	"github.com/foliolog/folio/vfs"
)

// syncRing is how many of a partition's latest fsync durations are kept for
// the percentiles in Stats.
const syncRing = 256

// syncTimes collects the durations of one partition's file fsyncs (the
// group commits of FlushSync, the seals of rolled segments). The log does
// its fsyncs itself; the Broker sees them through timedFS.
type syncTimes struct {
	onSync func(time.Duration) // reports each fsync to the Metrics hook

	// mu guards the fields below.
	mu    sync.Mutex
	count int64
	total time.Duration
	max   time.Duration
	ring  []time.Duration // the latest syncRing durations, allocated on first use
	next  int
}

func (s *syncTimes) record(d time.Duration) {
	s.mu.Lock()
	s.count++
	s.total += d
	s.max = max(s.max, d)
	if s.ring == nil {
		s.ring = make([]time.Duration, 0, syncRing)
	}
	if len(s.ring) < syncRing {
		s.ring = append(s.ring, d)
	} else {
		s.ring[s.next] = d
		s.next = (s.next + 1) % syncRing
	}
	s.mu.Unlock()
	if s.onSync != nil {
		s.onSync(d)
	}
}

// FsyncStats summarizes a partition's fsyncs since Open. The percentiles
// cover the latest 256.
type FsyncStats struct {
	Count     int64
	Mean, Max time.Duration
	P50, P99  time.Duration
}

func (s *syncTimes) stats() FsyncStats {
	if s == nil {
		return FsyncStats{}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.count == 0 {
		return FsyncStats{}
	}
	recent := slices.Clone(s.ring)
	slices.Sort(recent)
	return FsyncStats{
		Count: s.count,
		Mean:  s.total / time.Duration(s.count),
		Max:   s.max,
		P50:   recent[len(recent)/2],
		P99:   recent[min(len(recent)-1, len(recent)*99/100)],
	}
}

// timedFS is the file layer one partition's log runs on: the Broker's, with
// every file's Sync timed into a syncTimes.
type timedFS struct {
	vfs.FS
	times *syncTimes
}

func (t timedFS) OpenFile(name string, flag int, perm os.FileMode) (vfs.File, error) {
	f, err := t.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return timedFile{File: f, times: t.times}, nil
}

type timedFile struct {
	vfs.File
	times *syncTimes
}

func (f timedFile) Sync() error {
	start := time.Now()
	err := f.File.Sync()
	if err == nil {
		f.times.record(time.Since(start))
	}
	return err
}

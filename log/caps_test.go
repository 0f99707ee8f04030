package log

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/foliolog/folio/readpath"
)

// countFDs returns the process's open descriptors, or -1 where /proc is
// missing.
func countFDs() int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return -1
	}
	return len(ents)
}

// countMaps returns the process's map areas of files under dir, or -1
// where /proc is missing. (Counting them all would count the runtime's,
// which the race detector multiplies.)
func countMaps(dir string) int {
	data, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return -1
	}
	n := 0
	for _, line := range strings.Split(string(data), "\n") {
		if strings.Contains(line, dir+string(filepath.Separator)) {
			n++
		}
	}
	return n
}

// metadataTempDir returns a temporary directory for a test that creates and
// removes tens of thousands of entries: on tmpfs (/dev/shm) where there is
// one, since on a busy disk the file system's metadata journal would
// dominate the test's time; else t.TempDir().
func metadataTempDir(t *testing.T) string {
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		if dir, err := os.MkdirTemp("/dev/shm", "folio-log-test"); err == nil {
			t.Cleanup(func() { _ = os.RemoveAll(dir) })
			return dir
		}
	}
	return t.TempDir()
}

// linkDir makes to a copy of from by hard links: the test only reads the
// partitions, and writing 30,000 real copies would dominate its time.
func linkDir(t testing.TB, from, to string) {
	t.Helper()
	if err := os.MkdirAll(to, 0o755); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if err := os.Link(filepath.Join(from, e.Name()), filepath.Join(to, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
}

// TestThousandPartitionsUnderCaps opens 1,000 partitions of 10 segments each
// with one shared ResourceCaps and reads them at random, from several
// goroutines: segments, the active ones included, are loaded on demand and
// closed again so that never more than the cap hold files and mappings.
// Without the cap the 10,000 segments would need about 30,000 descriptors,
// above this process's limit; even the 1,000 active ones alone would pass
// a limit of 1024.
func TestThousandPartitionsUnderCaps(t *testing.T) {
	const (
		partitions = 1000
		segments   = 10
		maxOpen    = 64
	)
	seed := testSeed(t)
	root := metadataTempDir(t)
	o := &Options{SegmentBytes: 600, IndexIntervalBytes: 128, FlushPolicy: FlushNone, MaxIndexBytes: 4096}
	tmpl := filepath.Join(root, "template")
	l, err := Open(nil, tmpl, o, State{})
	if err != nil {
		t.Fatal(err)
	}
	var want []rec
	for l.Stats().Segments < segments {
		want = append(want, appendN(t, l, "c", 1, 2, 100)...)
	}
	// appendN numbers each call from 0; fix the offsets to the log's.
	for i := range want {
		want[i].offset = int64(i)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	st := l.Checkpoint()
	for p := 0; p < partitions; p++ {
		linkDir(t, tmpl, filepath.Join(root, fmt.Sprintf("t-%d", p)))
	}

	fdsBefore, mapsBefore := countFDs(), countMaps(root)
	caps := NewResourceCaps(maxOpen)
	o.Caps = caps
	logs := make([]*Log, partitions)
	for p := range logs {
		if logs[p], err = Open(nil, filepath.Join(root, fmt.Sprintf("t-%d", p)), o, st); err != nil {
			t.Fatal(err)
		}
	}
	defer func() {
		for _, l := range logs {
			if err := l.Close(); err != nil {
				t.Error(err)
			}
		}
	}()
	// Open loads each log's last segment (its end comes from it), under
	// the cap.
	if s := caps.Stats(); s.OpenSegments > maxOpen {
		t.Fatalf("%d segments open right after Open, cap %d", s.OpenSegments, maxOpen)
	}

	end := logs[0].LogEndOffset()
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			rng := newRand(seed + uint64(g))
			for i := 0; i < 600; i++ {
				l := logs[rng.IntN(partitions)]
				off := rng.Int64N(end)
				v, err := l.Read(off, 1)
				if err != nil {
					t.Error(err)
					return
				}
				_, recs, err := decodeView(v, off)
				v.Release()
				if err != nil || len(recs) == 0 || recs[0] != want[off] {
					t.Errorf("read %s at %d: %v %+v", l.Dir(), off, err, recs)
					return
				}
				// Four readers pin at most four segments above the cap.
				if n := caps.Stats().OpenSegments; n > maxOpen+4 {
					t.Errorf("%d segments open, cap %d", n, maxOpen)
					return
				}
			}
		}(g)
	}
	wg.Wait()
	// Not Stats: its size of the last segment loads that one under the
	// caps, which would move the counts while they are summed.
	var perLog int64
	for _, l := range logs {
		perLog += l.openSealed.Load()
	}
	s := caps.Stats()
	t.Logf("caps %+v; descriptors %d -> %d, map areas %d -> %d; readpath %+v",
		s, fdsBefore, countFDs(), mapsBefore, countMaps(root), readpath.ReadCounters())
	if s.OpenSegments > maxOpen || perLog != int64(s.OpenSegments) || s.Evictions == 0 {
		t.Fatalf("after the reads: %+v, per-log sum %d", s, perLog)
	}
	// What is open is the cap's segments, active or sealed: each holds
	// its .log (two handles while active) and at most its two index files.
	if fds := countFDs(); fdsBefore >= 0 && fds-fdsBefore > DescriptorsPerSegment*maxOpen+16 {
		t.Fatalf("%d descriptors opened for %d partitions under a cap of %d", fds-fdsBefore, partitions, maxOpen)
	}
	if maps := countMaps(root); mapsBefore >= 0 && maps-mapsBefore > 3*maxOpen {
		t.Fatalf("%d map areas for %d partitions under a cap of %d", maps-mapsBefore, partitions, maxOpen)
	}
	// An evicted segment reloads on its next read.
	v, err := logs[0].Read(0, 1)
	if err != nil {
		t.Fatal(err)
	}
	v.Release()
}

// fakeSegment stands in for a sealed segment under the caps: a read loads
// its files, CloseIdle drops them.
type fakeSegment struct {
	capEntry
	loaded atomic.Bool
	closes atomic.Int64
}

func (f *fakeSegment) CloseIdle() error {
	f.loaded.Store(false)
	f.closes.Add(1)
	return nil
}

func newFakeSegments(n int, owner *atomic.Int64) []*fakeSegment {
	segs := make([]*fakeSegment, n)
	for i := range segs {
		f := &fakeSegment{}
		f.capEntry = capEntry{closer: f, owner: owner}
		segs[i] = f
	}
	return segs
}

// read is what Log.Read does to a segment under the caps.
func (f *fakeSegment) read(c *ResourceCaps) {
	c.acquire(&f.capEntry)
	f.loaded.Store(true)
	c.release(&f.capEntry)
}

// TestCapsClock: past the cap, a sweep closes idle segments that were not
// read since the sweep before, never the one just read, never one being
// read; the cap holds again once that read ends.
func TestCapsClock(t *testing.T) {
	var owner atomic.Int64
	c := NewResourceCaps(3)
	segs := newFakeSegments(6, &owner)
	for _, f := range segs[:4] {
		c.setEligible(&f.capEntry)
		f.read(c)
	}
	// The fourth read took the count past the cap: one segment went, and
	// the sweep cleared every other reference bit on its way.
	if s := c.Stats(); s.OpenSegments != 3 || s.Evictions != 1 || owner.Load() != 3 {
		t.Fatalf("after four reads under a cap of 3: %+v, owner count %d", s, owner.Load())
	}
	segs[2].read(c)
	c.add(&segs[4].capEntry) // sealed with its files: counts open at once
	if segs[2].closes.Load() != 0 || segs[4].closes.Load() != 0 {
		t.Fatalf("closed the segment just read (%d) or just added (%d)", segs[2].closes.Load(), segs[4].closes.Load())
	}
	if s := c.Stats(); s.OpenSegments != 3 || s.Evictions != 2 {
		t.Fatalf("after the add: %+v", s)
	}

	// Pin every open segment: a read of another one exceeds the cap while
	// it lasts; once it ends, that segment is the only idle one, so it is
	// the one to go, and nothing is closed under its reader.
	var open []*fakeSegment
	closed := make(map[*fakeSegment]int64)
	for _, f := range segs {
		if f.capEntry.counted.Load() {
			open = append(open, f)
			closed[f] = f.closes.Load()
			c.acquire(&f.capEntry)
		}
	}
	before := c.Stats().Evictions
	c.setEligible(&segs[5].capEntry)
	c.acquire(&segs[5].capEntry)
	if s := c.Stats(); s.OpenSegments != 4 {
		t.Fatalf("while four are being read: %+v", s)
	}
	c.release(&segs[5].capEntry)
	if s := c.Stats(); s.OpenSegments != 3 || s.Evictions != before+1 || segs[5].closes.Load() != 1 {
		t.Fatalf("with three pinned: %+v, the idle one closed %d times", s, segs[5].closes.Load())
	}
	for _, f := range open {
		if f.closes.Load() != closed[f] {
			t.Fatal("a segment was closed while being read")
		}
	}
	for _, f := range open {
		c.release(&f.capEntry)
	}
	if s := c.Stats(); s.OpenSegments > 3 {
		t.Fatalf("the cap was not restored when the reads ended: %+v", s)
	}
	for _, f := range segs {
		c.forget(&f.capEntry)
	}
	if s := c.Stats(); s.OpenSegments != 0 || owner.Load() != 0 {
		t.Fatalf("after forgetting every segment: %+v, owner count %d", s, owner.Load())
	}
}

// TestCapsConcurrentReads races reads, which take no lock on an open
// segment, against the sweeps they trigger. Once they stop, every segment
// holding files is counted open (an eviction never loses one), the counts
// agree, and the cap holds.
func TestCapsConcurrentReads(t *testing.T) {
	seed := testSeed(t)
	var owner atomic.Int64
	const maxOpen = 4
	c := NewResourceCaps(maxOpen)
	segs := newFakeSegments(16, &owner)
	for _, f := range segs {
		c.setEligible(&f.capEntry)
	}
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			rng := newRand(seed + uint64(g))
			for i := 0; i < 20000; i++ {
				// Mostly a few hot segments, sometimes a cold one.
				n := 3
				if rng.IntN(8) == 0 {
					n = len(segs)
				}
				segs[rng.IntN(n)].read(c)
			}
		}(g)
	}
	wg.Wait()
	c.ringMu.Lock()
	ringLen := c.ring.Len()
	c.ringMu.Unlock()
	s := c.Stats()
	if s.OpenSegments > maxOpen || int64(ringLen) != c.open.Load() || owner.Load() != c.open.Load() || s.Evictions == 0 {
		t.Fatalf("%+v: ring %d, owner count %d", s, ringLen, owner.Load())
	}
	for i, f := range segs {
		if f.loaded.Load() && !f.capEntry.counted.Load() {
			t.Errorf("segment %d holds files but is not counted open", i)
		}
		if f.pins.Load() != 0 {
			t.Errorf("segment %d has %d pins left", i, f.pins.Load())
		}
	}
	t.Logf("%+v", s)
}

// BenchmarkCapsRead is the caps' share of a read of an open sealed
// segment, from parallel readers of several logs sharing the caps.
func BenchmarkCapsRead(b *testing.B) {
	var owner atomic.Int64
	c := NewResourceCaps(0)
	segs := newFakeSegments(64, &owner)
	for _, f := range segs {
		c.add(&f.capEntry)
	}
	var next atomic.Int64
	b.RunParallel(func(pb *testing.PB) {
		f := segs[next.Add(1)%int64(len(segs))]
		for pb.Next() {
			c.acquire(&f.capEntry)
			c.release(&f.capEntry)
		}
	})
}

// TestActiveSegmentsUnderCaps: many logs that each take an append now and
// then, sharing caps far below their number, hold no more than the cap's
// segments open: active segments are closed when idle and reopen at the
// next append or read, with their append state, across rolls (seals of
// closed segments), a clean close and a reopen. Every record reads back.
func TestActiveSegmentsUnderCaps(t *testing.T) {
	const (
		logsN   = 200
		rounds  = 6
		maxOpen = 12
	)
	rng := newRand(testSeed(t))
	root := metadataTempDir(t)
	caps := NewResourceCaps(maxOpen)
	o := &Options{SegmentBytes: 900, IndexIntervalBytes: 128, Caps: caps}
	dirOf := func(i int) string { return filepath.Join(root, fmt.Sprintf("p-%d", i)) }
	fdsBefore := countFDs()
	logs := make([]*Log, logsN)
	var err error
	for i := range logs {
		if logs[i], err = Open(nil, dirOf(i), o, State{}); err != nil {
			t.Fatal(err)
		}
	}
	fdLimit := DescriptorsPerSegment*(maxOpen+1) + 16
	checkFDs := func(when string) {
		t.Helper()
		if s := caps.Stats(); s.OpenSegments > maxOpen+1 {
			t.Fatalf("%s: %d segments open, cap %d", when, s.OpenSegments, maxOpen)
		}
		if fds := countFDs(); fdsBefore >= 0 && fds-fdsBefore > fdLimit {
			t.Fatalf("%s: %d descriptors opened by %d logs under a cap of %d (limit %d)", when, fds-fdsBefore, logsN, maxOpen, fdLimit)
		}
	}
	checkFDs("after Open")
	want := make([][]rec, logsN)
	for r := range rounds {
		for _, i := range rng.Perm(logsN) {
			want[i] = append(want[i], appendN(t, logs[i], fmt.Sprintf("r%d", r), 1, 2, 100)...)
			checkFDs(fmt.Sprintf("round %d, log %d", r, i))
		}
	}
	for i, l := range logs {
		sameRecs(t, readAll(t, l, 0), want[i])
		checkFDs(fmt.Sprintf("reading log %d", i))
	}
	states := make([]State, logsN)
	for i, l := range logs {
		if l.Stats().Rolls == 0 {
			t.Fatalf("log %d never rolled; the test wants seals of idle-closed segments", i)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		states[i] = l.Checkpoint()
		if !states[i].Clean {
			t.Fatalf("log %d: close was not clean", i)
		}
	}
	s := caps.Stats()
	t.Logf("caps %+v; descriptors %d -> %d after Close", s, fdsBefore, countFDs())
	if s.OpenSegments != 0 || s.Evictions == 0 {
		t.Fatalf("after Close: %+v", s)
	}
	for i := range logs {
		if logs[i], err = Open(nil, dirOf(i), o, states[i]); err != nil {
			t.Fatal(err)
		}
		checkFDs(fmt.Sprintf("reopening log %d", i))
	}
	for _, i := range rng.Perm(logsN) {
		want[i] = append(want[i], appendN(t, logs[i], "after", 1, 1, 50)...)
		checkFDs(fmt.Sprintf("appending to reopened log %d", i))
	}
	for i, l := range logs {
		sameRecs(t, readAll(t, l, 0), want[i])
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestActiveSegmentsUnderCapsConcurrent: appenders and readers of many logs
// at once, under caps far below the number of logs, so that active
// segments are closed idle and reopened while other goroutines append to
// and read them (and group commits fsync them): every record reads back,
// and the race detector watches the reopen paths.
func TestActiveSegmentsUnderCapsConcurrent(t *testing.T) {
	const (
		logsN   = 48
		workers = 6
		appends = 40
		maxOpen = 5
	)
	seed := testSeed(t)
	root := metadataTempDir(t)
	caps := NewResourceCaps(maxOpen)
	o := &Options{SegmentBytes: 1200, IndexIntervalBytes: 128, Caps: caps}
	logs := make([]*Log, logsN)
	for i := range logs {
		var err error
		if logs[i], err = Open(nil, filepath.Join(root, fmt.Sprintf("p-%d", i)), o, State{}); err != nil {
			t.Fatal(err)
		}
	}
	defer func() {
		for _, l := range logs {
			if err := l.Close(); err != nil {
				t.Error(err)
			}
		}
	}()
	var wg sync.WaitGroup
	errc := make(chan error, workers*2)
	for w := range workers {
		// Each worker appends to its own logs and reads everyone's.
		wg.Add(2)
		go func() {
			defer wg.Done()
			rng := newRand(seed + uint64(w))
			for n := range appends {
				i := w + workers*rng.IntN(logsN/workers)
				if _, _, err := logs[i].Append(makeBatch(t, "c", int64(n), 2, 80, 1000)); err != nil {
					errc <- fmt.Errorf("append to log %d: %w", i, err)
					return
				}
			}
		}()
		go func() {
			defer wg.Done()
			rng := newRand(seed + 1000 + uint64(w))
			for range appends {
				l := logs[rng.IntN(logsN)]
				hw := l.HighWatermark()
				if hw == 0 {
					continue
				}
				off := rng.Int64N(hw)
				v, err := l.Read(off, 1)
				if err != nil {
					errc <- fmt.Errorf("read %s at %d: %w", l.Dir(), off, err)
					return
				}
				_, recs, err := decodeView(v, off)
				v.Release()
				if err != nil || len(recs) == 0 || recs[0].offset != off {
					errc <- fmt.Errorf("read %s at %d: %v %+v", l.Dir(), off, err, recs)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	total := 0
	for _, l := range logs {
		recs := readAll(t, l, 0)
		for j, r := range recs {
			if r.offset != int64(j) {
				t.Fatalf("%s: record %d at offset %d", l.Dir(), j, r.offset)
			}
		}
		if int64(len(recs)) != l.LogEndOffset() {
			t.Fatalf("%s: %d records read, log end %d", l.Dir(), len(recs), l.LogEndOffset())
		}
		total += len(recs)
	}
	if total != workers*appends*2 {
		t.Fatalf("%d records in all, want %d", total, workers*appends*2)
	}
	t.Logf("caps %+v", caps.Stats())
	if caps.Stats().Evictions == 0 {
		t.Fatal("no evictions: the test did not exercise idle closes")
	}
}

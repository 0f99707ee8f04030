package segment

import (
	"bytes"
	"math/rand"
	"testing"

	"github.com/foliolog/folio/index"
)

// sealedSegment writes n generated batches, seals and closes the segment,
// and returns its files and model.
func sealedSegment(t testing.TB, rng *rand.Rand, n int, opts *Options) (crashFiles, *model) {
	t.Helper()
	dir := segDir(t)
	s, err := Create(testFS, dir, 0, opts)
	if err != nil {
		t.Fatal(err)
	}
	m := &model{}
	fill(t, s, m, newGen(t, rng, 0), n)
	if err := s.Seal(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return readSegmentFiles(t, dir, 0), m
}

// reopenAndCheck writes c to a fresh directory and checks every lookup of
// the reopened (not recovered) segment against m; it returns the rebuild
// count.
func reopenAndCheck(t testing.TB, c crashFiles, m *model, opts *Options, activate bool) int64 {
	t.Helper()
	dir := segDir(t)
	writeSegmentFiles(t, dir, 0, c)
	s, err := Open(testFS, dir, 0, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if activate {
		if err := s.Activate(); err != nil {
			t.Fatal(err)
		}
	}
	checkAgainst(t, s, m)
	return s.IndexRebuilds()
}

func TestIndexGarbageReadsUnchanged(t *testing.T) {
	rng := testRand(t)
	opts := &Options{IndexIntervalBytes: 300}
	c, m := sealedSegment(t, rng, 120, opts)
	if len(c.off) < 10*index.OffsetEntrySize || len(c.time) < 5*index.TimeEntrySize {
		t.Fatalf("indexes too small to damage: %d, %d bytes", len(c.off), len(c.time))
	}
	if n := reopenAndCheck(t, c, m, opts, false); n != 0 {
		t.Fatalf("intact segment rebuilt %d times", n)
	}
	var rebuilt int64
	for trial := range 120 {
		cc := c
		which := &cc.off
		if trial%2 == 1 {
			which = &cc.time
		}
		orig := *which
		*which = bytes.Clone(orig)
		switch trial % 6 {
		case 0, 1: // a random run of garbage inside
			p := rng.Intn(len(orig))
			rng.Read((*which)[p:min(len(orig), p+1+rng.Intn(24))])
		case 2, 3: // the whole file is garbage, possibly of another size
			*which = make([]byte, rng.Intn(2*len(orig)))
			rng.Read(*which)
		case 4: // one entry copied over another (plausible but wrong)
			es := index.OffsetEntrySize
			if which == &cc.time {
				es = index.TimeEntrySize
			}
			n := len(orig) / es
			i, j := rng.Intn(n), rng.Intn(n)
			copy((*which)[i*es:(i+1)*es], orig[j*es:(j+1)*es])
		case 5: // zeros, as a crash leaves in allocated space
			p := rng.Intn(len(orig))
			clear((*which)[p:])
		}
		rebuilt += reopenAndCheck(t, cc, m, opts, trial%3 == 0)
	}
	if rebuilt == 0 {
		t.Fatal("no damaged index was ever rebuilt")
	}
}

func TestIndexTruncationReadsUnchanged(t *testing.T) {
	opts := &Options{IndexIntervalBytes: 300}
	c, m := sealedSegment(t, testRand(t), 80, opts)
	for _, which := range []string{"index", "timeindex"} {
		orig := c.off
		if which == "timeindex" {
			orig = c.time
		}
		for n := 0; n < len(orig); n++ {
			cc := c
			if which == "index" {
				cc.off = orig[:n]
			} else {
				cc.time = orig[:n]
				if n%index.TimeEntrySize == 0 {
					// An entry-aligned cut passes every check (see the
					// package caveats): lookups must still agree, but
					// MaxTimestamp may miss the dropped entries.
					checkTimeCut(t, cc, m, opts)
					continue
				}
			}
			reopenAndCheck(t, cc, m, opts, n%5 == 0)
		}
	}
}

// checkTimeCut checks a segment whose time index was cut at an entry
// boundary: every lookup agrees with the model, and MaxTimestamp is at
// least the kept entries' and the tail's maximum and at most the true one.
func checkTimeCut(t testing.TB, c crashFiles, m *model, opts *Options) {
	t.Helper()
	dir := segDir(t)
	writeSegmentFiles(t, dir, 0, c)
	s, err := Open(testFS, dir, 0, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got, err := s.MaxTimestamp()
	if err != nil {
		t.Fatal(err)
	}
	if got > m.maxTs() {
		t.Fatalf("MaxTimestamp %d above the true maximum %d", got, m.maxTs())
	}
	for off := m.base - 1; off <= m.next(); off++ {
		pos, err := s.FindPosition(off)
		if i := m.find(off); i >= 0 && (err != nil || pos != m.batches[i].pos) {
			t.Fatalf("FindPosition(%d) = %d, %v", off, pos, err)
		}
	}
	for _, b := range m.batches {
		for _, ts := range []int64{b.h().MaxTimestamp() - 1, b.h().MaxTimestamp(), b.h().MaxTimestamp() + 1} {
			o, ok, err := s.OffsetForTime(ts)
			wo, wok := m.offsetForTime(ts)
			if err != nil || ok != wok || o != wo {
				t.Fatalf("OffsetForTime(%d) = %d, %v, %v; want %d, %v", ts, o, ok, err, wo, wok)
			}
		}
	}
}

func TestMissingIndexesRebuilt(t *testing.T) {
	opts := &Options{IndexIntervalBytes: 300}
	c, m := sealedSegment(t, testRand(t), 50, opts)
	for _, cc := range []crashFiles{{log: c.log, time: c.time}, {log: c.log, off: c.off}, {log: c.log}} {
		if n := reopenAndCheck(t, cc, m, opts, false); n != 1 {
			t.Fatalf("missing index: %d rebuilds, want 1", n)
		}
	}
}

// A .log changed behind the segment's back (here: its last batches
// swapped for others of another size) makes index entries point at
// nothing; lookups detect it, rebuild, and answer from the log.
func TestEntryThatMissesTheLogIsRebuilt(t *testing.T) {
	rng := testRand(t)
	opts := &Options{IndexIntervalBytes: 300}
	c, m := sealedSegment(t, rng, 60, opts)
	// Rewrite the second half of the log with different batches.
	half := m.batches[len(m.batches)/2]
	m2 := &model{}
	for _, b := range m.batches[:len(m.batches)/2] {
		m2.add(b.bytes)
	}
	g := newGen(t, rng, half.h().BaseOffset())
	g.clock = 1_800_000_000_000
	for range 30 {
		m2.add(g.batch())
	}
	cc := c
	cc.log = nil
	for _, b := range m2.batches {
		cc.log = append(cc.log, b.bytes...)
	}
	if n := reopenAndCheck(t, cc, m2, opts, false); n == 0 {
		t.Fatal("stale indexes were not rebuilt")
	}
}

// An empty time index beside offset entries (the file lost or emptied)
// passes the open check; the segment's largest timestamp, which may lie
// before the last offset entry, must still come out right (found by
// TestIndexGarbageReadsUnchanged with seed 1796014017971235596).
func TestEmptyTimeIndexKeepsMaxTimestamp(t *testing.T) {
	opts := &Options{IndexIntervalBytes: 300}
	for seed := int64(1); seed <= 20; seed++ {
		c, m := sealedSegment(t, rand.New(rand.NewSource(seed)), 120, opts)
		c.time = []byte{} // an empty file, not a missing one
		reopenAndCheck(t, c, m, opts, seed%2 == 0)
	}
}

package log

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/foliolog/folio/internal/readpath"
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

// countMaps returns the process's map areas, or -1 where /proc is missing.
func countMaps() int {
	data, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return -1
	}
	return strings.Count(string(data), "\n")
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
// goroutines: sealed segments are loaded on demand and closed again so that
// never more than the cap hold files and mappings. Without the cap the
// 9,000 sealed segments would need about 27,000 descriptors, above this
// process's limit.
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

	fdsBefore, mapsBefore := countFDs(), countMaps()
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
	if s := caps.Stats(); s.OpenSegments != 0 {
		t.Fatalf("%d sealed segments open right after Open", s.OpenSegments)
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
					t.Errorf("%d sealed segments open, cap %d", n, maxOpen)
					return
				}
			}
		}(g)
	}
	wg.Wait()
	s := caps.Stats()
	var perLog int64
	for _, l := range logs {
		perLog += l.Stats().OpenSealedSegments
	}
	t.Logf("caps %+v; descriptors %d -> %d, map areas %d -> %d; readpath %+v",
		s, fdsBefore, countFDs(), mapsBefore, countMaps(), readpath.ReadCounters())
	if s.OpenSegments > maxOpen || perLog != int64(s.OpenSegments) || s.Evictions == 0 {
		t.Fatalf("after the reads: %+v, per-log sum %d", s, perLog)
	}
	// What is open is the active segment of each partition plus the cap:
	// each holds its .log and at most its two index files.
	if fds := countFDs(); fdsBefore >= 0 && fds-fdsBefore > 3*(partitions+maxOpen)+16 {
		t.Fatalf("%d descriptors opened for %d partitions under a cap of %d", fds-fdsBefore, partitions, maxOpen)
	}
	if maps := countMaps(); mapsBefore >= 0 && maps-mapsBefore > 3*(partitions+maxOpen)+64 {
		t.Fatalf("%d map areas for %d partitions under a cap of %d", maps-mapsBefore, partitions, maxOpen)
	}
	// An evicted segment reloads on its next read.
	v, err := logs[0].Read(0, 1)
	if err != nil {
		t.Fatal(err)
	}
	v.Release()
}

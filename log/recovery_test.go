package log

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/foliolog/folio/segment"
	"github.com/foliolog/folio/vfs/faultfs"
)

// buildLog writes n batches of 2 records (about 300 bytes each) into a new
// log of ~1 KiB segments, closes it, and returns the records, the segment
// bases and the clean checkpoint.
func buildLog(t testing.TB, dir string, n int) ([]rec, []int64, State) {
	t.Helper()
	l, err := Open(nil, dir, &Options{SegmentBytes: 1024, FlushPolicy: FlushNone, IndexIntervalBytes: 256}, State{})
	if err != nil {
		t.Fatal(err)
	}
	want := appendN(t, l, "b", n, 2, 120)
	var bases []int64
	l.snap.Load().segs.Ascend(func(e *segEntry) bool {
		bases = append(bases, e.base)
		return true
	})
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return want, bases, l.Checkpoint()
}

// openRecorder is a FaultFS hook that records the files opened or created.
type openRecorder struct {
	mu     sync.Mutex
	opened []string
}

func (r *openRecorder) hook(op faultfs.Op) error {
	if op.Kind == faultfs.OpOpen || op.Kind == faultfs.OpCreate {
		r.mu.Lock()
		r.opened = append(r.opened, filepath.Base(op.Path))
		r.mu.Unlock()
	}
	return nil
}

func (r *openRecorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.opened
	r.opened = nil
	return out
}

// TestCleanOpenIsLazy: after a clean shutdown, Open touches only the last
// segment; every other one holds no descriptor or mapping until read.
func TestCleanOpenIsLazy(t *testing.T) {
	dir := t.TempDir()
	want, bases, st := buildLog(t, dir, 100)
	if len(bases) < 20 {
		t.Fatalf("only %d segments", len(bases))
	}
	fsys := faultfs.New()
	rec := &openRecorder{}
	fsys.SetHook(rec.hook)
	o := &Options{SegmentBytes: 1024, FlushPolicy: FlushNone}
	l := openT(t, fsys, dir, o, st)
	lastPrefix := segment.FileName(bases[len(bases)-1], "")
	for _, name := range rec.take() {
		if !strings.HasPrefix(name, lastPrefix) {
			t.Fatalf("clean open opened %s, a sealed segment", name)
		}
	}
	loaded := 0
	l.snap.Load().segs.Ascend(func(e *segEntry) bool {
		if e.seg.Loaded() {
			loaded++
		}
		return true
	})
	// The last one is loaded, and counted by the caps like any other.
	if loaded != 1 || l.Stats().OpenSealedSegments != 1 {
		t.Fatalf("%d segments loaded, %d counted open after a clean open; want only the last", loaded, l.Stats().OpenSealedSegments)
	}
	// First use loads, and counts, one more.
	v, err := l.Read(bases[3], 1)
	if err != nil {
		t.Fatal(err)
	}
	v.Release()
	if l.Stats().OpenSealedSegments != 2 {
		t.Fatalf("%d segments counted open after one read, want 2", l.Stats().OpenSealedSegments)
	}
	sameRecs(t, readAll(t, l, 0), want)
}

// TestUncleanOpenScansFromRecoveryPoint: only the segment holding the
// recovery point and those after it are scanned; the ones below are not
// even opened.
func TestUncleanOpenScansFromRecoveryPoint(t *testing.T) {
	dir := t.TempDir()
	want, bases, st := buildLog(t, dir, 60)
	k := len(bases) / 2
	st.Clean = false
	st.RecoveryPoint = bases[k] + 1 // inside segment k
	fsys := faultfs.New()
	rec := &openRecorder{}
	fsys.SetHook(rec.hook)
	l := openT(t, fsys, dir, &Options{SegmentBytes: 1024, FlushPolicy: FlushNone}, st)
	if r := l.Recovery(); r.Clean || r.SegmentsScanned != len(bases)-k || r.BytesCut != 0 {
		t.Fatalf("recovery %+v, want %d segments scanned", r, len(bases)-k)
	}
	for _, name := range rec.take() {
		base, _, ok := segment.ParseFileName(name)
		if ok && base < bases[k] {
			t.Fatalf("recovery opened %s, below the recovery point %d", name, st.RecoveryPoint)
		}
	}
	sameRecs(t, readAll(t, l, 0), want)
	if l.DurableEndOffset() != want[len(want)-1].offset+1 {
		t.Fatalf("recovery point after recovery %d", l.DurableEndOffset())
	}
}

// TestRecoveryCutsAndRemovesLater: a corrupt batch inside a scanned segment
// cuts it there and removes every later segment.
func TestRecoveryCutsAndRemovesLater(t *testing.T) {
	dir := t.TempDir()
	want, bases, st := buildLog(t, dir, 60)
	k := 4
	path := segment.LogPath(dir, bases[k])
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// Corrupt the last byte of the second batch of segment k.
	second := int(data[8])<<24 | int(data[9])<<16 | int(data[10])<<8 | int(data[11]) + 12
	size2 := int(data[second+8])<<24 | int(data[second+9])<<16 | int(data[second+10])<<8 | int(data[second+11]) + 12
	data[second+size2-1] ^= 0x55
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	st.Clean = false
	st.RecoveryPoint = 0
	l := openT(t, nil, dir, &Options{SegmentBytes: 1024, FlushPolicy: FlushNone}, st)
	r := l.Recovery()
	if r.BytesCut != int64(len(data)-second) || r.SegmentsRemoved != len(bases)-k-1 {
		t.Fatalf("recovery %+v, want %d bytes cut and %d segments removed", r, len(data)-second, len(bases)-k-1)
	}
	end := bases[k] + 2 // the first batch of segment k stays
	if l.LogEndOffset() != end {
		t.Fatalf("log end %d, want %d", l.LogEndOffset(), end)
	}
	sameRecs(t, readAll(t, l, 0), want[:end])
	if n := len(segmentFiles(t, dir, ".log")); n != k+1 {
		t.Fatalf("%d .log files, want %d", n, k+1)
	}
	if first, _, err := l.Append(makeBatch(t, "n", 0, 1, 10, 1)); err != nil || first != end {
		t.Fatalf("append after recovery: %d %v", first, err)
	}
}

// TestRecoveryRemovesSegmentsAfterAGap: a scanned segment that lost its
// tail without a torn batch (a power cut can leave exactly that) leaves a
// hole before the next one, so everything after it goes.
func TestRecoveryRemovesSegmentsAfterAGap(t *testing.T) {
	dir := t.TempDir()
	want, bases, st := buildLog(t, dir, 60)
	k := 3
	path := segment.LogPath(dir, bases[k])
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	first := int(data[8])<<24 | int(data[9])<<16 | int(data[10])<<8 | int(data[11]) + 12
	if err := os.Truncate(path, int64(first)); err != nil {
		t.Fatal(err)
	}
	st.Clean = false
	st.RecoveryPoint = bases[k-1]
	l := openT(t, nil, dir, &Options{SegmentBytes: 1024, FlushPolicy: FlushNone}, st)
	if r := l.Recovery(); r.BytesCut != 0 || r.SegmentsRemoved != len(bases)-k-1 {
		t.Fatalf("recovery %+v, want %d segments removed", r, len(bases)-k-1)
	}
	sameRecs(t, readAll(t, l, 0), want[:bases[k]+2])
}

// TestLeftoverFiles resolves what a crash leaves, by Kafka's rules.
func TestLeftoverFiles(t *testing.T) {
	dir := t.TempDir()
	want, bases, st := buildLog(t, dir, 40)
	write := func(name string, data []byte) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	read := func(base int64) []byte {
		t.Helper()
		data, err := os.ReadFile(segment.LogPath(dir, base))
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	// A complete swap of segments 2 and 3 merged, with segment 3's first
	// batch compacted away.
	seg3 := read(bases[3])
	firstOf3 := int(seg3[8])<<24 | int(seg3[9])<<16 | int(seg3[10])<<8 | int(seg3[11]) + 12
	swap := append(read(bases[2]), seg3[firstOf3:]...)
	write(segment.FileName(bases[2], ".log.swap"), swap)
	write(segment.FileName(bases[2], ".index.swap"), []byte("junk"))
	// An unfinished split: a .cleaned at segment 6 voids the swap at 7.
	write(segment.FileName(bases[6], ".log.cleaned"), []byte("partial"))
	write(segment.FileName(bases[7], ".log.swap"), []byte("not a complete swap"))
	// A deletion that did not finish, an orphaned index, a truncation copy.
	write(segment.FileName(bases[len(bases)-1]+1000, ".log.deleted"), []byte("gone"))
	write(segment.FileName(bases[len(bases)-1]+1000, ".index.deleted"), []byte("gone"))
	write(segment.FileName(bases[len(bases)-1]+2000, ".index"), make([]byte, 16))
	write(segment.FileName(bases[5], ".log.truncate"), read(bases[5])[:10])
	write("unrelated.txt", []byte("not ours"))

	st.Clean = false
	st.RecoveryPoint = 0
	l := openT(t, nil, dir, &Options{SegmentBytes: 1024, FlushPolicy: FlushNone}, st)
	r := l.Recovery()
	slices.Sort(r.FilesRemoved)
	t.Logf("removed %v", r.FilesRemoved)
	var left []string
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		name := e.Name()
		if strings.Contains(name, ".swap") || strings.Contains(name, ".cleaned") || strings.Contains(name, ".deleted") || strings.Contains(name, ".truncate") {
			left = append(left, name)
		}
	}
	if len(left) > 0 {
		t.Fatalf("leftovers not resolved: %v", left)
	}
	if _, err := os.Stat(filepath.Join(dir, segment.FileName(bases[len(bases)-1]+2000, ".index"))); !os.IsNotExist(err) {
		t.Fatalf("orphaned index kept: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "unrelated.txt")); err != nil {
		t.Fatalf("a file that is not the log's was touched: %v", err)
	}
	if _, err := os.Stat(segment.LogPath(dir, bases[3])); !os.IsNotExist(err) {
		t.Fatalf("segment replaced by the swap kept: %v", err)
	}
	// The merged segment replaced 2 and 3: segment 3's first batch is gone.
	var expect []rec
	for _, w := range want {
		if w.offset < bases[3] || w.offset >= bases[3]+2 {
			expect = append(expect, w)
		}
	}
	sameRecs(t, readAll(t, l, 0), expect)
}

// TestStartBeyondSurvivingEnd: a checkpointed log start beyond what
// survived (records lost after DeleteRecordsBefore passed them) restarts the
// log empty there rather than serving a range below its start.
func TestStartBeyondSurvivingEnd(t *testing.T) {
	dir := t.TempDir()
	_, _, st := buildLog(t, dir, 10)
	st.LogStartOffset = 500
	st.RecoveryPoint = 600
	st.Clean = false
	l := openT(t, nil, dir, &Options{SegmentBytes: 1024}, st)
	if l.LogStartOffset() != 500 || l.LogEndOffset() != 500 || l.Stats().Segments != 1 {
		t.Fatalf("start %d end %d segments %d", l.LogStartOffset(), l.LogEndOffset(), l.Stats().Segments)
	}
	if l.Checkpoint().RecoveryPoint != 500 {
		t.Fatalf("recovery point %d beyond the end", l.Checkpoint().RecoveryPoint)
	}
}

// TestCorruptLastSegmentOnCleanOpen: a clean checkpoint does not make Open
// refuse a last segment that is nonetheless torn; it recovers it.
func TestCorruptLastSegmentOnCleanOpen(t *testing.T) {
	dir := t.TempDir()
	want, bases, st := buildLog(t, dir, 20)
	path := segment.LogPath(dir, bases[len(bases)-1])
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	// A torn tail the indexes do not know about: garbage after the end.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("torn tail bytes")); err != nil {
		t.Fatal(err)
	}
	f.Close()
	l := openT(t, nil, dir, &Options{SegmentBytes: 1024}, st)
	sameRecs(t, readAll(t, l, 0), want)
	if first, _, err := l.Append(makeBatch(t, "n", 0, 1, 10, 1)); err != nil || first != int64(len(want)) {
		t.Fatalf("append: %d %v", first, err)
	}
	t.Logf("recovery %+v (segment was %d bytes)", l.Recovery(), fi.Size())
}

// TestCorruptionIsOneClass: bad bytes found in a trusted segment (below the
// recovery point, so not scanned at open) surface from Read as an error
// matching ErrCorrupt, with the file named, and the log stays usable.
func TestCorruptionIsOneClass(t *testing.T) {
	dir := t.TempDir()
	_, bases, st := buildLog(t, dir, 30)
	path := segment.LogPath(dir, bases[2])
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	second := int(data[8])<<24 | int(data[9])<<16 | int(data[10])<<8 | int(data[11]) + 12
	data[second+16] = 7 // the second batch's magic byte
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	l := openT(t, nil, dir, &Options{SegmentBytes: 1024}, st)
	_, err = l.Read(bases[2]+2, 100)
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), filepath.Base(path)) {
		t.Fatalf("read of a corrupt batch: %v", err)
	}
	if _, err := l.Read(bases[3], 100); err != nil {
		t.Fatalf("read of an intact segment after it: %v", err)
	}
}

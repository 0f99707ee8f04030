package log

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/foliolog/folio/errs"
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
	bases := segBases(l)
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

// TestCleanOpenIsLazy: after a clean shutdown, Open writes nothing, and
// reads of a sealed segment only its tail, to check the chain of offsets
// (see checkChain), and closes it again: afterwards only the last segment
// holds descriptors or mappings, and every other one is loaded on first
// read.
func TestCleanOpenIsLazy(t *testing.T) {
	dir := t.TempDir()
	want, bases, st := buildLog(t, dir, 100)
	if len(bases) < 20 {
		t.Fatalf("only %d segments", len(bases))
	}
	fsys := faultfs.New()
	var writes atomic.Int64
	fsys.SetHook(func(op faultfs.Op) error {
		switch op.Kind {
		case faultfs.OpOpen, faultfs.OpSync, faultfs.OpSyncDir:
		default:
			t.Errorf("clean open: %v %s", op.Kind, op.Path)
			writes.Add(1)
		}
		return nil
	})
	o := &Options{SegmentBytes: 1024, FlushPolicy: FlushNone}
	l := openT(t, fsys, dir, o, st)
	fsys.SetHook(nil)
	if writes.Load() != 0 {
		t.Fatalf("a clean open of a whole log changed %d things on disk", writes.Load())
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

// TestRecoveryCutKeepsLaterSegments: a corrupt batch inside a scanned
// segment that is not the last costs that batch and no more: it is
// replaced by an empty batch covering its offsets and reported, the
// batches after it in the segment and the segments after it stay, and the
// next append goes after the real end. (Kafka removes every later segment;
// a log acknowledging only after an fsync has sealed the earlier segments
// first, so records after such damage may be acknowledged ones.)
func TestRecoveryCutKeepsLaterSegments(t *testing.T) {
	dir := t.TempDir()
	want, bases, st := buildLog(t, dir, 60)
	k := 4
	path := segment.LogPath(dir, bases[k])
	pos, base, _ := batchesOf(t, path)
	if len(pos) < 3 {
		t.Fatalf("segment %d has %d batches", bases[k], len(pos))
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// Corrupt the last byte of the second batch of segment k.
	data[pos[2]-1] ^= 0x55
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	st.Clean = false
	st.RecoveryPoint = 0
	l := openT(t, nil, dir, &Options{SegmentBytes: 1024, FlushPolicy: FlushNone}, st)
	r := l.Recovery()
	if r.BytesCut != 0 || r.SegmentsRemoved != 0 || len(r.Damage) != 1 {
		t.Fatalf("recovery %+v, want nothing cut, none removed, the damaged batch reported", r)
	}
	damageNaming(t, r, filepath.Base(path))
	end := int64(len(want))
	if l.LogEndOffset() != end {
		t.Fatalf("log end %d, want %d", l.LogEndOffset(), end)
	}
	var expect []rec
	for _, w := range want {
		if w.offset < base[1] || w.offset >= base[2] {
			expect = append(expect, w)
		}
	}
	got, damaged := readPassing(t, l, 0)
	if len(damaged) != 1 || damaged[0].From != base[1] || damaged[0].Resume != base[2] {
		t.Fatalf("damage read as %v, want offsets %d to %d", damaged, base[1], base[2]-1)
	}
	sameRecs(t, got, expect)
	if first, _, err := l.Append(makeBatch(t, "n", 0, 1, 10, 1)); err != nil || first != end {
		t.Fatalf("append after recovery: %d %v", first, err)
	}
}

// TestRecoveryKeepsSegmentsAfterAHole: a scanned segment that lost its
// tail without a torn batch (damage, or a power cut under a flush policy
// that promised nothing) leaves a hole before the next segment. The hole costs exactly its range: it is reported naming the
// segment after it, filled with empty batches, every record outside it
// stays readable at its offset, the next append goes right after the real
// end, and the next open finds the chain whole.
func TestRecoveryKeepsSegmentsAfterAHole(t *testing.T) {
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
	// The first batch holds two records.
	holeFrom, holeTo := bases[k]+2, bases[k+1]
	st.Clean = false
	st.RecoveryPoint = bases[k-1]
	o := &Options{SegmentBytes: 1024, FlushPolicy: FlushNone}
	l := openT(t, nil, dir, o, st)
	r := l.Recovery()
	if r.SegmentsRemoved != 0 || len(r.Damage) != 1 {
		t.Fatalf("recovery %+v, want one hole reported and nothing removed", r)
	}
	var c *errs.Corruption
	if !errors.As(r.Damage[0], &c) || c.Path != segment.LogPath(dir, holeTo) || c.Offset != holeFrom ||
		!strings.Contains(c.Error(), fmt.Sprintf("offsets %d to %d", holeFrom, holeTo-1)) {
		t.Fatalf("the hole is reported as %v, want offsets %d to %d before %s", r.Damage[0], holeFrom, holeTo-1, segment.LogPath(dir, holeTo))
	}
	var expect []rec
	for _, w := range want {
		if w.offset < holeFrom || w.offset >= holeTo {
			expect = append(expect, w)
		}
	}
	sameRecs(t, readAll(t, l, 0), expect)
	if first, _, err := l.Append(makeBatch(t, "n", 0, 1, 10, 1)); err != nil || first != int64(len(want)) {
		t.Fatalf("append: %d %v, want offset %d", first, err, len(want))
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	st = l.Checkpoint()
	st.Clean, st.RecoveryPoint = false, 0 // scan everything
	l = openT(t, nil, dir, o, st)
	if r := l.Recovery(); len(r.Damage) != 0 || r.SegmentsRemoved != 0 {
		t.Fatalf("the next open: %+v", r)
	}
	sameRecs(t, readAll(t, l, 0)[:len(expect)], expect)
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
	write(SwapCommitFile, encodeSwapCommits([]swapCommit{{base: bases[2], end: bases[4], size: int64(len(swap)), crc: crc32.Checksum(swap, castagnoli)}}))
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
	if len(r.Damage) != 0 {
		t.Fatalf("damage reported for a complete swap and an unfinished one: %v", r.Damage)
	}
	var left []string
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		name := e.Name()
		if strings.Contains(name, ".swap") || strings.Contains(name, SwapCommitFile) || strings.Contains(name, ".cleaned") || strings.Contains(name, ".deleted") || strings.Contains(name, ".truncate") {
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

// TestLeftoverSwapMustBeVouchedFor: a .log.swap beside an intact segment
// replaces it only when the swap-commit marker vouches for it. Empty,
// garbage, truncated, wrong-checksum and unvouched swaps are discarded
// (reported as damage naming the file), and every record of the live
// segment stays readable.
func TestLeftoverSwapMustBeVouchedFor(t *testing.T) {
	for _, tc := range []struct {
		name   string
		swap   func(seg []byte) []byte
		marker func(seg, swap []byte, base, end int64) []byte // nil: no marker
	}{
		{name: "empty", swap: func([]byte) []byte { return nil }},
		{name: "garbage", swap: func(seg []byte) []byte { return bytes.Repeat([]byte("garbage!"), len(seg)/8) }},
		{name: "truncated prefix", swap: func(seg []byte) []byte { return seg[:len(seg)/2] }},
		{name: "whole copy, no marker", swap: func(seg []byte) []byte { return seg }},
		{name: "truncated, marker for the whole", swap: func(seg []byte) []byte { return seg[:len(seg)/2] },
			marker: func(seg, _ []byte, base, end int64) []byte {
				return encodeSwapCommits([]swapCommit{{base: base, end: end, size: int64(len(seg)), crc: crc32.Checksum(seg, castagnoli)}})
			}},
		{name: "flipped byte, marker for the original", swap: func(seg []byte) []byte {
			out := slices.Clone(seg)
			out[len(out)-3] ^= 0x40
			return out
		}, marker: func(seg, _ []byte, base, end int64) []byte {
			return encodeSwapCommits([]swapCommit{{base: base, end: end, size: int64(len(seg)), crc: crc32.Checksum(seg, castagnoli)}})
		}},
		{name: "marker's range past the swap's end", swap: func(seg []byte) []byte { return seg },
			marker: func(seg, swap []byte, base, end int64) []byte {
				return encodeSwapCommits([]swapCommit{{base: base, end: end + 5, size: int64(len(swap)), crc: crc32.Checksum(swap, castagnoli)}})
			}},
		{name: "damaged marker", swap: func(seg []byte) []byte { return seg },
			marker: func(seg, swap []byte, base, end int64) []byte {
				m := encodeSwapCommits([]swapCommit{{base: base, end: end, size: int64(len(swap)), crc: crc32.Checksum(swap, castagnoli)}})
				m[len(m)/2] ^= 1
				return m
			}},
	} {
		for _, clean := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/clean=%v", tc.name, clean), func(t *testing.T) {
				dir := t.TempDir()
				want, bases, st := buildLog(t, dir, 40)
				seg, err := os.ReadFile(segment.LogPath(dir, bases[2]))
				if err != nil {
					t.Fatal(err)
				}
				swapName := segment.FileName(bases[2], ".log.swap")
				swap := tc.swap(seg)
				if err := os.WriteFile(filepath.Join(dir, swapName), swap, 0o644); err != nil {
					t.Fatal(err)
				}
				if tc.marker != nil {
					if err := os.WriteFile(filepath.Join(dir, SwapCommitFile), tc.marker(seg, swap, bases[2], bases[3]), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				st.Clean = clean
				l := openT(t, nil, dir, &Options{SegmentBytes: 1024, FlushPolicy: FlushNone}, st)
				sameRecs(t, readAll(t, l, 0), want)
				r := l.Recovery()
				found := false
				for _, d := range r.Damage {
					var c *errs.Corruption
					if errors.Is(d, ErrCorrupt) && errors.As(d, &c) && strings.Contains(c.Path, swapName) {
						found = true
					}
					t.Logf("damage: %v", d)
				}
				if !found {
					t.Fatalf("the discarded swap is not reported as damage naming %s: %v", swapName, r.Damage)
				}
				for _, name := range []string{swapName, SwapCommitFile} {
					if _, err := os.Stat(filepath.Join(dir, name)); !os.IsNotExist(err) {
						t.Fatalf("%s left behind: %v", name, err)
					}
				}
				if first, _, err := l.Append(makeBatch(t, "n", 0, 1, 10, 1)); err != nil || first != int64(len(want)) {
					t.Fatalf("append after open: %d %v, want offset %d", first, err, len(want))
				}
			})
		}
	}
}

// TestDiscardedSwapRestoresDeleted: when the swap-commit marker vouches for
// a swap that is damaged afterwards, and the swap had already renamed the
// segments it replaces to .deleted, Open discards the swap and brings the
// replaced segments back rather than lose their records.
func TestDiscardedSwapRestoresDeleted(t *testing.T) {
	dir := t.TempDir()
	want, bases, st := buildLog(t, dir, 40)
	seg, err := os.ReadFile(segment.LogPath(dir, bases[2]))
	if err != nil {
		t.Fatal(err)
	}
	swap := slices.Clone(seg)
	m := encodeSwapCommits([]swapCommit{{base: bases[2], end: bases[3], size: int64(len(swap)), crc: crc32.Checksum(swap, castagnoli)}})
	swap[len(swap)-1] ^= 1 // damaged after the marker vouched for it
	if err := os.WriteFile(filepath.Join(dir, segment.FileName(bases[2], ".log.swap")), swap, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, SwapCommitFile), m, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, suf := range []string{".log", ".index", ".timeindex"} {
		name := segment.FileName(bases[2], suf)
		if err := os.Rename(filepath.Join(dir, name), filepath.Join(dir, name+".deleted")); err != nil {
			t.Fatal(err)
		}
	}
	st.Clean = false
	l := openT(t, nil, dir, &Options{SegmentBytes: 1024, FlushPolicy: FlushNone}, st)
	sameRecs(t, readAll(t, l, 0), want)
	if len(l.Recovery().Damage) == 0 {
		t.Fatal("no damage reported")
	}
}

// TestRecoveredIndexSyncCapsTheCheckpoint: an unclean Open fsyncs each
// scanned segment's .log and leaves the index files it finds right to be
// fsynced after Open (one fsync per segment on the open path instead of
// three). Until they are durable, Checkpoint's RecoveryPoint does not pass
// the first of those segments, so a power cut meanwhile has the next Open
// scan them again; if their fsync fails, Close reports it and is not
// clean. Once they are fsynced the recovery point is the log end again.
func TestRecoveredIndexSyncCapsTheCheckpoint(t *testing.T) {
	fsys := faultfs.New()
	dir := t.TempDir()
	opts := &Options{SegmentBytes: 4 << 10, FlushPolicy: FlushNone, IndexIntervalBytes: 256, noBackground: true}
	l, err := Open(fsys, dir, opts, State{})
	if err != nil {
		t.Fatal(err)
	}
	for i := int64(0); i < 40; i++ {
		if _, _, err := l.Append(makeBatch(t, "r", i*5, 5, 100, 1000+i)); err != nil {
			t.Fatal(err)
		}
	}
	end := l.LogEndOffset()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	var failIdx atomic.Bool
	fsys.SetHook(func(op faultfs.Op) error {
		if op.Kind == faultfs.OpSync && failIdx.Load() && !strings.HasSuffix(op.Path, ".log") {
			return errors.New("injected index fsync failure")
		}
		return nil
	})

	failIdx.Store(true)
	l, err = Open(fsys, dir, opts, State{}) // unclean: every segment scanned
	if err != nil {
		t.Fatal(err)
	}
	segs := l.Recovery().SegmentsScanned
	if segs < 3 {
		t.Fatalf("scanned %d segments; the test wants several", segs)
	}
	if rp := l.Checkpoint().RecoveryPoint; rp != 0 {
		t.Fatalf("recovery point %d with the recovered indexes unsynced; want 0", rp)
	}
	if err := l.Close(); err == nil {
		t.Fatal("Close succeeded with the recovered indexes unsynced")
	}
	st := l.Checkpoint()
	if st.Clean || st.RecoveryPoint != 0 {
		t.Fatalf("after a failed index fsync Checkpoint = %+v; want not clean, recovery point 0", st)
	}

	failIdx.Store(false)
	l, err = Open(fsys, dir, opts, st)
	if err != nil {
		t.Fatal(err)
	}
	if got := l.Recovery().SegmentsScanned; got != segs {
		t.Fatalf("the Open after it scanned %d segments; want all %d again", got, segs)
	}
	if rp := l.Checkpoint().RecoveryPoint; rp != end {
		t.Fatalf("recovery point %d once the indexes are fsynced; want the end %d", rp, end)
	}
	if got := readAll(t, l, 0); int64(len(got)) != end {
		t.Fatalf("read %d records; want %d", len(got), end)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if st := l.Checkpoint(); !st.Clean || st.RecoveryPoint != end {
		t.Fatalf("Checkpoint after Close = %+v; want clean at %d", st, end)
	}

	// With the background goroutine: Close waits for it.
	bg := *opts
	bg.noBackground = false
	l, err = Open(fsys, dir, &bg, State{})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if st := l.Checkpoint(); !st.Clean || st.RecoveryPoint != end {
		t.Fatalf("Checkpoint after Close = %+v; want clean at %d", st, end)
	}
}

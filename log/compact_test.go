package log

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/foliolog/folio/record"
	"github.com/foliolog/folio/segment"
)

// TestCompactModel writes random keyed batches (tombstones, idempotent
// producers, every codec) over many small segments and compacts in rounds;
// after each round the log must hold, at their original offsets, exactly
// the records a model says survive: nothing superseded below the cleaner
// checkpoint, every key's latest record, every producer's last batch, batch
// fields intact. An unclean reopen that scans every segment must then find
// nothing to cut: cleaned segments end where the next begins.
func TestCompactModel(t *testing.T) {
	seed := testSeed(t)
	rng := newRand(seed)
	dir := t.TempDir()
	opts := compactOpts(t, 2048, nil)
	opts.FlushPolicy = FlushNone
	l, err := Open(nil, dir, opts, State{})
	if err != nil {
		t.Fatal(err)
	}
	m := newKVModel()
	seqs := map[int64]int32{}
	ctx := context.Background()
	for round := range 3 {
		for range 70 {
			recs := randomKV(rng, 1+rng.IntN(6), 25, 0.15, fmt.Sprint("r", round))
			pr := noProducer
			if rng.IntN(3) == 0 {
				pid := int64(1 + rng.IntN(3))
				pr = prodInfo{pid: pid, epoch: 2, seq: seqs[pid]}
				seqs[pid] += int32(len(recs))
			}
			m.appendKV(t, l, recs, 1_700_000_000_000+int64(round), pr, testCodecs[rng.IntN(len(testCodecs))])
		}
		if err := l.Sync(); err != nil {
			t.Fatal(err)
		}
		before := len(segmentBases(l))
		res, err := l.Compact(ctx)
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		bases := segmentBases(l)
		activeBase := bases[len(bases)-1]
		if res.FirstDirtyOffset != activeBase || l.CompactionStats().FirstDirtyOffset != activeBase {
			t.Fatalf("round %d: cleaner checkpoint %d (stats %d), want the active segment's base %d", round, res.FirstDirtyOffset, l.CompactionStats().FirstDirtyOffset, activeBase)
		}
		if res.Passes != 1 || res.RecordsRemoved == 0 || res.SegmentsWritten > res.SegmentsCleaned || res.BytesWritten >= res.BytesRead {
			t.Fatalf("round %d: result %+v", round, res)
		}
		if round > 0 && len(bases) >= before {
			t.Fatalf("round %d: %d segments before, %d after: nothing merged", round, before, len(bases))
		}
		t.Logf("round %d: %d -> %d segments, %+v", round, before, len(bases), res)
		m.checkCompacted(t, l, res.FirstDirtyOffset, false)
		if got := l.Stats().IndexRebuilds; got != 0 {
			t.Fatalf("round %d: %d index rebuilds: the cleaned indexes did not match their logs", round, got)
		}
	}
	want := recordsOf(readBatches(t, l))
	st := l.Checkpoint()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	st.Clean, st.RecoveryPoint = false, 0
	l, err = Open(nil, dir, opts, st)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	rep := l.Recovery()
	if rep.SegmentsRemoved != 0 || rep.BytesCut != 0 || rep.SegmentsScanned != len(segmentBases(l)) {
		t.Fatalf("recovery of the compacted log: %+v", rep)
	}
	if got := recordsOf(readBatches(t, l)); !slices.Equal(got, want) {
		t.Fatalf("after reopening: %d records, want %d", len(got), len(want))
	}
	if got := l.CompactionStats().FirstDirtyOffset; got != st.FirstDirtyOffset {
		t.Fatalf("cleaner checkpoint after reopening %d, want %d", got, st.FirstDirtyOffset)
	}
	res, err := l.Compact(ctx)
	if err != nil || res.Passes != 0 {
		t.Fatalf("compaction of a clean log: %+v, %v", res, err)
	}
}

// twinWrites applies the same random keyed writes to several logs and
// returns the model of the first.
func twinWrites(t *testing.T, seed uint64, n, keys int, ls ...*Log) *kvModel {
	rng := newRand(seed)
	m := newKVModel()
	for range n {
		recs := randomKV(rng, 1+rng.IntN(3), keys, 0.1, "w")
		m.appendKV(t, ls[0], recs, 1_700_000_000_000, noProducer, record.CodecNone)
		for _, l := range ls[1:] {
			newKVModel().appendKV(t, l, recs, 1_700_000_000_000, noProducer, record.CodecNone)
		}
	}
	for _, l := range ls {
		if err := l.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	return m
}

// TestCompactMapBudget: a map too small for every key of the dirty part
// cleans up to where it filled, and passes go on from there until the log
// is clean, ending where one big map gets in one pass.
func TestCompactMapBudget(t *testing.T) {
	seed := testSeed(t)
	// 16 slots hold 14 keys at the default load factor.
	small := compactOpts(t, 1024, &CleanerOptions{BufferBytes: 16 * mapEntrySize})
	big := compactOpts(t, 1024, nil)
	for _, o := range []*Options{small, big} {
		o.FlushPolicy = FlushNone
	}
	ls, err := Open(nil, t.TempDir(), small, State{})
	if err != nil {
		t.Fatal(err)
	}
	defer ls.Close()
	lb, err := Open(nil, t.TempDir(), big, State{})
	if err != nil {
		t.Fatal(err)
	}
	defer lb.Close()
	m := twinWrites(t, seed, 80, 40, ls, lb)
	bases := segmentBases(ls)
	activeBase := bases[len(bases)-1]

	ctx := context.Background()
	one, err := ls.compactPasses(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if one.Passes != 1 || one.MapSlots != 16 || one.MapEntries > 14 || one.MapEntries == 0 {
		t.Fatalf("one pass with a 16-slot map: %+v", one)
	}
	if one.FirstDirtyOffset <= 0 || one.FirstDirtyOffset >= activeBase {
		t.Fatalf("one pass cleaned up to %d; with a full map it must stop inside the cleanable part [0, %d)", one.FirstDirtyOffset, activeBase)
	}
	m.checkCompacted(t, ls, one.FirstDirtyOffset, false)
	kept := map[int64]bool{}
	for _, r := range recordsOf(readBatches(t, ls)) {
		kept[r.offset] = true
	}
	for o, r := range m.recs {
		if o >= one.FirstDirtyOffset && !kept[o] {
			t.Fatalf("record %v above the cleaned part is gone", r)
		}
	}

	rest, err := ls.Compact(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rest.Passes < 2 || rest.FirstDirtyOffset != activeBase {
		t.Fatalf("the remaining passes: %+v (active base %d)", rest, activeBase)
	}
	all, err := lb.Compact(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if all.Passes != 1 || all.FirstDirtyOffset != activeBase {
		t.Fatalf("one big map: %+v", all)
	}
	m.checkCompacted(t, ls, activeBase, false)
	if a, b := recordsOf(readBatches(t, ls)), recordsOf(readBatches(t, lb)); !slices.Equal(a, b) {
		t.Fatalf("small map kept %d records, big map %d", len(a), len(b))
	}
}

func TestCompactMapTooSmall(t *testing.T) {
	opts := compactOpts(t, 1024, &CleanerOptions{BufferBytes: 2 * mapEntrySize})
	l, err := Open(nil, t.TempDir(), opts, State{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	m := newKVModel()
	for range 20 {
		m.appendKV(t, l, []kv{{"a", []byte("1")}, {"b", []byte("2")}, {"c", []byte("3")}}, 1, noProducer, record.CodecNone)
	}
	_, err = l.Compact(context.Background())
	if !errors.Is(err, ErrCleanerMapTooSmall) {
		t.Fatalf("compaction with a one-key map of three-record batches: %v, want ErrCleanerMapTooSmall", err)
	}
	if left := leftovers(t, l.Dir()); len(left) != 0 {
		t.Fatalf("files left: %v", left)
	}
	m.checkCompacted(t, l, 0, false)
}

// TestCompactTombstoneRetention: a tombstone stays until its segment was
// last cleaned DeleteRetention ago (on the injected clock), then goes.
func TestCompactTombstoneRetention(t *testing.T) {
	for _, tc := range []struct {
		name      string
		retention time.Duration
		goneAfter time.Duration // since the first pass; < 0: at the second pass
	}{
		{"default", 0, DefaultDeleteRetention},
		{"hour", time.Hour, time.Hour},
		{"none", -1, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := time.UnixMilli(1_700_000_000_000)
			opts := compactOpts(t, 256, nil)
			opts.Now = func() time.Time { return now }
			opts.DeleteRetention = tc.retention
			dir := t.TempDir()
			l, err := Open(nil, dir, opts, State{})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			m := newKVModel()
			ts := now.UnixMilli()
			m.appendKV(t, l, []kv{{"k1", []byte("v1")}, {"k2", []byte("v2")}}, ts, noProducer, record.CodecNone)
			m.appendKV(t, l, []kv{{"k1", nil}, {"k3", []byte("v3")}}, ts, noProducer, record.CodecNone)
			tombOff := m.batches[m.order[1]].base
			// A big batch per segment from here on keeps the cleaned segment
			// holding the tombstone from merging with dirty ones (a merge
			// restarts its retention).
			filler := func(tag string) {
				m.appendKV(t, l, []kv{{"f", make([]byte, 150)}}, ts, noProducer, record.CodecNone)
				m.appendKV(t, l, []kv{{"g" + tag, []byte(tag)}}, ts, noProducer, record.CodecNone)
			}
			filler("0")
			ctx := context.Background()
			tombstone := func() bool {
				for _, r := range recordsOf(readBatches(t, l)) {
					if r.key == "k1" {
						if r.offset != tombOff || !r.null {
							t.Fatalf("key k1: %v survived, want only the tombstone at %d", r, tombOff)
						}
						return true
					}
				}
				return false
			}
			res, err := l.Compact(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if !tombstone() || res.TombstonesRemoved != 0 {
				t.Fatalf("first pass: tombstone gone (removed %d); it was dirty", res.TombstonesRemoved)
			}
			fi, err := os.Stat(segment.LogPath(dir, segmentBases(l)[0]))
			if err != nil {
				t.Fatal(err)
			}
			if !fi.ModTime().Equal(now) {
				t.Fatalf("cleaned segment's time %v, want the pass's %v", fi.ModTime(), now)
			}
			steps := []time.Duration{tc.goneAfter - time.Second, time.Second}
			if tc.goneAfter < 0 {
				steps = []time.Duration{0}
			}
			for i, d := range steps {
				now = now.Add(d)
				filler(fmt.Sprint(i + 1))
				res, err := l.Compact(ctx)
				if err != nil {
					t.Fatal(err)
				}
				last := i == len(steps)-1
				if tombstone() == last || (res.TombstonesRemoved == 1) != last {
					t.Fatalf("step %d (+%v): tombstone there %v, removed %d", i, d, !last, res.TombstonesRemoved)
				}
			}
			m.checkCompacted(t, l, l.CompactionStats().FirstDirtyOffset, true)
		})
	}
}

// TestCompactDirtyRatio: the cleaner picks a log only once its dirty ratio
// reaches MinCleanableDirtyRatio; the ratio is the cleanable dirty bytes
// over those plus the clean bytes.
func TestCompactDirtyRatio(t *testing.T) {
	c, err := newCleaner(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	opts := compactOpts(t, 512, nil)
	opts.Cleaner = c
	opts.FlushPolicy = FlushNone
	l, err := Open(nil, t.TempDir(), opts, State{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	c.register(l)
	m := newKVModel()
	n := 0
	write := func(batches int) {
		for range batches {
			// Unique keys: cleaning removes nothing, so sizes stay put.
			m.appendKV(t, l, []kv{{fmt.Sprintf("key-%04d", n), make([]byte, 100)}}, 1, noProducer, record.CodecNone)
			n++
		}
		if err := l.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	sizes := func() (clean, dirty int64) {
		bases := segmentBases(l)
		fd := l.CompactionStats().FirstDirtyOffset
		for i, b := range bases[:len(bases)-1] {
			fi, err := os.Stat(segment.LogPath(l.Dir(), b))
			if err != nil {
				t.Fatal(err)
			}
			if bases[i+1] <= fd {
				clean += fi.Size()
			} else {
				dirty += fi.Size()
			}
		}
		return clean, dirty
	}
	checkRatio := func() float64 {
		t.Helper()
		clean, dirty := sizes()
		ratio, ok := l.cleanable()
		if want := float64(dirty) / float64(clean+dirty); !ok || math.Abs(ratio-want) > 1e-9 {
			t.Fatalf("dirty ratio %v (ok %v), want %d/(%d+%d) = %v", ratio, ok, dirty, clean, dirty, want)
		}
		return ratio
	}

	write(20)
	if r := checkRatio(); r != 1 {
		t.Fatalf("a log never cleaned has dirty ratio %v, want 1", r)
	}
	if !c.cleanDirtiest() {
		t.Fatal("the cleaner passed over a wholly dirty log")
	}
	fd := l.CompactionStats().FirstDirtyOffset
	if r := checkRatio(); r != 0 || fd == 0 {
		t.Fatalf("after cleaning: ratio %v, checkpoint %d", r, fd)
	}
	for checkRatio() < 0.3 {
		write(1)
	}
	if c.cleanDirtiest() || l.CompactionStats().FirstDirtyOffset != fd {
		t.Fatalf("the cleaner cleaned at ratio %v, below 0.5", checkRatio())
	}
	for checkRatio() < 0.5 {
		write(1)
	}
	if !c.cleanDirtiest() || l.CompactionStats().FirstDirtyOffset <= fd {
		t.Fatalf("the cleaner left the log at ratio %v", checkRatio())
	}
	if c.cleanDirtiest() {
		t.Fatal("the cleaner found work in a clean log")
	}
	m.checkCompacted(t, l, l.CompactionStats().FirstDirtyOffset, false)
}

// TestCompactLag: segments holding a record newer than MinCompactionLag
// are not cleaned, nor anything after them, until the lag has passed.
func TestCompactLag(t *testing.T) {
	now := time.UnixMilli(1_700_000_000_000)
	opts := compactOpts(t, 300, nil)
	opts.Now = func() time.Time { return now }
	opts.MinCompactionLag = time.Hour
	opts.FlushPolicy = FlushNone
	l, err := Open(nil, t.TempDir(), opts, State{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	m := newKVModel()
	for i := range 30 {
		ts := now.Add(-2 * time.Hour).UnixMilli()
		if i >= 15 {
			ts = now.Add(-10 * time.Minute).UnixMilli()
		}
		m.appendKV(t, l, []kv{{fmt.Sprint("k", i%4), make([]byte, 60)}}, ts, noProducer, record.CodecNone)
	}
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	recent := m.order[15]
	var lagBound int64
	for _, b := range segmentBases(l) {
		if b <= recent {
			lagBound = b
		}
	}
	ctx := context.Background()
	res, err := l.Compact(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.FirstDirtyOffset != lagBound {
		t.Fatalf("cleaned up to %d, want %d: the segment holding the first record newer than the lag (offset %d)", res.FirstDirtyOffset, lagBound, recent)
	}
	m.checkCompacted(t, l, lagBound, false)
	now = now.Add(time.Hour)
	res, err = l.Compact(ctx)
	if err != nil {
		t.Fatal(err)
	}
	bases := segmentBases(l)
	if res.FirstDirtyOffset != bases[len(bases)-1] {
		t.Fatalf("an hour later cleaned up to %d, want the active base %d", res.FirstDirtyOffset, bases[len(bases)-1])
	}
	m.checkCompacted(t, l, res.FirstDirtyOffset, false)
}

// TestCompactMergesSmallSegments: cleaned segments that became small are
// merged in the next pass, in groups whose source sizes stay within
// SegmentBytes.
func TestCompactMergesSmallSegments(t *testing.T) {
	const segBytes = 1024
	opts := compactOpts(t, segBytes, nil)
	opts.FlushPolicy = FlushNone
	l, err := Open(nil, t.TempDir(), opts, State{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	m := newKVModel()
	write := func(tag string, n int) {
		for i := range n {
			m.appendKV(t, l, []kv{{fmt.Sprint("k", i%5), []byte(fmt.Sprintf("%s-%03d-%060d", tag, i, i))}}, 1, noProducer, record.CodecNone)
		}
		if err := l.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	for round, tag := range []string{"a", "b", "c"} {
		write(tag, []int{60, 60, 8}[round])
		n := len(segmentBases(l))
		res, err := l.Compact(ctx)
		if err != nil {
			t.Fatal(err)
		}
		after := len(segmentBases(l))
		t.Logf("round %d: %d segments before the pass, %d after (%+v)", round, n, after, res)
		if round > 0 && (res.SegmentsWritten >= res.SegmentsCleaned || after >= n) {
			t.Fatalf("round %d: %d segments cleaned into %d: small cleaned segments were not merged", round, res.SegmentsCleaned, res.SegmentsWritten)
		}
		m.checkCompacted(t, l, res.FirstDirtyOffset, false)
	}
	bases := segmentBases(l)
	// Every cleaned segment is small now: they all fit a few merged ones.
	if len(bases) > 4 {
		t.Fatalf("%d segments after three passes", len(bases))
	}
	for _, b := range bases[:len(bases)-1] {
		fi, err := os.Stat(segment.LogPath(l.Dir(), b))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Size() > segBytes {
			t.Fatalf("merged segment %d has %d bytes, over SegmentBytes %d", b, fi.Size(), segBytes)
		}
	}
}

// TestCompactOffsetSpan: segments whose offsets together would not fit a
// segment's 4-byte relative offsets are not merged, however small.
func TestCompactOffsetSpan(t *testing.T) {
	opts := compactOpts(t, 1<<20, nil)
	opts.FlushPolicy = FlushNone
	dir := t.TempDir()
	l, err := Open(nil, dir, opts, State{})
	if err != nil {
		t.Fatal(err)
	}
	bld, err := record.NewBuilder(nil)
	if err != nil {
		t.Fatal(err)
	}
	const span = 1 << 30
	for i := range 6 {
		bld.Reset()
		if err := bld.Append(record.Record{Key: []byte(fmt.Sprint("k", i%2)), Value: []byte(fmt.Sprint("v", i)), Timestamp: 1}); err != nil {
			t.Fatal(err)
		}
		if err := bld.SetLastOffsetDelta(span); err != nil {
			t.Fatal(err)
		}
		b, err := bld.Build(nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := l.Append(b); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	before := segmentBases(l)
	res, err := l.Compact(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if after := segmentBases(l); !slices.Equal(after, before) {
		t.Fatalf("segments %v became %v: merged beyond 2^31-1 offsets", before, after)
	}
	if res.SegmentsCleaned != len(before)-1 || res.RecordsRemoved != 3 || res.EmptyBatches != 3 {
		t.Fatalf("result %+v over %d sealed segments", res, len(before)-1)
	}
	var vals []string
	for _, r := range recordsOf(readBatches(t, l)) {
		vals = append(vals, r.key+"="+r.value)
	}
	// k1=v5 sits in the active segment, which is never cleaned, so k1=v3
	// stays too.
	if want := []string{"k1=v3", "k0=v4", "k1=v5"}; !slices.Equal(vals, want) {
		t.Fatalf("records %v, want %v", vals, want)
	}
	st := l.Checkpoint()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	st.Clean, st.RecoveryPoint = false, 0
	l, err = Open(nil, dir, opts, st)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if rep := l.Recovery(); rep.SegmentsRemoved != 0 || rep.BytesCut != 0 {
		t.Fatalf("recovery cut the compacted log: %+v", rep)
	}
}

// TestCompactRefusesKeylessRecords: a compacted log refuses a batch with a
// record without a key and writes nothing; a log that is not compacted
// takes it.
func TestCompactRefusesKeylessRecords(t *testing.T) {
	bld, err := record.NewBuilder(nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = bld.Append(record.Record{Key: []byte("a"), Value: []byte("1")})
	_ = bld.Append(record.Record{Value: []byte("no key")})
	b, err := bld.Build(nil)
	if err != nil {
		t.Fatal(err)
	}
	l, err := Open(nil, t.TempDir(), compactOpts(t, 1024, nil), State{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, _, err = l.Append(record.Batch(slices.Clone(b)))
	if !errors.Is(err, ErrNoKey) || !errors.Is(err, ErrInvalidBatch) {
		t.Fatalf("append of a keyless record to a compacted log: %v, want ErrNoKey and ErrInvalidBatch", err)
	}
	if l.LogEndOffset() != 0 {
		t.Fatalf("log end %d after a refused append", l.LogEndOffset())
	}
	plain, err := Open(nil, t.TempDir(), &Options{noBackground: true}, State{})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if _, _, err := plain.Append(b); err != nil {
		t.Fatalf("a log that is not compacted refused a keyless record: %v", err)
	}
	if _, err := plain.Compact(context.Background()); !errors.Is(err, ErrNotCompacted) {
		t.Fatalf("Compact on a log that is not compacted: %v, want ErrNotCompacted", err)
	}
}

func TestCompactOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		field string
		opts  Options
	}{
		{"MinCleanableDirtyRatio", Options{MinCleanableDirtyRatio: 1.5}},
		{"MinCleanableDirtyRatio", Options{MinCleanableDirtyRatio: -0.1}},
		{"MinCompactionLag", Options{MinCompactionLag: -time.Second}},
	} {
		_, err := Open(nil, t.TempDir(), &tc.opts, State{})
		if !errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), "Options."+tc.field) {
			t.Errorf("%+v: %v, want ErrInvalidOptions naming %s", tc.opts, err, tc.field)
		}
	}
	for _, tc := range []struct {
		field string
		opts  CleanerOptions
	}{
		{"Workers", CleanerOptions{Workers: -1}},
		{"BufferBytes", CleanerOptions{BufferBytes: mapEntrySize}},
		{"BufferBytes", CleanerOptions{Workers: 4, BufferBytes: 4 * mapEntrySize}},
		{"LoadFactor", CleanerOptions{LoadFactor: 1}},
		{"CheckInterval", CleanerOptions{CheckInterval: -1}},
		{"IOBufferBytes", CleanerOptions{IOBufferBytes: -1}},
	} {
		_, err := NewCleaner(&tc.opts)
		if !errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), "CleanerOptions."+tc.field) {
			t.Errorf("%+v: %v, want ErrInvalidOptions naming %s", tc.opts, err, tc.field)
		}
	}
}

// TestCompactCheckpointClamped: Open keeps the cleaner checkpoint within
// the log.
func TestCompactCheckpointClamped(t *testing.T) {
	dir := t.TempDir()
	opts := compactOpts(t, 1024, nil)
	l, err := Open(nil, dir, opts, State{})
	if err != nil {
		t.Fatal(err)
	}
	m := newKVModel()
	for i := range 5 {
		m.appendKV(t, l, []kv{{fmt.Sprint("k", i), []byte("v")}}, 1, noProducer, record.CodecNone)
	}
	st := l.Checkpoint()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	st.FirstDirtyOffset = 1000
	l, err = Open(nil, dir, opts, st)
	if err != nil {
		t.Fatal(err)
	}
	if got := l.Checkpoint().FirstDirtyOffset; got != 5 {
		t.Fatalf("checkpoint 1000 on a log ending at 5 reopened as %d", got)
	}
	if err := l.TruncateTo(3); err != nil {
		t.Fatal(err)
	}
	if got := l.Checkpoint().FirstDirtyOffset; got != 3 {
		t.Fatalf("after truncating to 3 the checkpoint is %d", got)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestCompactReadOnly: a read-only open of a compacted log reads what the
// writer reads (gaps, empty batches and all) and refuses Compact.
func TestCompactReadOnly(t *testing.T) {
	dir := t.TempDir()
	opts := compactOpts(t, 512, nil)
	l, err := Open(nil, dir, opts, State{})
	if err != nil {
		t.Fatal(err)
	}
	m := newKVModel()
	for i := range 40 {
		m.appendKV(t, l, []kv{{fmt.Sprint("k", i%3), []byte(fmt.Sprintf("%030d", i))}}, 1, noProducer, record.CodecNone)
	}
	res, err := l.Compact(context.Background())
	if err != nil || res.RecordsRemoved == 0 {
		t.Fatalf("compact: %+v, %v", res, err)
	}
	want := recordsOf(readBatches(t, l))
	defer l.Close()

	ro, err := Open(nil, dir, &Options{ReadOnly: true, Compact: true}, State{})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if got := recordsOf(readBatches(t, ro)); !slices.Equal(got, want) {
		t.Fatalf("read-only reader: %v\nwriter: %v", got, want)
	}
	if _, err := ro.Compact(context.Background()); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("Compact on a read-only log: %v, want ErrReadOnly", err)
	}
}

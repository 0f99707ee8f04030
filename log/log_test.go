package log

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/foliolog/folio/readpath"
	"github.com/foliolog/folio/record"
	"github.com/foliolog/folio/segment"
	"github.com/foliolog/folio/vfs"
	"github.com/foliolog/folio/vfs/faultfs"
)

// openT opens a log and closes it at the end of the test.
func openT(t testing.TB, fsys vfs.FS, dir string, o *Options, st State) *Log {
	t.Helper()
	l, err := Open(fsys, dir, o, st)
	if err != nil {
		t.Fatalf("open %s: %v", dir, err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// appendN appends n single-batch appends of recs records each, with values
// tagged by their sequence number, and returns the expected records.
func appendN(t testing.TB, l *Log, tag string, n, recs, size int) []rec {
	t.Helper()
	var want []rec
	for i := 0; i < n; i++ {
		id := int64(i * recs)
		first, last, err := l.Append(makeBatch(t, tag, id, recs, size, 1000+int64(i)))
		if err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
		if last-first+1 != int64(recs) {
			t.Fatalf("append %d: offsets %d..%d for %d records", i, first, last, recs)
		}
		for j := 0; j < recs; j++ {
			want = append(want, rec{offset: first + int64(j), key: fmt.Sprintf("k%d", id+int64(j)), value: string(payload(tag, id+int64(j), size)), ts: 1000 + int64(i)})
		}
	}
	return want
}

func sameRecs(t testing.TB, got, want []rec) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("read %d records, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("record %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
}

func segmentFiles(t testing.TB, dir, suffix string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), suffix) {
			out = append(out, e.Name())
		}
	}
	return out
}

func TestAppendReadAcrossSegmentsAndReopen(t *testing.T) {
	for _, kind := range []readpath.Kind{readpath.Mmap, readpath.Sendfile} {
		t.Run(kind.String(), func(t *testing.T) {
			dir := t.TempDir()
			o := &Options{SegmentBytes: 4096, IndexIntervalBytes: 512, ReadPath: kind, FlushPolicy: FlushNone}
			l := openT(t, nil, dir, o, State{})
			want := appendN(t, l, "a", 60, 4, 100)
			if got := l.LogEndOffset(); got != 240 {
				t.Fatalf("log end %d, want 240", got)
			}
			sameRecs(t, readAll(t, l, 0), want)
			// A read from the middle starts at the batch holding the offset.
			sameRecs(t, readAll(t, l, 101), want[101:])
			if n := len(segmentFiles(t, dir, ".log")); n < 5 {
				t.Fatalf("%d segments, want a roll every ~4 KiB (>= 5)", n)
			}
			for _, f := range segmentFiles(t, dir, ".log") {
				fi, err := os.Stat(filepath.Join(dir, f))
				if err != nil {
					t.Fatal(err)
				}
				if fi.Size() > 4096 {
					t.Fatalf("%s holds %d bytes, above SegmentBytes", f, fi.Size())
				}
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			st := l.Checkpoint()
			if !st.Clean || st.RecoveryPoint != 240 {
				t.Fatalf("checkpoint after Close %+v, want clean at 240", st)
			}
			l2 := openT(t, nil, dir, o, st)
			sameRecs(t, readAll(t, l2, 0), want)
			if r := l2.Recovery(); !r.Clean || r.SegmentsScanned != 0 {
				t.Fatalf("clean reopen scanned: %+v", r)
			}
			if n := l2.Stats().IndexRebuilds; n != 0 {
				t.Fatalf("clean reopen rebuilt %d indexes", n)
			}
			// Offsets continue.
			first, _, err := l2.Append(makeBatch(t, "b", 0, 1, 10, 5))
			if err != nil || first != 240 {
				t.Fatalf("append after reopen: %d, %v", first, err)
			}
		})
	}
}

func TestAppendSeveralBatchesAndStamping(t *testing.T) {
	clock := time.UnixMilli(1_700_000_000_000)
	o := &Options{FlushPolicy: FlushNone, LogAppendTime: true, Now: func() time.Time { return clock }}
	l := openT(t, nil, t.TempDir(), o, State{})
	if err := l.SetLeaderEpoch(7); err != nil {
		t.Fatal(err)
	}
	b1 := makeBatch(t, "m", 0, 3, 10, 5)
	b2 := makeBatch(t, "m", 3, 2, 10, 6)
	first, last, err := l.Append(b1, b2)
	if err != nil || first != 0 || last != 4 {
		t.Fatalf("append: %d..%d %v", first, last, err)
	}
	for i, b := range []record.Batch{b1, b2} {
		if err := b.Validate(); err != nil {
			t.Fatalf("batch %d after stamping: %v", i, err)
		}
		if b.PartitionLeaderEpoch() != 7 || !b.LogAppendTime() || b.MaxTimestamp() != clock.UnixMilli() {
			t.Fatalf("batch %d not stamped: epoch %d lat %v ts %d", i, b.PartitionLeaderEpoch(), b.LogAppendTime(), b.MaxTimestamp())
		}
	}
	if b2.BaseOffset() != 3 {
		t.Fatalf("second batch base %d, want 3", b2.BaseOffset())
	}
	for _, r := range readAll(t, l, 0) {
		if r.ts != clock.UnixMilli() {
			t.Fatalf("record %d timestamp %d, want the append time", r.offset, r.ts)
		}
	}
	v, err := l.Read(0, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Release()
	if err := readpath.Guard(func() error {
		buf, err := v.Bytes()
		if err != nil {
			return err
		}
		if e := record.Batch(buf).PartitionLeaderEpoch(); e != 7 {
			return fmt.Errorf("stored epoch %d", e)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

func TestAppendRefusesBadBatchesAtomically(t *testing.T) {
	l := openT(t, nil, t.TempDir(), &Options{FlushPolicy: FlushNone, MaxBatchBytes: 2048, SegmentBytes: 1 << 20}, State{})
	good := makeBatch(t, "g", 0, 2, 10, 1)
	bad := makeBatch(t, "g", 2, 2, 10, 1)
	bad[len(bad)-1] ^= 0xff // breaks the CRC
	if _, _, err := l.Append(good, bad); !errors.Is(err, ErrInvalidBatch) || !errors.Is(err, record.ErrCorrupt) {
		t.Fatalf("append with a corrupt second batch: %v", err)
	}
	if l.LogEndOffset() != 0 {
		t.Fatalf("a refused multi-batch append wrote: end %d", l.LogEndOffset())
	}
	if _, _, err := l.Append(bad); !errors.Is(err, ErrInvalidBatch) {
		t.Fatalf("append of a corrupt batch: %v", err)
	}
	big := makeBatch(t, "g", 0, 30, 100, 1)
	if _, _, err := l.Append(big); !errors.Is(err, ErrBatchTooLarge) || !errors.Is(err, ErrInvalidBatch) {
		t.Fatalf("append of a %d-byte batch: %v", len(big), err)
	}
	if _, _, err := l.Append(record.Batch(good[:30])); !errors.Is(err, ErrInvalidBatch) {
		t.Fatalf("append of a short batch: %v", err)
	}
	if _, _, err := l.Append(); !errors.Is(err, ErrInvalidBatch) {
		t.Fatalf("append of nothing: %v", err)
	}
	if l.LogEndOffset() != 0 {
		t.Fatalf("refused appends wrote: end %d", l.LogEndOffset())
	}
	// The log is healthy: refusals are not failures.
	if _, _, err := l.Append(good); err != nil {
		t.Fatal(err)
	}
}

func TestOptionsValidate(t *testing.T) {
	cases := []struct {
		field string
		o     Options
	}{
		{"SegmentBytes", Options{SegmentBytes: 3 << 30}},
		{"SegmentBytes", Options{SegmentBytes: 10}},
		{"IndexIntervalBytes", Options{IndexIntervalBytes: -1}},
		{"MaxIndexBytes", Options{MaxIndexBytes: 8}},
		{"MaxBatchBytes", Options{MaxBatchBytes: 10}},
		{"MaxBatchBytes", Options{SegmentBytes: 4096, MaxBatchBytes: 8192}},
		{"ReadPath", Options{ReadPath: 9}},
		{"FlushPolicy", Options{FlushPolicy: FlushEveryN(0)}},
		{"FlushPolicy", Options{FlushPolicy: FlushInterval(-time.Second)}},
	}
	for _, c := range cases {
		o := c.o.withDefaults()
		err := o.validate()
		if !errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), "Options."+c.field) {
			t.Errorf("%+v: %v, want an error naming %s", c.o, err, c.field)
		}
		if _, err := Open(nil, t.TempDir(), &c.o, State{}); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("Open with %+v: %v", c.o, err)
		}
	}
	d := (*Options)(nil).withDefaults()
	if err := d.validate(); err != nil {
		t.Fatal(err)
	}
	if d.SegmentBytes != 1<<30 || d.SegmentAge != 7*24*time.Hour || d.IndexIntervalBytes != 4096 ||
		d.MaxIndexBytes != 10<<20 || d.MaxBatchBytes != 1<<20+12 || d.RetentionBytes != 0 ||
		d.RetentionAge != 7*24*time.Hour || d.RetentionCheckInterval != 5*time.Minute ||
		d.FlushPolicy != FlushSync || d.ReadPath != readpath.Mmap {
		t.Fatalf("defaults: %+v", d)
	}
	for _, p := range []FlushPolicy{FlushSync, FlushNone, FlushInterval(time.Second), FlushEveryN(3)} {
		if p.String() == "" || p.Validate() != nil {
			t.Fatalf("policy %v", p)
		}
	}
}

// TestRollTriggers covers each of Kafka's roll rules.
func TestRollTriggers(t *testing.T) {
	t.Run("size", func(t *testing.T) {
		l := openT(t, nil, t.TempDir(), &Options{SegmentBytes: 2000, FlushPolicy: FlushNone}, State{})
		b := makeBatch(t, "s", 0, 1, 500, 1) // ~580 bytes
		for i := 0; i < 3; i++ {
			if _, _, err := l.Append(slices.Clone(b)); err != nil {
				t.Fatal(err)
			}
		}
		if l.Stats().Rolls != 0 {
			t.Fatalf("rolled before the segment was full")
		}
		if _, _, err := l.Append(slices.Clone(b)); err != nil {
			t.Fatal(err)
		}
		if got := l.Stats().Rolls; got != 1 {
			t.Fatalf("%d rolls after passing SegmentBytes, want 1", got)
		}
	})
	t.Run("age", func(t *testing.T) {
		now := time.Unix(1000, 0)
		var mu sync.Mutex
		clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
		l := openT(t, nil, t.TempDir(), &Options{SegmentAge: time.Hour, FlushPolicy: FlushNone, Now: clock}, State{})
		if _, _, err := l.Append(makeBatch(t, "a", 0, 1, 10, 1)); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		now = now.Add(59 * time.Minute)
		mu.Unlock()
		if _, _, err := l.Append(makeBatch(t, "a", 1, 1, 10, 1)); err != nil {
			t.Fatal(err)
		}
		if l.Stats().Rolls != 0 {
			t.Fatal("rolled a segment younger than SegmentAge")
		}
		mu.Lock()
		now = now.Add(2 * time.Minute)
		mu.Unlock()
		if _, _, err := l.Append(makeBatch(t, "a", 2, 1, 10, 1)); err != nil {
			t.Fatal(err)
		}
		if l.Stats().Rolls != 1 {
			t.Fatal("did not roll a segment older than SegmentAge")
		}
	})
	t.Run("index full", func(t *testing.T) {
		// 3 offset entries fit; an entry is due at nearly every batch.
		l := openT(t, nil, t.TempDir(), &Options{MaxIndexBytes: 24, IndexIntervalBytes: 1, FlushPolicy: FlushNone}, State{})
		for i := int64(0); i < 12; i++ {
			if _, _, err := l.Append(makeBatch(t, "i", i, 1, 10, 1)); err != nil {
				t.Fatalf("append %d: %v", i, err)
			}
		}
		if l.Stats().Rolls == 0 {
			t.Fatal("a full index did not roll the segment")
		}
		sameRecs(t, readAll(t, l, 0)[:1], []rec{{offset: 0, key: "k0", value: string(payload("i", 0, 10)), ts: 1}})
		if n := len(readAll(t, l, 0)); n != 12 {
			t.Fatalf("read %d records, want 12", n)
		}
	})
	t.Run("relative offset overflow", func(t *testing.T) {
		l := openT(t, nil, t.TempDir(), &Options{FlushPolicy: FlushNone}, State{})
		small := makeBatch(t, "o", 0, 1, 10, 1)
		if _, _, err := l.Append(small); err != nil {
			t.Fatal(err)
		}
		// A batch claiming 2^31 offsets (a compacted batch may span
		// offsets it no longer holds) cannot share the segment.
		huge := makeBatchDelta(t, 1<<31-1)
		first, last, err := l.Append(huge)
		if err != nil {
			t.Fatal(err)
		}
		if first != 1 || last != 1<<31 {
			t.Fatalf("offsets %d..%d", first, last)
		}
		if l.Stats().Rolls != 1 {
			t.Fatal("relative offset overflow did not roll")
		}
	})
}

// makeBatchDelta builds a one-record batch whose lastOffsetDelta is delta.
func makeBatchDelta(t testing.TB, delta int32) record.Batch {
	t.Helper()
	bld, err := record.NewBuilder(nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := bld.AppendAt(delta, record.Record{Value: []byte("x"), Timestamp: 1}); err != nil {
		t.Fatal(err)
	}
	b, err := bld.Build(nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestReadErrorsAndHighWatermark(t *testing.T) {
	l := openT(t, nil, t.TempDir(), &Options{FlushPolicy: FlushNone}, State{})
	appendN(t, l, "r", 5, 2, 10)
	var oor *OffsetOutOfRangeError
	_, err := l.Read(11, 100)
	if !errors.As(err, &oor) || !errors.Is(err, ErrOffsetOutOfRange) || oor.Start != 0 || oor.End != 10 {
		t.Fatalf("read beyond the end: %v", err)
	}
	if _, err := l.Read(10, 100); !errors.Is(err, ErrNoData) {
		t.Fatalf("read at the end: %v", err)
	}
	if _, err := l.Read(-1, 100); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read below the start: %v", err)
	}
	// maxBytes 0 still returns one whole batch.
	v, err := l.Read(3, 0)
	if err != nil {
		t.Fatal(err)
	}
	next, recs, err := decodeView(v, 0)
	v.Release()
	if err != nil || len(recs) != 2 || recs[0].offset != 2 || next != 4 {
		t.Fatalf("one-batch read: next %d recs %+v err %v", next, recs, err)
	}
	if got := l.HighWatermark(); got != 10 {
		t.Fatalf("high watermark %d under FlushNone, want the log end 10", got)
	}
}

func TestExternalHighWatermark(t *testing.T) {
	dir := t.TempDir()
	o := &Options{FlushPolicy: FlushNone, ExternalHighWatermark: true}
	l := openT(t, nil, dir, o, State{})
	appendN(t, l, "h", 4, 3, 10) // batches at 0, 3, 6, 9
	if l.HighWatermark() != 0 {
		t.Fatalf("external high watermark starts at %d, want 0", l.HighWatermark())
	}
	if _, err := l.Read(0, 100); !errors.Is(err, ErrNoData) {
		t.Fatalf("read above the external high watermark: %v", err)
	}
	if err := l.SetHighWatermark(6); err != nil {
		t.Fatal(err)
	}
	got := readAll(t, l, 0)
	if len(got) != 6 || got[5].offset != 5 {
		t.Fatalf("read %d records up to hw 6", len(got))
	}
	// Inside a batch: rounded down to its base.
	if err := l.SetHighWatermark(8); err != nil || l.HighWatermark() != 6 {
		t.Fatalf("hw 8 gave %d, %v; want 6", l.HighWatermark(), err)
	}
	if err := l.SetHighWatermark(13); !errors.Is(err, ErrBadHighWatermark) {
		t.Fatalf("hw beyond the end: %v", err)
	}
	if err := l.SetHighWatermark(12); err != nil || l.HighWatermark() != 12 {
		t.Fatalf("hw at the end: %d %v", l.HighWatermark(), err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l2 := openT(t, nil, dir, o, l.Checkpoint())
	if l2.HighWatermark() != 12 {
		t.Fatalf("reopened hw %d, want the checkpointed 12", l2.HighWatermark())
	}
	l3 := openT(t, nil, t.TempDir(), &Options{}, State{})
	if err := l3.SetHighWatermark(0); !errors.Is(err, ErrBadHighWatermark) {
		t.Fatalf("SetHighWatermark on a self-managed log: %v", err)
	}
}

func TestOffsetForTime(t *testing.T) {
	l := openT(t, nil, t.TempDir(), &Options{SegmentBytes: 1024, FlushPolicy: FlushNone, IndexIntervalBytes: 100}, State{})
	// Timestamps 10, 20, ..., one batch of 2 records each.
	for i := int64(0); i < 40; i++ {
		if _, _, err := l.Append(makeBatch(t, "t", i*2, 2, 50, (i+1)*10)); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		ts   int64
		want int64
		ok   bool
	}{{0, 0, true}, {10, 0, true}, {11, 2, true}, {200, 38, true}, {205, 40, true}, {400, 78, true}, {401, 0, false}} {
		got, ok, err := l.OffsetForTime(time.UnixMilli(c.ts))
		if err != nil || ok != c.ok || (ok && got != c.want) {
			t.Errorf("OffsetForTime(%d) = %d, %v, %v; want %d, %v", c.ts, got, ok, err, c.want, c.ok)
		}
	}
	if _, err := l.DeleteRecordsBefore(41); err != nil {
		t.Fatal(err)
	}
	if got, ok, _ := l.OffsetForTime(time.UnixMilli(0)); !ok || got != 41 {
		t.Fatalf("OffsetForTime below the start: %d %v, want 41", got, ok)
	}
}

func TestBeforeFirstWrite(t *testing.T) {
	fsys := faultfs.New()
	dir := filepath.Join(t.TempDir(), "p-0")
	var mu sync.Mutex
	calls := 0
	var writesBeforeHook []string
	fsys.SetHook(func(op faultfs.Op) error {
		mu.Lock()
		defer mu.Unlock()
		if calls == 0 && op.Kind != faultfs.OpOpen {
			writesBeforeHook = append(writesBeforeHook, op.String())
		}
		return nil
	})
	o := &Options{SegmentBytes: 1024, FlushPolicy: FlushSync, BeforeFirstWrite: func() error {
		mu.Lock()
		defer mu.Unlock()
		calls++
		return nil
	}}
	l, err := Open(fsys, dir, o, State{})
	if err != nil {
		t.Fatal(err)
	}
	appendN(t, l, "w", 20, 2, 100)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if calls != 1 || len(writesBeforeHook) != 0 {
		t.Fatalf("new log: hook called %d times, writes before it: %v", calls, writesBeforeHook)
	}

	// A clean reopen writes nothing until the first append; then the hook
	// runs once, before it.
	calls = 0
	l, err = Open(fsys, dir, o, l.Checkpoint())
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, l, 0)
	mu.Lock()
	if calls != 0 || len(writesBeforeHook) != 0 {
		t.Fatalf("clean open and reads: hook called %d times, writes %v", calls, writesBeforeHook)
	}
	mu.Unlock()
	appendN(t, l, "x", 30, 2, 100) // rolls too
	if err := l.TruncateTo(5); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if calls != 1 || len(writesBeforeHook) != 0 {
		t.Fatalf("reopen: hook called %d times, writes before it: %v", calls, writesBeforeHook)
	}

	// A failing hook fails the write and writes nothing; the next write
	// calls it again.
	calls = 0
	hookErr := errors.New("marker busy")
	fail := true
	o.BeforeFirstWrite = func() error {
		mu.Lock()
		defer mu.Unlock()
		calls++
		if fail {
			return hookErr
		}
		return nil
	}
	l, err = Open(fsys, dir, o, l.Checkpoint())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	end := l.LogEndOffset()
	if _, _, err := l.Append(makeBatch(t, "y", 0, 1, 10, 1)); !errors.Is(err, hookErr) {
		t.Fatalf("append with a failing hook: %v", err)
	}
	if l.LogEndOffset() != end || len(writesBeforeHook) != 0 {
		t.Fatalf("a failed hook let a write through: end %d, writes %v", l.LogEndOffset(), writesBeforeHook)
	}
	mu.Lock()
	fail = false
	mu.Unlock()
	if _, _, err := l.Append(makeBatch(t, "y", 0, 1, 10, 1)); err != nil {
		t.Fatal(err)
	}
	if calls != 2 {
		t.Fatalf("hook called %d times, want 2 (failed, then succeeded)", calls)
	}
}

func TestCloseIsIdempotent(t *testing.T) {
	l, err := Open(nil, t.TempDir(), &Options{FlushPolicy: FlushNone}, State{})
	if err != nil {
		t.Fatal(err)
	}
	appendN(t, l, "c", 3, 1, 10)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); !errors.Is(err, ErrClosed) {
		t.Fatalf("second Close: %v", err)
	}
	if _, _, err := l.Append(makeBatch(t, "c", 0, 1, 10, 1)); !errors.Is(err, ErrClosed) {
		t.Fatalf("append after Close: %v", err)
	}
	if _, err := l.Read(0, 10); !errors.Is(err, ErrClosed) {
		t.Fatalf("read after Close: %v", err)
	}
	if err := l.Sync(); !errors.Is(err, ErrClosed) {
		t.Fatalf("sync after Close: %v", err)
	}
	if err := l.TruncateTo(0); !errors.Is(err, ErrClosed) {
		t.Fatalf("truncate after Close: %v", err)
	}
	if _, err := l.EnforceRetention(time.Now()); !errors.Is(err, ErrClosed) {
		t.Fatalf("retention after Close: %v", err)
	}
	if _, err := l.DeleteRecordsBefore(1); !errors.Is(err, ErrClosed) {
		t.Fatalf("delete records after Close: %v", err)
	}
}

// TestSegmentsAreSealedInTheBackground: a roll hands the old segment to the
// background goroutine; its .log is fsynced and its indexes trimmed without
// any append waiting for it, and the durable end moves to its end.
func TestSegmentsAreSealedInTheBackground(t *testing.T) {
	fsys := faultfs.New()
	dir := t.TempDir()
	sealed := make(chan string, 16)
	fsys.SetHook(func(op faultfs.Op) error {
		if op.Kind == faultfs.OpSync && strings.HasSuffix(op.Path, "00000000000000000000.log") {
			sealed <- op.Path
		}
		return nil
	})
	l := openT(t, fsys, dir, &Options{SegmentBytes: 1024, FlushPolicy: FlushNone}, State{})
	for l.Stats().Rolls == 0 {
		if _, _, err := l.Append(makeBatch(t, "s", 0, 1, 200, 1)); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-sealed:
	case <-time.After(10 * time.Second):
		t.Fatal("the rolled segment was not fsynced in the background")
	}
	// The durable end follows once the seal completes; Sync waits for it
	// (it shares syncMu with the sealer) without fsyncing the sealed one.
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	seg, err := segment.Open(nil, dir, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer seg.Close()
	next, err := seg.NextOffset()
	if err != nil {
		t.Fatal(err)
	}
	if l.DurableEndOffset() < next {
		t.Fatalf("durable end %d below the sealed segment's end %d", l.DurableEndOffset(), next)
	}
	if d, _ := fsys.Unsynced(filepath.Join(dir, "00000000000000000000.log")); d != 0 {
		t.Fatalf("sealed .log has %d unsynced bytes", d)
	}
}

// TestSealDoesNotBlockAppends holds the fsync of a rolled segment's seal
// while appends go on into the next segment; they complete, and so does
// the seal once released.
func TestSealDoesNotBlockAppends(t *testing.T) {
	fsys := faultfs.New()
	dir := t.TempDir()
	first := filepath.Join(dir, "00000000000000000000.log")
	blocked := make(chan struct{})
	release := make(chan struct{})
	var once sync.Once
	fsys.SetHook(func(op faultfs.Op) error {
		if op.Kind == faultfs.OpSync && op.Path == first {
			once.Do(func() {
				close(blocked)
				<-release
			})
		}
		return nil
	})
	l := openT(t, fsys, dir, &Options{SegmentBytes: 1024, FlushPolicy: FlushNone}, State{})
	for l.Stats().Rolls == 0 {
		if _, _, err := l.Append(makeBatch(t, "s", 0, 1, 200, 1)); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, blocked, "the seal's fsync")
	done := make(chan error, 1)
	go func() {
		for i := int64(0); i < 20; i++ {
			if _, _, err := l.Append(makeBatch(t, "t", i, 1, 200, 1)); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	if err := waitFor(t, done, "appends while a seal is blocked"); err != nil {
		t.Fatal(err)
	}
	if l.DurableEndOffset() != 0 {
		t.Fatalf("durable end %d while the first seal is still blocked", l.DurableEndOffset())
	}
	close(release)
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	if l.DurableEndOffset() != l.LogEndOffset() {
		t.Fatalf("durable %d, end %d after Sync", l.DurableEndOffset(), l.LogEndOffset())
	}
}

// TestReopenWithEmptyLastSegment: a log whose only segment is empty (here
// after TruncateTo below the log start restarted it) is closed, reopened
// cleanly or not, and appends to it.
func TestReopenWithEmptyLastSegment(t *testing.T) {
	for _, clean := range []bool{true, false} {
		t.Run(fmt.Sprint("clean=", clean), func(t *testing.T) {
			dir := t.TempDir()
			o := &Options{SegmentBytes: 1024, FlushPolicy: FlushNone}
			l, err := Open(nil, dir, o, State{})
			if err != nil {
				t.Fatal(err)
			}
			appendN(t, l, "e", 6, 1, 300)
			if _, err := l.DeleteRecordsBefore(4); err != nil {
				t.Fatal(err)
			}
			if err := l.TruncateTo(3); err != nil {
				t.Fatal(err)
			}
			if l.Stats().Segments != 1 || l.LogEndOffset() != 3 || l.LogStartOffset() != 3 {
				t.Fatalf("after the restart: %d segments, [%d, %d)", l.Stats().Segments, l.LogStartOffset(), l.LogEndOffset())
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			st := l.Checkpoint()
			st.Clean = clean
			l2 := openT(t, nil, dir, o, st)
			if l2.LogEndOffset() != 3 || l2.LogStartOffset() != 3 {
				t.Fatalf("reopened [%d, %d), want [3, 3)", l2.LogStartOffset(), l2.LogEndOffset())
			}
			first, _, err := l2.Append(makeBatch(t, "f", 0, 1, 10, 1))
			if err != nil || first != 3 {
				t.Fatalf("append: %d %v, want 3", first, err)
			}
			if got := readAll(t, l2, 3); len(got) != 1 || got[0].value != string(payload("f", 0, 10)) {
				t.Fatalf("read back %+v", got)
			}
		})
	}
}

package log

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/foliolog/folio/readpath"
	"github.com/foliolog/folio/record"
	"github.com/foliolog/folio/segment"
)

// TestReconfigureLive changes each live setting of an open log and checks
// that the next append goes by it: the batch limit, keyless records and
// Compact under compaction, the roll size, log-append time, and a refused
// invalid change that leaves everything as it was.
func TestReconfigureLive(t *testing.T) {
	cleaner, err := NewCleaner(nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cleaner.Close() }) // after the log's Close
	o := &Options{SegmentBytes: 1 << 20, MaxBatchBytes: 1000, FlushPolicy: FlushNone, RetentionCheckInterval: -1, Cleaner: cleaner}
	l := openT(t, nil, t.TempDir(), o, State{})
	next := *o
	reconf := func(change func(*Options)) {
		t.Helper()
		change(&next)
		if err := l.Reconfigure(&next); err != nil {
			t.Fatal(err)
		}
	}

	if _, _, err := l.Append(makeBatch(t, "big", 0, 1, 2000, 1)); !errors.Is(err, ErrBatchTooLarge) {
		t.Fatalf("a 2000-byte batch at MaxBatchBytes 1000: %v", err)
	}
	reconf(func(o *Options) { o.MaxBatchBytes = 10_000 })
	if _, _, err := l.Append(makeBatch(t, "big", 0, 1, 2000, 1)); err != nil {
		t.Fatalf("a 2000-byte batch after MaxBatchBytes 10000: %v", err)
	}

	keyless := func() record.Batch {
		bld, err := record.NewBuilder(nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := bld.Append(record.Record{Value: []byte("v"), Timestamp: 1}); err != nil {
			t.Fatal(err)
		}
		b, err := bld.Build(nil)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	if _, err := l.Compact(context.Background()); !errors.Is(err, ErrNotCompacted) {
		t.Fatalf("Compact before Compact is on: %v", err)
	}
	reconf(func(o *Options) { o.Compact, o.SegmentBytes, o.MaxBatchBytes = true, 4096, 4000 })
	if _, _, err := l.Append(keyless()); !errors.Is(err, ErrNoKey) {
		t.Fatalf("a keyless batch after Compact went on: %v, want ErrNoKey", err)
	}
	if n := cleaner.Stats().Logs; n != 1 {
		t.Fatalf("after Compact went on the cleaner watches %d logs, want 1", n)
	}
	rolls := l.Stats().Rolls
	for i := range 20 {
		if _, _, err := l.Append(makeBatch(t, "dup", int64(i%2), 1, 500, 1)); err != nil {
			t.Fatal(err)
		}
	}
	if r := l.Stats().Rolls - rolls; r < 2 {
		t.Fatalf("SegmentBytes 4096: %d rolls over 10 KB", r)
	}
	if err := l.Sync(); err != nil { // seals the rolled segments
		t.Fatal(err)
	}
	if _, err := l.Compact(context.Background()); err != nil {
		t.Fatal(err)
	}
	// The log's cleaner may have cleaned first: count both.
	if st := l.CompactionStats(); st.RecordsRemoved == 0 {
		t.Fatalf("Compact after Compact went on removed nothing: %+v", st)
	}
	reconf(func(o *Options) { o.Compact = false })
	if n := cleaner.Stats().Logs; n != 0 {
		t.Fatalf("after Compact went off the cleaner watches %d logs, want 0", n)
	}
	if _, err := l.Compact(context.Background()); !errors.Is(err, ErrNotCompacted) {
		t.Fatalf("Compact after Compact went off: %v", err)
	}
	if _, _, err := l.Append(keyless()); err != nil {
		t.Fatalf("a keyless batch after Compact went off: %v", err)
	}

	reconf(func(o *Options) { o.LogAppendTime = true })
	b := makeBatch(t, "lat", 100, 2, 10, 1)
	before := time.Now().UnixMilli()
	if _, _, err := l.Append(b); err != nil {
		t.Fatal(err)
	}
	if !b.LogAppendTime() || b.MaxTimestamp() < before {
		t.Fatalf("after LogAppendTime went on: log-append-time %v, max timestamp %d (before %d)", b.LogAppendTime(), b.MaxTimestamp(), before)
	}

	bad := next
	bad.MinCleanableDirtyRatio = 2
	bad.MaxBatchBytes = 1
	if err := l.Reconfigure(&bad); !errors.Is(err, ErrInvalidOptions) {
		t.Fatalf("an invalid Reconfigure: %v, want ErrInvalidOptions", err)
	}
	if _, _, err := l.Append(makeBatch(t, "after", 200, 1, 2000, 1)); err != nil {
		t.Fatalf("after a refused Reconfigure: %v (the old settings must hold)", err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Reconfigure(&next); !errors.Is(err, ErrClosed) {
		t.Fatalf("Reconfigure after Close: %v, want ErrClosed", err)
	}
}

// TestReconfigureToFlushSyncKeepsHighWatermark: records visible under
// FlushNone stay visible when the policy becomes FlushSync, before any
// fsync; the next append under FlushSync is acknowledged durable.
func TestReconfigureToFlushSyncKeepsHighWatermark(t *testing.T) {
	o := &Options{FlushPolicy: FlushNone, RetentionCheckInterval: -1, noBackground: true}
	l := openT(t, nil, t.TempDir(), o, State{})
	for i := range 3 {
		if _, _, err := l.Append(makeBatch(t, "none", int64(i), 1, 10, 1)); err != nil {
			t.Fatal(err)
		}
	}
	if hw, dur := l.HighWatermark(), l.DurableEndOffset(); hw != 3 || dur != 0 {
		t.Fatalf("FlushNone: high watermark %d, durable end %d, want 3 and 0", hw, dur)
	}
	next := *o
	next.FlushPolicy = FlushSync
	if err := l.Reconfigure(&next); err != nil {
		t.Fatal(err)
	}
	if hw := l.HighWatermark(); hw != 3 {
		t.Fatalf("after FlushSync went on: high watermark %d, want it kept at 3", hw)
	}
	syncs := l.Stats().Syncs
	if _, _, err := l.Append(makeBatch(t, "sync", 3, 1, 10, 1)); err != nil {
		t.Fatal(err)
	}
	if hw, dur := l.HighWatermark(), l.DurableEndOffset(); hw != 4 || dur != 4 || l.Stats().Syncs == syncs {
		t.Fatalf("an append under FlushSync: high watermark %d, durable end %d, fsyncs %d, want 4, 4 and one more", hw, dur, l.Stats().Syncs-syncs)
	}
}

// TestReconfigureWhileAppending runs appenders and a reader while another
// goroutine keeps changing every live setting (run it with -race): every
// append succeeds with contiguous offsets, the high watermark never moves
// back, and the log reads back whole, before and after a reopen.
func TestReconfigureWhileAppending(t *testing.T) {
	dir := t.TempDir()
	o := &Options{SegmentBytes: 8192, FlushPolicy: FlushNone, RetentionCheckInterval: -1}
	l := openT(t, nil, dir, o, State{})
	settings := []func(*Options){
		func(o *Options) { o.FlushPolicy = FlushSync },
		func(o *Options) { o.SegmentBytes = 4096 },
		func(o *Options) { o.LogAppendTime = !o.LogAppendTime },
		func(o *Options) { o.FlushPolicy = FlushEveryN(3) },
		func(o *Options) { o.ReadPath = readpath.Sendfile },
		func(o *Options) { o.Compact = !o.Compact },
		func(o *Options) { o.FlushPolicy = FlushInterval(time.Millisecond) },
		func(o *Options) { o.SegmentBytes, o.MaxBatchBytes = 16384, 2000 },
		func(o *Options) { o.ReadPath = readpath.Mmap },
		func(o *Options) { o.FlushPolicy = FlushNone },
		func(o *Options) { o.SegmentAge = time.Millisecond },
		func(o *Options) { o.SegmentAge, o.MinCompactionLag = 0, time.Hour },
	}
	const appenders, perAppender = 4, 150
	var wg sync.WaitGroup
	done := make(chan struct{})
	errc := make(chan error, appenders+2)
	var offsets sync.Map
	for a := range appenders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perAppender {
				b := makeBatch(t, fmt.Sprintf("a%d", a), int64(a*perAppender+i)*3, 1+i%3, 100, 1) // unique keys: cleaning removes none
				first, last, err := l.Append(b)
				if err != nil {
					errc <- fmt.Errorf("appender %d, batch %d: %w", a, i, err)
					return
				}
				for off := first; off <= last; off++ {
					if _, dup := offsets.LoadOrStore(off, true); dup {
						errc <- fmt.Errorf("offset %d assigned twice", off)
						return
					}
				}
			}
		}()
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var bg sync.WaitGroup
	bg.Add(2)
	go func() { // the reconfigurer
		defer bg.Done()
		cur := *o
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			default:
			}
			settings[i%len(settings)](&cur)
			if err := l.Reconfigure(&cur); err != nil {
				errc <- fmt.Errorf("Reconfigure %d: %w", i, err)
				return
			}
		}
	}()
	go func() { // a reader of the high watermark
		defer bg.Done()
		last := int64(0)
		for {
			select {
			case <-done:
				return
			default:
			}
			hw := l.HighWatermark()
			if hw < last {
				errc <- fmt.Errorf("high watermark moved back from %d to %d", last, hw)
				return
			}
			last = hw
			if err := l.Wait(ctx, hw); err != nil && !errors.Is(err, context.Canceled) {
				errc <- fmt.Errorf("Wait: %w", err)
				return
			}
		}
	}()
	wg.Wait()
	close(done)
	cancel()
	bg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	total := l.LogEndOffset()
	n := 0
	offsets.Range(func(_, _ any) bool { n++; return true })
	if int64(n) != total {
		t.Fatalf("%d offsets assigned, the log ends at %d", n, total)
	}
	check := func(l *Log) {
		t.Helper()
		recs := readAll(t, l, 0)
		if int64(len(recs)) != total {
			t.Fatalf("read %d records, want %d", len(recs), total)
		}
		for i, r := range recs {
			if r.offset != int64(i) {
				t.Fatalf("record %d at offset %d", i, r.offset)
			}
		}
	}
	check(l)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l2 := openT(t, nil, dir, o, State{})
	check(l2)
}

// TestReconfigureIndexInterval: a new IndexIntervalBytes applies to the
// segments created after the change; the active segment keeps the
// interval it was created with, as a Kafka LogSegment does.
func TestReconfigureIndexInterval(t *testing.T) {
	dir := t.TempDir()
	o := &Options{SegmentBytes: 4096, FlushPolicy: FlushNone, RetentionCheckInterval: -1}
	l := openT(t, nil, dir, o, State{})
	appendUntilRoll := func() {
		t.Helper()
		rolls := l.Stats().Rolls
		for i := 0; l.Stats().Rolls == rolls; i++ {
			if i == 100 {
				t.Fatal("no roll after 100 batches")
			}
			if _, _, err := l.Append(makeBatch(t, "ix", int64(i), 2, 100, 1)); err != nil {
				t.Fatal(err)
			}
		}
	}
	appendUntilRoll() // segment 0, created at Open with the default 4096
	next := *o
	next.IndexIntervalBytes = 1
	if err := l.Reconfigure(&next); err != nil {
		t.Fatal(err)
	}
	appendUntilRoll() // segment 1 was active at the change: still 4096
	appendUntilRoll() // segment 2, created after it: every batch
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	bases := logBases(t, dir)
	if len(bases) < 4 {
		t.Fatalf("segments %v, want at least 4", bases)
	}
	entries := func(base int64) int64 {
		fi, err := os.Stat(segment.IndexPath(dir, base))
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size() / 8
	}
	for _, base := range bases[:2] {
		// 4096 bytes of segment hold less than an interval after the
		// first batch: no entry.
		if n := entries(base); n != 0 {
			t.Errorf("segment %d, created before the change: %d offset-index entries, want 0", base, n)
		}
	}
	// Each batch of 2 records of 100 bytes is about 290 bytes: a 4096-byte
	// segment holds about 14, each after the first with an entry.
	if n := entries(bases[2]); n < 10 {
		t.Errorf("segment %d, created after IndexIntervalBytes 1: %d offset-index entries, want one per batch after the first", bases[2], n)
	}
}

// logBases returns the base offsets of dir's .log files, ascending.
func logBases(t *testing.T, dir string) []int64 {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var bases []int64
	for _, de := range des {
		if b, suffix, ok := segment.ParseFileName(de.Name()); ok && suffix == segment.LogSuffix {
			bases = append(bases, b)
		}
	}
	slices.Sort(bases)
	return bases
}

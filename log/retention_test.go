package log

import (
	"bytes"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/foliolog/folio/readpath"
	"github.com/foliolog/folio/segment"
	"github.com/foliolog/folio/vfs/faultfs"
)

// fillSegments appends one batch per segment (SegmentBytes small enough that
// each batch rolls) with timestamps ts(i), and returns the segment bases.
func fillSegments(t testing.TB, l *Log, n int, ts func(i int) int64) []int64 {
	t.Helper()
	var bases []int64
	for i := 0; i < n; i++ {
		first, _, err := l.Append(makeBatch(t, "r", int64(i*2), 2, 300, ts(i)))
		if err != nil {
			t.Fatal(err)
		}
		bases = append(bases, first)
	}
	if got := l.Stats().Segments; got != n {
		t.Fatalf("%d segments, want one per batch (%d)", got, n)
	}
	return bases
}

func retentionOpts(now *time.Time, mu *sync.Mutex) *Options {
	return &Options{
		SegmentBytes:           700, // one ~700-byte batch per segment
		FlushPolicy:            FlushNone,
		RetentionCheckInterval: -1,
		Now: func() time.Time {
			mu.Lock()
			defer mu.Unlock()
			return *now
		},
	}
}

func TestRetentionByAge(t *testing.T) {
	var mu sync.Mutex
	now := time.UnixMilli(1_700_000_000_000)
	o := retentionOpts(&now, &mu)
	o.RetentionAge = time.Hour
	l := openT(t, nil, t.TempDir(), o, State{})
	hour := time.Hour.Milliseconds()
	// Segments 0-3 hold records from 5 hours ago, 4 from 30 minutes ago,
	// 5 again old (out of order), 6 is the active one and old too.
	old, recent := now.UnixMilli()-5*hour, now.UnixMilli()-hour/2
	stamps := []int64{old, old, old, old, recent, old, old}
	bases := fillSegments(t, l, len(stamps), func(i int) int64 { return stamps[i] })
	n, err := l.EnforceRetention(now)
	if err != nil || n != 4 {
		t.Fatalf("deleted %d segments (%v), want the 4 oldest", n, err)
	}
	if l.LogStartOffset() != bases[4] {
		t.Fatalf("log start %d, want %d", l.LogStartOffset(), bases[4])
	}
	if _, err := l.Read(bases[3], 100); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read of a deleted segment: %v", err)
	}
	if got := len(segmentFiles(t, l.Dir(), ".log")); got != 3 {
		t.Fatalf("%d .log files left, want 3", got)
	}
	// Once segment 4 expires, 5 goes too, but never the active one.
	n, err = l.EnforceRetention(now.Add(2 * time.Hour))
	if err != nil || n != 2 {
		t.Fatalf("deleted %d (%v), want 2", n, err)
	}
	if l.Stats().Segments != 1 || l.LogStartOffset() != bases[6] {
		t.Fatalf("segments %d start %d: the active segment must stay", l.Stats().Segments, l.LogStartOffset())
	}
	if got := readAll(t, l, bases[6]); len(got) != 2 {
		t.Fatalf("active segment reads %d records", len(got))
	}
}

func TestRetentionBySize(t *testing.T) {
	var mu sync.Mutex
	now := time.UnixMilli(1_000_000)
	o := retentionOpts(&now, &mu)
	o.RetentionAge = -1
	l := openT(t, nil, t.TempDir(), o, State{})
	bases := fillSegments(t, l, 8, func(int) int64 { return 1 })
	v, err := l.Read(0, 100)
	if err != nil {
		t.Fatal(err)
	}
	segSize := int64(v.Len())
	v.Release()
	// Keep at least 3 segments' worth: 8 segments, delete 5.
	l.SetRetention(3*segSize, -1)
	n, err := l.EnforceRetention(now)
	if err != nil || n != 5 {
		t.Fatalf("deleted %d (%v), want 5", n, err)
	}
	if l.LogStartOffset() != bases[5] {
		t.Fatalf("start %d, want %d", l.LogStartOffset(), bases[5])
	}
	// One byte less than 3 segments: now only 2 may stay... but the
	// active one never goes.
	l.SetRetention(1, -1)
	if n, err := l.EnforceRetention(now); err != nil || n != 2 {
		t.Fatalf("deleted %d (%v), want 2", n, err)
	}
}

func TestDeleteRecordsBefore(t *testing.T) {
	var mu sync.Mutex
	now := time.UnixMilli(1_000_000)
	o := retentionOpts(&now, &mu)
	dir := t.TempDir()
	l := openT(t, nil, dir, o, State{})
	bases := fillSegments(t, l, 6, func(int) int64 { return now.UnixMilli() })
	if _, err := l.DeleteRecordsBefore(l.HighWatermark() + 1); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("delete beyond the high watermark: %v", err)
	}
	// Offset 5 is inside segment 2 (offsets 4, 5): segments 0 and 1 go.
	start, err := l.DeleteRecordsBefore(5)
	if err != nil || start != 5 {
		t.Fatalf("start %d (%v), want 5", start, err)
	}
	if l.Stats().Segments != 4 {
		t.Fatalf("%d segments left, want 4", l.Stats().Segments)
	}
	if _, err := l.Read(4, 100); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read below the start offset: %v", err)
	}
	got := readAll(t, l, 5)
	if len(got) != 7 || got[0].offset != 5 {
		t.Fatalf("records from the start: %d, first %+v", len(got), got[0])
	}
	// Lower is a no-op.
	if start, err := l.DeleteRecordsBefore(2); err != nil || start != 5 {
		t.Fatalf("lower delete: %d %v", start, err)
	}
	// The start survives a reopen through the checkpoint, though its
	// segment does.
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	st := l.Checkpoint()
	if st.LogStartOffset != 5 {
		t.Fatalf("checkpoint %+v", st)
	}
	l2 := openT(t, nil, dir, o, st)
	if l2.LogStartOffset() != 5 {
		t.Fatalf("reopened start %d", l2.LogStartOffset())
	}
	if _, err := l2.Read(4, 100); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("deleted record readable after reopen: %v", err)
	}
	_ = bases
}

// TestReaderKeepsDeletedSegment: a view of a segment that retention deletes
// keeps returning the right bytes until released, on both read paths.
func TestReaderKeepsDeletedSegment(t *testing.T) {
	for _, kind := range []readpath.Kind{readpath.Mmap, readpath.Sendfile} {
		t.Run(kind.String(), func(t *testing.T) {
			var mu sync.Mutex
			now := time.UnixMilli(1_000_000)
			o := retentionOpts(&now, &mu)
			o.ReadPath = kind
			l := openT(t, nil, t.TempDir(), o, State{})
			fillSegments(t, l, 4, func(int) int64 { return 1 })
			v, err := l.Read(0, 1000)
			if err != nil {
				t.Fatal(err)
			}
			defer v.Release()
			var before []byte
			if err := readpath.Guard(func() error {
				b, err := v.Bytes()
				before = bytes.Clone(b)
				return err
			}); err != nil {
				t.Fatal(err)
			}
			if _, err := l.DeleteRecordsBefore(6); err != nil {
				t.Fatal(err)
			}
			if _, err := l.EnforceRetention(now); err != nil {
				t.Fatal(err)
			}
			if n := len(segmentFiles(t, l.Dir(), ".log")); n != 1 {
				t.Fatalf("%d .log files, want the segments deleted", n)
			}
			_, recs, err := decodeView(v, 0)
			if err != nil || len(recs) != 2 || recs[0].value != string(payload("r", 0, 300)) {
				t.Fatalf("view of a deleted segment: %v %+v", err, recs)
			}
			var buf bytes.Buffer
			if _, err := v.WriteTo(&buf); err != nil || !bytes.Equal(buf.Bytes(), before) {
				t.Fatalf("WriteTo of a deleted segment's view: %v, equal %v", err, bytes.Equal(buf.Bytes(), before))
			}
		})
	}
}

// TestRetentionRacesReaders: readers chasing the log start while retention
// deletes under them see records or ErrOffsetOutOfRange, never another
// error, and never a record below the start they were told.
func TestRetentionRacesReaders(t *testing.T) {
	var mu sync.Mutex
	now := time.UnixMilli(1_000_000)
	o := retentionOpts(&now, &mu)
	l := openT(t, nil, t.TempDir(), o, State{})
	fillSegments(t, l, 40, func(int) int64 { return 1 })
	var stop atomic.Bool
	var wg sync.WaitGroup
	for r := 0; r < 3; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				start := l.LogStartOffset()
				v, err := l.Read(start, 2000)
				if errors.Is(err, ErrOffsetOutOfRange) {
					continue
				}
				if err != nil {
					t.Errorf("read at the start %d: %v", start, err)
					return
				}
				_, recs, err := decodeView(v, start)
				v.Release()
				if err != nil || len(recs) == 0 || recs[0].offset != start {
					t.Errorf("read at %d: %v %d records", start, err, len(recs))
					return
				}
			}
		}()
	}
	for off := int64(2); off < 78; off += 2 {
		if _, err := l.DeleteRecordsBefore(off); err != nil {
			t.Fatal(err)
		}
	}
	stop.Store(true)
	wg.Wait()
	if l.Stats().Segments != 2 {
		t.Fatalf("%d segments left, want 2", l.Stats().Segments)
	}
}

// TestRetentionSchedule: the Log's own goroutine applies retention every
// RetentionCheckInterval, and Close stops it (goleak checks in TestMain).
func TestRetentionSchedule(t *testing.T) {
	fsys := faultfs.New()
	deleted := make(chan string, 64)
	fsys.SetHook(func(op faultfs.Op) error {
		if op.Kind == faultfs.OpRename && strings.HasSuffix(op.NewPath, segment.LogSuffix+segment.DeletedSuffix) {
			deleted <- filepath.Base(op.Path)
		}
		return nil
	})
	l := openT(t, fsys, t.TempDir(), &Options{
		SegmentBytes:           700,
		FlushPolicy:            FlushNone,
		RetentionAge:           time.Millisecond,
		RetentionCheckInterval: 5 * time.Millisecond,
	}, State{})
	for i := int64(0); i < 3; i++ { // timestamps from 1970, one batch per segment
		if _, _, err := l.Append(makeBatch(t, "r", i*2, 2, 300, 1)); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 2; i++ {
		waitFor(t, deleted, "scheduled retention")
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if l.LogStartOffset() != 4 {
		t.Fatalf("start %d after scheduled retention, want 4", l.LogStartOffset())
	}
}

// TestRetentionStopsAtHighWatermark: as in Kafka, retention deletes a
// segment only once all of it is below the high watermark.
func TestRetentionStopsAtHighWatermark(t *testing.T) {
	var mu sync.Mutex
	now := time.UnixMilli(1_700_000_000_000)
	o := retentionOpts(&now, &mu)
	o.RetentionAge = time.Millisecond
	o.ExternalHighWatermark = true
	l := openT(t, nil, t.TempDir(), o, State{})
	bases := fillSegments(t, l, 6, func(int) int64 { return 1 })
	if err := l.SetHighWatermark(bases[2] + 1); err != nil {
		t.Fatal(err)
	}
	n, err := l.EnforceRetention(now)
	if err != nil || n != 2 || l.LogStartOffset() != bases[2] {
		t.Fatalf("deleted %d (%v), start %d; want 2 deleted and the start at %d", n, err, l.LogStartOffset(), bases[2])
	}
	if err := l.SetHighWatermark(l.LogEndOffset()); err != nil {
		t.Fatal(err)
	}
	if n, err := l.EnforceRetention(now); err != nil || n != 3 {
		t.Fatalf("deleted %d (%v) once visible, want 3", n, err)
	}
}

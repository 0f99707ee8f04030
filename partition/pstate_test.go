package partition

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/foliolog/folio/log"
	"github.com/foliolog/folio/record"
	"github.com/foliolog/folio/topic"
	"github.com/foliolog/folio/vfs/faultfs"
)

// TestProducerStateAcrossReopen: after a clean close with a snapshot, after
// a close without one, and after a power cut (a replay of the log), a
// retried batch still gets its original offsets and a gap is still
// refused; a snapshot ahead of the log, or damaged, is ignored for a full
// replay.
func TestProducerStateAcrossReopen(t *testing.T) {
	ctx := context.Background()
	cfg := topic.Config{Flush: log.FlushSync}
	for _, how := range []string{"snapshot", "no snapshot", "power cut", "snapshot ahead", "damaged snapshot"} {
		t.Run(how, func(t *testing.T) {
			fs := faultfs.New()
			dir := t.TempDir()
			snaps := &memSnapshots{}
			var logged logBuffer
			opts := &Options{Snapshots: snaps, RetentionCheckInterval: -1, Logger: logged.logger()}
			p := openT(t, fs, dir, cfg, log.State{}, opts)
			var last AppendResult
			var err error
			for i := range 4 {
				if last, err = p.AppendBatch(ctx, batchOf(t, record.CodecNone, 9, 2, int32(i*2), 2)); err != nil {
					t.Fatal(err)
				}
			}
			switch how {
			case "power cut":
				fs.Crash()
				_ = p.Close() // on dead handles: nothing more reaches the disk
				if err := fs.PowerCut(); err != nil {
					t.Fatal(err)
				}
			case "no snapshot":
				if err := p.Close(); err != nil {
					t.Fatal(err)
				}
			default:
				if how == "snapshot" {
					// Only the snapshot remembers the producer now.
					if err := p.DeleteRecordsBefore(p.HighWatermark()); err != nil {
						t.Fatal(err)
					}
				}
				if saved, err := p.SaveProducerState(); err != nil || !saved {
					t.Fatalf("SaveProducerState: %v, %v", saved, err)
				}
				if err := p.Close(); err != nil {
					t.Fatal(err)
				}
			}
			st := p.Checkpoint()
			switch how {
			case "snapshot ahead":
				// The snapshot saw records the log no longer holds.
				ahead := openT(t, nil, t.TempDir(), cfg, log.State{}, &Options{Snapshots: snaps, RetentionCheckInterval: -1})
				for i := range 6 {
					if _, err := ahead.AppendBatch(ctx, batchOf(t, record.CodecNone, 9, 2, int32(i*2), 2)); err != nil {
						t.Fatal(err)
					}
				}
				if _, err := ahead.SaveProducerState(); err != nil {
					t.Fatal(err)
				}
			case "damaged snapshot":
				snaps.data[len(snaps.data)/2] ^= 0x40
			case "power cut":
				st = log.State{} // a crash leaves no checkpoint
			}
			p = openT(t, fs, dir, cfg, st, opts)
			res, err := p.AppendBatch(ctx, batchOf(t, record.CodecNone, 9, 2, 6, 2))
			if err != nil || !res.Duplicate || res.BaseOffset != last.BaseOffset || res.LastOffset != last.LastOffset {
				t.Fatalf("retry after reopening: %+v, %v; want a duplicate of %+v", res, err, last)
			}
			if _, err := p.AppendBatch(ctx, batchOf(t, record.CodecNone, 9, 2, 9, 1)); !errors.Is(err, topic.ErrOutOfOrderSequence) {
				t.Fatalf("gap after reopening: %v", err)
			}
			ignored := strings.Contains(logged.String(), "producer-state snapshot")
			if want := how == "snapshot ahead" || how == "damaged snapshot"; ignored != want {
				t.Fatalf("snapshot ignored: %v, want %v; log:\n%s", ignored, want, logged.String())
			}
			if res, err := p.AppendBatch(ctx, batchOf(t, record.CodecNone, 9, 2, 8, 1)); err != nil || res.BaseOffset != 8 {
				t.Fatalf("next batch after reopening: %+v, %v", res, err)
			}
		})
	}
}

// TestSaveProducerState writes a snapshot only once the state was loaded,
// and only with a store.
func TestSaveProducerState(t *testing.T) {
	snaps := &memSnapshots{}
	p := openT(t, nil, t.TempDir(), topic.Config{Flush: flushNone}, log.State{}, &Options{Snapshots: snaps})
	if saved, err := p.SaveProducerState(); saved || err != nil || snaps.writes != 0 {
		t.Fatalf("before any idempotent append: saved %v, %v, %d writes", saved, err, snaps.writes)
	}
	if _, err := p.AppendBatch(context.Background(), batchOf(t, record.CodecNone, -1, 0, 0, 1)); err != nil {
		t.Fatal(err)
	}
	if saved, _ := p.SaveProducerState(); saved {
		t.Fatal("a non-idempotent append loaded producer state")
	}
	if _, err := p.AppendBatch(context.Background(), batchOf(t, record.CodecNone, 1, 0, 0, 1)); err != nil {
		t.Fatal(err)
	}
	if saved, err := p.SaveProducerState(); !saved || err != nil || snaps.writes != 1 {
		t.Fatalf("after an idempotent append: saved %v, %v, %d writes", saved, err, snaps.writes)
	}
	none := openT(t, nil, t.TempDir(), topic.Config{Flush: flushNone}, log.State{}, nil)
	if _, err := none.AppendBatch(context.Background(), batchOf(t, record.CodecNone, 1, 0, 0, 1)); err != nil {
		t.Fatal(err)
	}
	if saved, err := none.SaveProducerState(); saved || err != nil {
		t.Fatalf("without a store: saved %v, %v", saved, err)
	}
}

func TestProducerStateExpires(t *testing.T) {
	p := openT(t, nil, t.TempDir(), topic.Config{Flush: flushNone}, log.State{}, nil)
	if n := p.ExpireProducers(time.Now()); n != 0 {
		t.Fatalf("expired %d producers before any was loaded", n)
	}
	if _, err := p.AppendBatch(context.Background(), batchOf(t, record.CodecNone, 3, 0, 0, 1)); err != nil {
		t.Fatal(err)
	}
	if n := p.ExpireProducers(time.Now()); n != 0 {
		t.Fatalf("expired %d producers right away", n)
	}
	if n := p.ExpireProducers(time.Now().Add(topic.DefaultProducerExpiration + time.Hour)); n != 1 {
		t.Fatalf("expired %d producers after the expiration, want 1", n)
	}
	if p.Producers() != 0 {
		t.Fatalf("%d producers left", p.Producers())
	}
}

// TestProducerStateAcrossDamagedRange: a sealed segment whose batch framing
// is broken in the middle is a range the log reports and passes over
// (*log.DamagedRangeError). Rebuilding the producer state must pass over it
// too, not fail every idempotent append of the partition: a producer with
// batches after the damage is exact (a retry is a duplicate, a gap
// refused), and one whose batches may lie in the lost range is forgotten,
// so that its next batch is accepted (Kafka's rule for a producer whose
// batches are gone) instead of refused as out of order for ever.
func TestProducerStateAcrossDamagedRange(t *testing.T) {
	ctx := context.Background()
	cfg := topic.Config{SegmentBytes: 2048}
	dir := t.TempDir()
	p := openT(t, nil, dir, cfg, log.State{}, nil)
	const early, late = 7, 9 // producer ids
	var lastLate AppendResult
	var earlySeq, lateSeq int32
	for i := range 60 {
		if i < 15 { // its last batches fall in the range damaged below
			if _, err := p.AppendBatch(ctx, batchOf(t, record.CodecNone, early, 0, earlySeq, 2)); err != nil {
				t.Fatal(err)
			}
			earlySeq += 2
		}
		var err error
		if lastLate, err = p.AppendBatch(ctx, batchOf(t, record.CodecNone, late, 0, lateSeq, 2)); err != nil {
			t.Fatal(err)
		}
		lateSeq += 2
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	st := p.Checkpoint()
	// Break the magic of a batch in the middle of the second segment.
	segs, err := filepath.Glob(filepath.Join(dir, "t-0", "*.log"))
	if err != nil || len(segs) < 4 {
		t.Fatalf("segments %v, %v", segs, err)
	}
	sort.Strings(segs)
	data, err := os.ReadFile(segs[1])
	if err != nil {
		t.Fatal(err)
	}
	pos := 0
	for range 3 {
		n, err := record.CheckHeader(data[pos:])
		if err != nil {
			t.Fatal(err)
		}
		pos += n
	}
	data[pos+16] = 9 // magic
	if err := os.WriteFile(segs[1], data, 0o644); err != nil {
		t.Fatal(err)
	}

	var logged logBuffer
	p = openT(t, nil, dir, cfg, st, &Options{RetentionCheckInterval: -1, Logger: logged.logger()})
	// The early producer's last batches may lie in the lost range: its next
	// batch is accepted whatever its sequence says.
	if _, err := p.AppendBatch(ctx, batchOf(t, record.CodecNone, early, 0, earlySeq, 2)); err != nil {
		t.Fatalf("the early producer's next batch after the damage: %v", err)
	}
	if !strings.Contains(logged.String(), "damaged range") {
		t.Fatalf("the pass over the damage was not logged:\n%s", logged.String())
	}
	res, err := p.AppendBatch(ctx, batchOf(t, record.CodecNone, late, 0, lateSeq-2, 2))
	if err != nil || !res.Duplicate || res.BaseOffset != lastLate.BaseOffset {
		t.Fatalf("retry of the late producer's last batch: %+v, %v; want a duplicate of %+v", res, err, lastLate)
	}
	if _, err := p.AppendBatch(ctx, batchOf(t, record.CodecNone, late, 0, lateSeq+1, 1)); !errors.Is(err, topic.ErrOutOfOrderSequence) {
		t.Fatalf("a gap of the late producer: %v", err)
	}
	if _, err := p.AppendBatch(ctx, batchOf(t, record.CodecNone, late, 0, lateSeq, 2)); err != nil {
		t.Fatalf("the late producer's next batch: %v", err)
	}
}

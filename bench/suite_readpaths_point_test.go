package main

import (
	"errors"
	"io"
	"os"
	"slices"
	"testing"

	"github.com/foliolog/folio/record"
)

// TestPointReads: the drawn reads name the batch that holds each offset
// and the value a reader must find there, the same every time; both
// paths find it in every cache state this platform can make, and a read
// that finds anything else fails with ErrMismatch.
func TestPointReads(t *testing.T) {
	caches := []cacheState{warmCache}
	if coldSupported(t.TempDir()) {
		caches = append(caches, coldCache)
	}
	for _, plan := range []batchPlan{
		{RecSize: 100, BatchBytes: 16 << 10, Total: 200 << 10},
		{RecSize: 16 << 10, BatchBytes: 16 << 10, Total: 200 << 10}, // one record per batch
	} {
		ds, err := writeDataset(t.TempDir(), plan)
		if err != nil {
			t.Fatal(err)
		}
		values := valuesOf(t, ds)
		reads, err := pointReads(ds, 300)
		if err != nil {
			t.Fatal(err)
		}
		again, err := pointReads(ds, 300)
		if err != nil || !slices.Equal(reads, again) {
			t.Fatalf("%+v: a second draw differs (%v)", plan, err)
		}
		inside := 0
		for i, r := range reads {
			b := ds.Batches[r.Batch]
			if r.Offset < b.BaseOffset || r.Offset >= b.BaseOffset+int64(b.Records) {
				t.Fatalf("%+v: read %d of offset %d names batch %+v", plan, i, r.Offset, b)
			}
			if r.Want != values[r.Offset] {
				t.Fatalf("%+v: read %d of offset %d wants %x, the file holds %x", plan, i, r.Offset, r.Want, values[r.Offset])
			}
			if r.Offset != b.BaseOffset {
				inside++
			}
		}
		if plan.RecSize == 100 && inside < len(reads)/2 {
			t.Fatalf("%+v: only %d of %d reads land inside a batch: SkipBefore goes untested", plan, inside, len(reads))
		}
		for _, c := range caches {
			for _, p := range pointPaths {
				rr, err := pointRun(ds, p, reads, c)
				if err != nil {
					t.Fatalf("%+v, %s, %s: %v", plan, p, c, err)
				}
				if rr.Records != int64(len(reads)) || rr.Bytes < rr.Records*record.HeaderSize || rr.Elapsed <= 0 {
					t.Fatalf("%+v, %s, %s: run %+v", plan, p, c, rr)
				}
			}
		}
		wrong := slices.Clone(reads)
		wrong[len(wrong)/2].Want ^= 1
		for _, p := range pointPaths {
			if _, err := pointRun(ds, p, wrong, warmCache); !errors.Is(err, ErrMismatch) {
				t.Errorf("%+v, %s: a wrong value gives %v, want ErrMismatch", plan, p, err)
			}
		}
	}
}

// TestReadPointMisses: an offset the batch does not hold is a mismatch,
// not a record of another offset.
func TestReadPointMisses(t *testing.T) {
	ds, err := writeDataset(t.TempDir(), batchPlan{RecSize: 100, BatchBytes: 4 << 10, Total: 20 << 10})
	if err != nil {
		t.Fatal(err)
	}
	b := ds.Batches[1]
	for _, p := range pointPaths {
		src, err := openSource(ds, p)
		if err != nil {
			t.Fatal(err)
		}
		for _, off := range []int64{b.BaseOffset - 1, b.BaseOffset + int64(b.Records)} {
			if _, err := readPoint(src, p, b, off); !errors.Is(err, ErrMismatch) {
				t.Errorf("%s: offset %d in batch %+v gives %v, want ErrMismatch", p, off, b, err)
			}
		}
		// A span that cuts the batch short fails its checks.
		short := b
		short.Size--
		if _, err := readPoint(src, p, short, b.BaseOffset); !errors.Is(err, ErrMismatch) {
			t.Errorf("%s: a cut batch gives %v, want ErrMismatch", p, err)
		}
		src.Close()
	}
}

// valuesOf is touch() of every record's value by offset, read straight
// from the file.
func valuesOf(t *testing.T, ds *dataset) map[int64]uint64 {
	t.Helper()
	b, err := os.ReadFile(ds.Path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int64]uint64{}
	for {
		batch, rest, err := record.Parse(b)
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		it := batch.Records(nil)
		for it.Next() {
			out[it.Record().Offset()] = touch(it.Record().Value())
		}
		if err := it.Err(); err != nil {
			t.Fatal(err)
		}
		it.Close()
		b = rest
	}
}

// TestPointCountBoundsColdReads: a cold run reads at most a quarter of
// its dataset's batches, whatever the mode asks (-full's 1 MiB batches
// leave 512 in its file), and at least one; a warm run reads what the
// plan says.
func TestPointCountBoundsColdReads(t *testing.T) {
	for _, cfg := range []*config{{Mode: modeQuick, Scale: 1}, {Mode: modeDefault, Scale: 1}, {Mode: modeFull, Scale: 1}, {Mode: modeDefault, Scale: 0.05}} {
		plan := readPathsPlanFor(cfg)
		for _, bb := range plan.BatchBytes {
			ds := &dataset{Batches: make([]span, max(plan.DataBytes/int64(bb), 1))}
			cold := pointCount(plan, ds, coldCache)
			if cold < 1 || cold > max(len(ds.Batches)/4, 1) || cold > plan.ColdPointReads {
				t.Errorf("%s ×%g, %d-byte batches: %d cold reads of %d batches (plan %d)", cfg.Mode, cfg.Scale, bb, cold, len(ds.Batches), plan.ColdPointReads)
			}
			if warm := pointCount(plan, ds, warmCache); warm != plan.PointReads {
				t.Errorf("%s ×%g: %d warm reads, plan %d", cfg.Mode, cfg.Scale, warm, plan.PointReads)
			}
		}
	}
}

// TestReadPointChecksTheCRC: a byte changed in a record after the one
// read leaves that record's own bytes right, so only the batch's CRC-32C
// can tell; both paths must refuse the batch, as Folio's consumer does.
func TestReadPointChecksTheCRC(t *testing.T) {
	ds, err := writeDataset(t.TempDir(), batchPlan{RecSize: 100, BatchBytes: 4 << 10, Total: 20 << 10})
	if err != nil {
		t.Fatal(err)
	}
	b := ds.Batches[1]
	if b.Records < 2 {
		t.Fatalf("batch %+v holds one record: nothing after the one read", b)
	}
	f, err := os.OpenFile(ds.Path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	pos := b.Pos + int64(b.Size) - 10 // inside the last record's value
	one := make([]byte, 1)
	if _, err := f.ReadAt(one, pos); err != nil {
		t.Fatal(err)
	}
	one[0] ^= 0x40
	if _, err := f.WriteAt(one, pos); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	for _, p := range pointPaths {
		src, err := openSource(ds, p)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := readPoint(src, p, b, b.BaseOffset); !errors.Is(err, ErrMismatch) {
			t.Errorf("%s: a batch whose last record changed gives %v for its first, want ErrMismatch", p, err)
		}
		src.Close()
	}
}

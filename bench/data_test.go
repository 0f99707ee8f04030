package main

import (
	"errors"
	"hash/crc32"
	"io"
	"os"
	"testing"

	"github.com/foliolog/folio/record"
)

func TestWriteDataset(t *testing.T) {
	for _, plan := range []batchPlan{
		{RecSize: 100, BatchBytes: 16 << 10, Total: 200 << 10},
		{RecSize: 16 << 10, BatchBytes: 16 << 10, Total: 300 << 10}, // one record per batch
		{RecSize: 1 << 10, BatchBytes: 1 << 20, Total: 3 << 20},
	} {
		ds, err := writeDataset(t.TempDir(), plan)
		if err != nil {
			t.Fatal(err)
		}
		for _, fb := range []int{1, 64 << 10, 1 << 20} {
			if err := checkFetchPlan(ds, fetchPlan(ds.Batches, fb), fb); err != nil {
				t.Fatalf("%+v fetch %d: %v", plan, fb, err)
			}
		}
		b, err := os.ReadFile(ds.Path)
		if err != nil {
			t.Fatal(err)
		}
		if int64(len(b)) != ds.Size || ds.Size < plan.Total {
			t.Fatalf("%+v: file %d bytes, dataset says %d", plan, len(b), ds.Size)
		}
		if crc32.Checksum(b, castagnoli) != ds.CRC {
			t.Fatalf("%+v: CRC does not match the file", plan)
		}
		// Independent re-read: every batch valid, offsets dense from 0,
		// positions and sizes as recorded, values summing as recorded.
		var next, records int64
		var sum uint64
		rest := b
		for i := 0; ; i++ {
			batch, r, err := record.Parse(rest)
			if errors.Is(err, io.EOF) {
				if i != len(ds.Batches) {
					t.Fatalf("%d batches in file, %d recorded", i, len(ds.Batches))
				}
				break
			}
			if err != nil {
				t.Fatalf("batch %d: %v", i, err)
			}
			sp := ds.Batches[i]
			if sp.Pos != int64(len(b)-len(rest)) || sp.Size != len(batch) || int(batch.NumRecords()) != sp.Records {
				t.Fatalf("batch %d: span %+v, file has pos %d size %d records %d", i, sp, len(b)-len(rest), len(batch), batch.NumRecords())
			}
			if len(batch) > plan.BatchBytes && sp.Records > 1 {
				t.Fatalf("batch %d: %d bytes over the %d target with %d records", i, len(batch), plan.BatchBytes, sp.Records)
			}
			if batch.BaseOffset() != next || sp.BaseOffset != next {
				t.Fatalf("batch %d base offset %d, want %d", i, batch.BaseOffset(), next)
			}
			it := batch.Records(nil)
			for it.Next() {
				rec := it.Record()
				if len(rec.Value()) != plan.RecSize || !rec.KeyIsNull() {
					t.Fatalf("record %d: value %d bytes, key null %v", rec.Offset(), len(rec.Value()), rec.KeyIsNull())
				}
				sum += touch(rec.Value())
				records++
			}
			if err := it.Err(); err != nil {
				t.Fatal(err)
			}
			it.Close()
			next = batch.LastOffset() + 1
			rest = r
		}
		if records != ds.Records || sum != ds.ValueSum {
			t.Fatalf("%+v: re-read %d records sum %x, dataset says %d sum %x", plan, records, sum, ds.Records, ds.ValueSum)
		}
	}
	if _, err := writeDataset(t.TempDir(), batchPlan{RecSize: 1, BatchBytes: 10, Total: 1}); !errors.Is(err, ErrUsage) {
		t.Errorf("a batch smaller than a header was accepted: %v", err)
	}
}

func TestFetchPlan(t *testing.T) {
	spans := []span{{0, 100, 1, 0}, {100, 300, 1, 1}, {400, 50, 1, 2}, {450, 1000, 1, 3}, {1450, 10, 1, 4}}
	got := fetchPlan(spans, 400)
	want := []fetch{{0, 400}, {400, 50}, {450, 1000}, {1450, 10}}
	if len(got) != len(want) {
		t.Fatalf("plan %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("plan %v, want %v", got, want)
		}
	}
	// Invariants on a bigger plan: contiguous, whole batches, within the
	// limit unless a single batch exceeds it.
	var many []span
	pos := int64(0)
	for i := range 500 {
		sz := 50 + (i*7919)%3000
		many = append(many, span{pos, sz, 1, int64(i)})
		pos += int64(sz)
	}
	for _, limit := range []int{1, 100, 4096, 1 << 20} {
		plan := fetchPlan(many, limit)
		at := int64(0)
		for _, f := range plan {
			if f.Pos != at {
				t.Fatalf("limit %d: gap at %d", limit, at)
			}
			at += int64(f.Len)
		}
		if at != pos {
			t.Fatalf("limit %d: plan covers %d of %d bytes", limit, at, pos)
		}
	}
	if fetchPlan(nil, 10) != nil {
		t.Error("empty input gives fetches")
	}
}

func TestTouch(t *testing.T) {
	b := []byte{1, 0, 0, 0, 0, 0, 0, 0, 2, 3}
	if got := touch(b); got != 1+2+3 {
		t.Fatalf("touch = %d", got)
	}
	if touch(nil) != 0 {
		t.Fatal("touch(nil) != 0")
	}
}

package transport

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/foliolog/folio/log"
	"github.com/foliolog/folio/record"
	"github.com/foliolog/folio/topic"
)

// TestFramingCountsAsTheWalk: on real segment reads, on both read paths,
// the count from the view's Framing (recorded by the walk that framed it)
// equals a walk over the view's headers and the exact number of records
// at or after the fetch offset, for every fetch offset, including offsets
// inside a batch, and for read budgets that cut the view after one or a
// few batches.
func TestFramingCountsAsTheWalk(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, seed))
	for _, path := range []string{"mmap", "sendfile"} {
		be := newTestBackend(t)
		var cfg topic.Config
		if err := cfg.Set("read.path", path); err != nil {
			t.Fatal(err)
		}
		cfg.Partitions = 1
		cfg.SegmentBytes = 4096 // several segments: reads end at a segment's end
		name := "framing-" + path
		be.mustCreate(t, name, cfg)
		p, err := be.Partition(name, 0)
		if err != nil {
			t.Fatal(err)
		}
		bld, err := record.NewBuilder(nil)
		if err != nil {
			t.Fatal(err)
		}
		var end int64
		for range 40 {
			bld.Reset()
			n := 1 + rng.IntN(12)
			for range n {
				if err := bld.Append(record.Record{Value: make([]byte, rng.IntN(200)), Timestamp: 1}); err != nil {
					t.Fatal(err)
				}
			}
			batch, err := bld.Build(nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := p.AppendBatch(context.Background(), batch); err != nil {
				t.Fatal(err)
			}
			end += int64(n)
		}
		if err := p.Sync(); err != nil {
			t.Fatal(err)
		}
		for from := int64(0); from < end; from++ {
			for _, maxBytes := range []int{1, 300, 1500, 1 << 20} {
				v, err := p.Read(from, maxBytes, log.BoundHighWatermark)
				if err != nil {
					t.Fatalf("%s: read %d: %v", path, from, err)
				}
				fr, ok := v.Framing()
				if !ok {
					t.Fatalf("%s: read %d: the view has no Framing", path, from)
				}
				walkFr, walked, _ := walkHeaders(v, from)
				exact := exactRecords(t, v, from)
				if got := deliveredRecords(fr, from); got != walked || got != exact || fr != walkFr {
					t.Fatalf("%s: from %d, %d bytes: framing %+v counts %d; the walk %+v counts %d; the records hold %d",
						path, from, maxBytes, fr, got, walkFr, walked, exact)
				}
				v.Release()
			}
		}
	}
}

// exactRecords decodes v's batches and counts their records at or after from.
func exactRecords(t *testing.T, v batchHeaders, from int64) int {
	t.Helper()
	b := make([]byte, v.Len())
	if _, err := v.ReadAt(b, 0); err != nil {
		t.Fatal(err)
	}
	n := 0
	for len(b) > 0 {
		size, err := record.CheckHeader(b)
		if err != nil {
			t.Fatal(err)
		}
		it := record.Batch(b[:size]).Records(nil)
		for it.Next() {
			if it.Record().Offset() >= from {
				n++
			}
		}
		if err := it.Err(); err != nil {
			t.Fatal(err)
		}
		it.Close()
		b = b[size:]
	}
	return n
}

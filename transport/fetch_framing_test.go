package transport

import (
	"context"
	"fmt"
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
				if got := deliveredRecords(v, fr, from); got != walked || got != exact || fr != walkFr {
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

// TestFramingCountUnderCompaction: on a compacted partition, where
// compaction removed records inside batches, the count is still exactly
// the records delivered, for every fetch offset, also inside a thinned
// first batch, where the headers alone tell only a bound (see
// deliveredRecords).
func TestFramingCountUnderCompaction(t *testing.T) {
	be := newTestBackend(t)
	var cfg topic.Config
	if err := cfg.Set("cleanup.policy", "compact"); err != nil {
		t.Fatal(err)
	}
	cfg.Partitions = 1
	cfg.SegmentBytes = 1024
	be.mustCreate(t, "compacted", cfg)
	p, err := be.Partition("compacted", 0)
	if err != nil {
		t.Fatal(err)
	}
	bld, err := record.NewBuilder(nil)
	if err != nil {
		t.Fatal(err)
	}
	var end int64
	for i := range 30 {
		bld.Reset()
		for j := range 5 {
			// The first two keys of a batch are its own, the last three
			// repeat in every batch: compaction thins old batches at
			// their end, where a read from inside the batch counts
			// removed records.
			key := fmt.Appendf(nil, "k%d", j)
			if j < 2 {
				key = fmt.Appendf(nil, "u%d-%d", i, j)
			}
			if err := bld.Append(record.Record{Key: key, Value: make([]byte, 40), Timestamp: 1}); err != nil {
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
		end += 5
	}
	res, err := p.Compact(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("compaction: %+v", res)
	thinned, bound := 0, 0
	for from := int64(0); from < end; from++ {
		v, err := p.Read(from, 1<<20, log.BoundHighWatermark)
		if err != nil {
			t.Fatalf("read %d: %v", from, err)
		}
		fr, ok := v.Framing()
		if !ok {
			t.Fatalf("read %d: no Framing", from)
		}
		_, walked, _ := walkHeaders(v, from)
		exact := exactRecords(t, v, from)
		got := deliveredRecords(v, fr, from)
		if fr.FirstRecords < int32(fr.FirstLast-fr.FirstBase+1) && from > fr.FirstBase {
			thinned++
		}
		if walked > exact {
			bound++
		}
		if got != exact {
			t.Fatalf("from %d: framing %+v counts %d, the records hold %d (the headers' bound %d)", from, fr, got, exact, walked)
		}
		v.Release()
	}
	if thinned == 0 || bound == 0 {
		t.Fatalf("%d reads started inside a thinned batch, %d where the headers' bound is above the records: the test checks nothing of compaction", thinned, bound)
	}
	t.Logf("%d of %d reads started inside a batch compaction thinned; in %d the headers alone would have counted too many", thinned, end, bound)
}

package record

import (
	"errors"
	"testing"
)

// TestSkipBefore: skipping to each offset of a batch, compacted ones
// (offset gaps) and compressed ones included, leaves Next at the first
// record at or beyond it, with the records after it decoded exactly as a
// full iteration decodes them.
func TestSkipBefore(t *testing.T) {
	rng := testRand(t)
	for _, c := range allCodecs {
		t.Run(c.String(), func(t *testing.T) {
			recs := randRecords(rng, 40, 1_700_000_000_000)
			// Every third offset delta is left out, as after compaction.
			b := mustBuilder(t, c)
			for i, r := range recs {
				d := int32(i + i/2)
				if err := b.AppendAt(d, r); err != nil {
					t.Fatal(err)
				}
			}
			batch, err := b.Build(nil)
			if err != nil {
				t.Fatal(err)
			}
			all := decodeAll(t, batch, nil)
			base := batch.BaseOffset()
			for target := base - 1; target <= batch.LastOffset()+1; target++ {
				it := batch.Records(nil)
				it.SkipBefore(target)
				var got []decoded
				for it.Next() {
					r := it.Record()
					d := decoded{Offset: r.Offset(), Timestamp: r.Timestamp(), Key: cloneNullable(r.Key()), Value: cloneNullable(r.Value())}
					for h := r.Headers(); h.Next(); {
						d.Headers = append(d.Headers, Header{Key: string(h.Key()), Value: cloneNullable(h.Value())})
					}
					got = append(got, d)
				}
				if err := it.Err(); err != nil {
					t.Fatalf("skip to %d: %v", target, err)
				}
				it.Close()
				var want []decoded
				for _, d := range all {
					if d.Offset >= target {
						want = append(want, d)
					}
				}
				if len(got) != len(want) {
					t.Fatalf("skip to %d: %d records, want %d", target, len(got), len(want))
				}
				for i := range want {
					g, w := got[i], want[i]
					if g.Offset != w.Offset || g.Timestamp != w.Timestamp || !sameBytes(g.Key, w.Key) || !sameBytes(g.Value, w.Value) || len(g.Headers) != len(w.Headers) {
						t.Fatalf("skip to %d: record %d is %+v, want %+v", target, i, g, w)
					}
				}
			}
		})
	}
}

// TestSkipBeforeCorrupt: a skipped record with bad framing or a bad offset
// delta stops the iterator with ErrCorrupt, as decoding it would.
func TestSkipBeforeCorrupt(t *testing.T) {
	attr := []byte{0}
	good := rec(attr, vi(0), vi(0), vi(1), []byte("k"), vi(1), []byte("v"), vi(0))
	second := rec(attr, vi(0), vi(1), vi(1), []byte("k"), vi(1), []byte("v"), vi(0))
	cases := []struct {
		name  string
		batch Batch
	}{
		{"record length past end", rawBatch(CodecNone, 2, 1, cat(vi(40), good[1:]))},
		{"record length negative", rawBatch(CodecNone, 2, 1, cat(vi(-3), good[1:], []byte{0, 0}))},
		{"overlong timestamp delta", rawBatch(CodecNone, 2, 1, rec(attr, []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0}, vi(0), vi(-1), vi(-1), vi(0)))},
		{"offset delta past last", rawBatch(CodecNone, 2, 1, cat(rec(attr, vi(0), vi(5), vi(-1), vi(-1), vi(0)), second))},
		{"offset delta repeated", rawBatch(CodecNone, 3, 2, cat(good, good, second))},
		{"truncated varint", rawBatch(CodecNone, 2, 1, []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80})},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.batch.Validate(); err != nil {
				t.Fatalf("the test batch itself is invalid: %v", err)
			}
			it := tc.batch.Records(nil)
			defer it.Close()
			it.SkipBefore(tc.batch.LastOffset())
			if it.Next() {
				t.Fatalf("Next after a bad skipped record returned %+v", it.Record())
			}
			if err := it.Err(); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v, want ErrCorrupt", err)
			}
		})
	}
}

package record

import (
	"bytes"
	"flag"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

var seedFlag = flag.Uint64("seed", 0, "seed for randomized record tests; 0 picks one from the clock")

// testRand returns a generator whose seed the test prints, so a failure can
// be replayed with -seed.
func testRand(t testing.TB) *rand.Rand {
	t.Helper()
	seed := *seedFlag
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (replay with -seed=%d)", seed, seed)
	return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
}

var allCodecs = []Codec{CodecNone, CodecGzip, CodecSnappy, CodecLZ4, CodecZstd}

// randRecords makes n records mixing null and empty keys and values,
// headers with null and empty values, and timestamps around base.
func randRecords(rng *rand.Rand, n int, base int64) []Record {
	recs := make([]Record, n)
	for i := range recs {
		r := &recs[i]
		r.Timestamp = base + rng.Int64N(10_000) - 5_000
		switch rng.IntN(4) {
		case 0: // null key
		case 1:
			r.Key = []byte{}
		default:
			r.Key = randBytes(rng, rng.IntN(24))
		}
		switch rng.IntN(5) {
		case 0: // tombstone
		case 1:
			r.Value = []byte{}
		default:
			r.Value = randBytes(rng, rng.IntN(300))
		}
		for range rng.IntN(4) {
			h := Header{Key: fmt.Sprintf("h%d", rng.IntN(100))}
			switch rng.IntN(3) {
			case 0:
			case 1:
				h.Value = []byte{}
			default:
				h.Value = randBytes(rng, rng.IntN(16))
			}
			r.Headers = append(r.Headers, h)
		}
	}
	return recs
}

// randBytes is compressible but not trivially so: words from a small
// alphabet, like typical payloads.
func randBytes(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = "abcdefgh {}:,\"0123"[rng.IntN(18)]
	}
	return b
}

func mustBuilder(t testing.TB, c Codec) *Builder {
	t.Helper()
	b, err := NewBuilder(&BuilderOptions{Codec: c})
	if err != nil {
		t.Fatalf("NewBuilder(%s): %v", c, err)
	}
	return b
}

func mustBuild(t testing.TB, c Codec, recs []Record, set func(*Builder)) Batch {
	t.Helper()
	b := mustBuilder(t, c)
	if set != nil {
		set(b)
	}
	for i, r := range recs {
		if err := b.Append(r); err != nil {
			t.Fatalf("Append record %d: %v", i, err)
		}
	}
	batch, err := b.Build(nil)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	return batch
}

// decoded is a record read back, copied out of the iterator's buffers.
type decoded struct {
	Offset    int64
	Timestamp int64
	Key       []byte
	Value     []byte
	Headers   []Header
}

func decodeAll(t testing.TB, b Batch, opts *DecodeOptions) []decoded {
	t.Helper()
	out, err := tryDecodeAll(b, opts)
	if err != nil {
		t.Fatalf("decoding batch: %v", err)
	}
	return out
}

func tryDecodeAll(b Batch, opts *DecodeOptions) ([]decoded, error) {
	it := b.Records(opts)
	defer it.Close()
	var out []decoded
	for it.Next() {
		r := it.Record()
		d := decoded{Offset: r.Offset(), Timestamp: r.Timestamp(), Key: cloneNullable(r.Key()), Value: cloneNullable(r.Value())}
		for h := r.Headers(); h.Next(); {
			d.Headers = append(d.Headers, Header{Key: string(h.Key()), Value: cloneNullable(h.Value())})
		}
		out = append(out, d)
	}
	return out, it.Err()
}

func cloneNullable(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte{}, b...)
}

// sameBytes compares contents and nullness.
func sameBytes(a, b []byte) bool {
	return (a == nil) == (b == nil) && bytes.Equal(a, b)
}

// checkDecoded compares what was read back to what was appended, given the
// batch's base offset and, for log-append-time batches, the append time.
func checkDecoded(t testing.TB, want []Record, got []decoded, baseOffset int64, appendTime *int64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("read %d records, appended %d", len(got), len(want))
	}
	for i := range want {
		w, g := &want[i], &got[i]
		ts := w.Timestamp
		if appendTime != nil {
			ts = *appendTime
		}
		if g.Offset != baseOffset+int64(i) || g.Timestamp != ts {
			t.Fatalf("record %d: offset %d ts %d, want %d ts %d", i, g.Offset, g.Timestamp, baseOffset+int64(i), ts)
		}
		if !sameBytes(g.Key, w.Key) || !sameBytes(g.Value, w.Value) {
			t.Fatalf("record %d: key %q (nil %v) value %q (nil %v), want %q (nil %v) %q (nil %v)",
				i, g.Key, g.Key == nil, g.Value, g.Value == nil, w.Key, w.Key == nil, w.Value, w.Value == nil)
		}
		if len(g.Headers) != len(w.Headers) {
			t.Fatalf("record %d: %d headers, want %d", i, len(g.Headers), len(w.Headers))
		}
		for j := range w.Headers {
			if g.Headers[j].Key != w.Headers[j].Key || !sameBytes(g.Headers[j].Value, w.Headers[j].Value) {
				t.Fatalf("record %d header %d: %q=%q, want %q=%q", i, j, g.Headers[j].Key, g.Headers[j].Value, w.Headers[j].Key, w.Headers[j].Value)
			}
		}
	}
}

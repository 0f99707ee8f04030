package record

import (
	"encoding/binary"
	"errors"
	"math"
	"runtime/metrics"
	"testing"
)

// rawBatch wraps a hand-made records section in a valid header, so tests
// can put exactly the bytes they mean to in front of the decoder.
func rawBatch(codec Codec, count, lastDelta int32, section []byte) Batch {
	b := make([]byte, HeaderSize, HeaderSize+len(section))
	be := binary.BigEndian
	be.PutUint32(b[offLeaderEpoch:], math.MaxUint32)
	b[offMagic] = Magic
	be.PutUint16(b[offAttributes:], uint16(codec))
	be.PutUint32(b[offLastOffsetDelta:], uint32(lastDelta))
	be.PutUint64(b[offProducerID:], math.MaxUint64)
	be.PutUint16(b[offProducerEpoch:], math.MaxUint16)
	be.PutUint32(b[offBaseSequence:], math.MaxUint32)
	be.PutUint32(b[offRecordCount:], uint32(count))
	b = append(b, section...)
	be.PutUint32(b[offLength:], uint32(len(b)-LogOverhead))
	Batch(b).updateCRC()
	return Batch(b)
}

// rec encodes one record by hand: fields given as already-encoded bytes so
// a case can make any one of them wrong.
func rec(body ...[]byte) []byte {
	var n []byte
	for _, p := range body {
		n = append(n, p...)
	}
	return append(appendVarint(nil, int32(len(n))), n...)
}

func vi(v int32) []byte { return appendVarint(nil, v) }

func cat(parts ...[]byte) []byte {
	var out []byte
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func TestRecordIterCorrupt(t *testing.T) {
	attr := []byte{0}
	good := rec(attr, vi(0), vi(0), vi(1), []byte("k"), vi(1), []byte("v"), vi(0))
	cases := []struct {
		name    string
		batch   Batch
		tooBig  bool
		unknown bool
	}{
		{"count over records", rawBatch(CodecNone, 2, 1, good), false, false},
		{"count under records", rawBatch(CodecNone, 1, 1, cat(good, rec(attr, vi(0), vi(1), vi(-1), vi(-1), vi(0)))), false, false},
		{"count absurd", rawBatch(CodecNone, math.MaxInt32, math.MaxInt32, good), false, false},
		{"trailing garbage", rawBatch(CodecNone, 1, 0, cat(good, []byte{1, 2, 3})), false, false},
		{"record length past end", rawBatch(CodecNone, 1, 0, cat(vi(40), good[1:])), false, false},
		{"record length negative", rawBatch(CodecNone, 1, 0, cat(vi(-3), good[1:], []byte{0, 0})), false, false},
		{"record length short of body", rawBatch(CodecNone, 1, 0, cat(vi(int32(len(good)-2)), good[1:])), false, false},
		{"key length past record", rawBatch(CodecNone, 1, 0, rec(attr, vi(0), vi(0), vi(100), []byte("k"), vi(1), []byte("v"), vi(0))), false, false},
		{"key length -2", rawBatch(CodecNone, 1, 0, rec(attr, vi(0), vi(0), vi(-2), vi(1), []byte("v"), vi(0))), false, false},
		{"value length past record", rawBatch(CodecNone, 1, 0, rec(attr, vi(0), vi(0), vi(-1), vi(9), []byte("v"), vi(0))), false, false},
		{"header count absurd", rawBatch(CodecNone, 1, 0, rec(attr, vi(0), vi(0), vi(-1), vi(-1), vi(math.MaxInt32))), false, false},
		{"header count negative", rawBatch(CodecNone, 1, 0, rec(attr, vi(0), vi(0), vi(-1), vi(-1), vi(-1))), false, false},
		{"header key null", rawBatch(CodecNone, 1, 0, rec(attr, vi(0), vi(0), vi(-1), vi(-1), vi(1), vi(-1), vi(-1))), false, false},
		{"header value past record", rawBatch(CodecNone, 1, 0, rec(attr, vi(0), vi(0), vi(-1), vi(-1), vi(1), vi(1), []byte("h"), vi(5))), false, false},
		{"bytes after headers", rawBatch(CodecNone, 1, 0, rec(attr, vi(0), vi(0), vi(-1), vi(-1), vi(0), []byte{7})), false, false},
		{"offset delta past last", rawBatch(CodecNone, 1, 0, rec(attr, vi(0), vi(1), vi(-1), vi(-1), vi(0))), false, false},
		{"offset delta negative", rawBatch(CodecNone, 1, 0, rec(attr, vi(0), vi(-1), vi(-1), vi(-1), vi(0))), false, false},
		{"offset delta repeated", rawBatch(CodecNone, 2, 1, cat(good, good)), false, false},
		{"overlong varint", rawBatch(CodecNone, 1, 0, rec(attr, []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0}, vi(0), vi(-1), vi(-1), vi(0))), false, false},
		{"varint fifth byte too big", rawBatch(CodecNone, 1, 0, rec(attr, vi(0), vi(0), []byte{0x82, 0x80, 0x80, 0x80, 0x10}, vi(-1), vi(0))), false, false},
		{"truncated varint", rawBatch(CodecNone, 1, 0, []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80}), false, false},
		{"codec 5", rawBatch(5, 1, 0, good), false, true},
		{"codec 7", rawBatch(7, 1, 0, good), false, true},
		{"gzip garbage", rawBatch(CodecGzip, 1, 0, []byte("not gzip at all")), false, false},
		{"snappy garbage", rawBatch(CodecSnappy, 1, 0, []byte{0xff, 0xff, 0xff, 0xff, 0x0f, 1, 2}), true, false},
		{"xerial truncated block", rawBatch(CodecSnappy, 1, 0, cat(xerialMagic, []byte{0, 0, 0, 1, 0, 0, 0, 1}, []byte{0, 0, 0, 9, 1})), false, false},
		{"lz4 garbage", rawBatch(CodecLZ4, 1, 0, []byte{0x04, 0x22, 0x4d, 0x18, 0xff, 0xff, 0xff}), false, false},
		{"zstd garbage", rawBatch(CodecZstd, 1, 0, []byte{0x28, 0xb5, 0x2f, 0xfd, 0xff, 0xff, 0xff}), false, false},
		{"records missing after compression", rawBatch(CodecZstd, 1, 0, compressOrDie(t, CodecZstd, nil)), false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.batch.Validate(); err != nil {
				t.Fatalf("the test batch itself is invalid: %v", err)
			}
			_, err := tryDecodeAll(tc.batch, nil)
			switch {
			case tc.tooBig:
				if !errors.Is(err, ErrTooLarge) {
					t.Fatalf("error %v, want ErrTooLarge", err)
				}
			case !errors.Is(err, ErrCorrupt):
				t.Fatalf("error %v, want ErrCorrupt", err)
			}
			if tc.unknown && !errors.Is(err, ErrUnknownCodec) {
				t.Fatalf("error %v, want ErrUnknownCodec too", err)
			}
		})
	}
}

func compressOrDie(t *testing.T, c Codec, src []byte) []byte {
	t.Helper()
	out, err := compress(nil, src, c, 0)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestRecordIterHeaderChecks(t *testing.T) {
	recs := []Record{{Key: []byte("k"), Value: []byte("v"), Timestamp: 3}}
	batch := mustBuild(t, CodecNone, recs, nil)

	bad := batch.Clone()
	bad[offMagic] = 1
	if _, err := tryDecodeAll(bad, nil); !errors.Is(err, ErrCorrupt) {
		t.Errorf("magic 1: %v", err)
	}
	bad = batch.Clone()
	bad[len(bad)-1] ^= 0xff
	if _, err := tryDecodeAll(bad, nil); !errors.Is(err, ErrCorrupt) {
		t.Errorf("flipped byte under the CRC: %v", err)
	}
	// SkipCRC trusts the caller: a changed value byte goes through.
	bad = batch.Clone()
	bad[len(bad)-2] = 'X' // the value byte; the last is the header count
	got, err := tryDecodeAll(bad, &DecodeOptions{SkipCRC: true})
	if err != nil || len(got) != 1 || string(got[0].Value) != "X" {
		t.Errorf("SkipCRC: %v %+v", err, got)
	}
	if _, err := tryDecodeAll(batch[:len(batch)-1], nil); !errors.Is(err, ErrCorrupt) {
		t.Errorf("one byte short of the length field: %v", err)
	}
	if _, err := tryDecodeAll(batch[:HeaderSize-1], nil); !errors.Is(err, ErrShortBatch) {
		t.Errorf("short header: %v", err)
	}
	if _, err := tryDecodeAll(batch, &DecodeOptions{MaxBatchBytes: len(batch) - 1}); !errors.Is(err, ErrTooLarge) {
		t.Errorf("over MaxBatchBytes: %v", err)
	}
	if _, err := tryDecodeAll(batch, &DecodeOptions{MaxBatchBytes: len(batch)}); err != nil {
		t.Errorf("at MaxBatchBytes: %v", err)
	}
	for _, o := range []DecodeOptions{{MaxBatchBytes: -1}, {MaxDecompressedBytes: -1}, {MaxBatchBytes: math.MaxInt32 + 13}} {
		_, err := tryDecodeAll(batch, &o)
		if !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("%+v: %v, want ErrInvalidOptions", o, err)
		}
	}
}

func TestRecordIterCloseAndAll(t *testing.T) {
	rng := testRand(t)
	recs := randRecords(rng, 10, 1000)
	for _, c := range allCodecs {
		batch := mustBuild(t, c, recs, nil)
		it := batch.Records(nil)
		if !it.Next() {
			t.Fatalf("%s: no first record: %v", c, it.Err())
		}
		it.Close()
		it.Close()
		if it.Next() || it.Err() != nil {
			t.Fatalf("%s: Next after Close: err %v", c, it.Err())
		}

		it = batch.Records(nil)
		n := 0
		for r, err := range it.All() {
			if err != nil {
				t.Fatal(err)
			}
			if r.Offset() != int64(n) || !sameBytes(r.Value(), recs[n].Value) {
				t.Fatalf("%s: All record %d offset %d", c, n, r.Offset())
			}
			n++
			if n == 4 {
				break
			}
		}
		// Breaking out of All leaves the iterator where it was.
		if !it.Next() || it.Record().Offset() != 4 {
			t.Fatalf("%s: after break, Next gives offset %d", c, it.Record().Offset())
		}
		it.Close()
	}

	bad := rawBatch(CodecNone, 2, 1, cat(
		rec([]byte{0}, vi(0), vi(0), vi(-1), vi(-1), vi(0)),
		rec([]byte{0}, vi(0), vi(1), vi(50), vi(-1), vi(0)), // key length past the record
	))
	it := bad.Records(nil)
	var seen, errs int
	for _, err := range it.All() {
		if err != nil {
			errs++
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("All yielded %v", err)
			}
		} else {
			seen++
		}
	}
	if seen != 1 || errs != 1 {
		t.Fatalf("All over a batch with one good record and a missing one: %d records, %d errors", seen, errs)
	}
}

func TestHeaderLookup(t *testing.T) {
	batch := mustBuild(t, CodecNone, []Record{{Timestamp: 1, Headers: []Header{
		{Key: "a", Value: []byte("1")}, {Key: "n"}, {Key: "a", Value: []byte("2")},
	}}}, nil)
	it := batch.Records(nil)
	defer it.Close()
	if !it.Next() {
		t.Fatal(it.Err())
	}
	r := it.Record()
	if r.NumHeaders() != 3 {
		t.Fatalf("NumHeaders %d", r.NumHeaders())
	}
	if v, ok := r.HeaderValue("a"); !ok || string(v) != "1" {
		t.Fatalf("HeaderValue(a) = %q %v, want the first", v, ok)
	}
	if v, ok := r.HeaderValue("n"); !ok || v != nil {
		t.Fatalf("HeaderValue(n) = %q %v, want a null value", v, ok)
	}
	if _, ok := r.HeaderValue("zz"); ok {
		t.Fatal("HeaderValue found a missing key")
	}
	var zero RecordView
	if h := zero.Headers(); h.Next() || zero.Key() != nil || !zero.KeyIsNull() || !zero.ValueIsNull() {
		t.Fatal("a zero RecordView is not empty")
	}
}

var sink int

func TestIterationAllocatesNothing(t *testing.T) {
	rng := testRand(t)
	batch := mustBuild(t, CodecNone, randRecords(rng, 200, 1_700_000_000_000), nil)
	opts := &DecodeOptions{}
	allocs := testing.AllocsPerRun(50, func() {
		it := batch.Records(opts)
		for it.Next() {
			r := it.Record()
			sink += len(r.Key()) + len(r.Value()) + int(r.Offset()) + int(r.Timestamp())
			for h := r.Headers(); h.Next(); {
				sink += len(h.Key()) + len(h.Value())
			}
		}
		if it.Err() != nil {
			t.Fatal(it.Err())
		}
		it.Close()
	})
	if allocs != 0 {
		t.Fatalf("iterating an uncompressed batch allocated %v times per run", allocs)
	}
	allocs = testing.AllocsPerRun(50, func() {
		it := batch.Records(nil)
		for r, err := range it.All() {
			if err != nil {
				t.Fatal(err)
			}
			sink += len(r.Value())
		}
		it.Close()
	})
	if allocs != 0 {
		t.Fatalf("ranging over All allocated %v times per run", allocs)
	}
}

// heapAllocated reads the runtime's running total of heap bytes allocated,
// without stopping the world as ReadMemStats would.
func heapAllocated() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// A compressed batch decompresses into a pooled buffer: once warm, decoding
// it again allocates far less than its decompressed size. The least any
// one of many decodes allocated is what counts: the race detector makes
// sync.Pool drop a random share of what is put back, so some decodes
// start cold, but without pooling every one would allocate the whole
// section.
func TestDecompressionReusesBuffers(t *testing.T) {
	rng := testRand(t)
	recs := randRecords(rng, 2000, 1_700_000_000_000)
	for _, c := range allCodecs[1:] {
		batch := mustBuild(t, c, recs, nil)
		size := mustBuild(t, CodecNone, recs, nil).Size() - HeaderSize
		decode := func() {
			it := batch.Records(nil)
			for it.Next() {
				sink += len(it.Record().Value())
			}
			if it.Err() != nil {
				t.Fatal(it.Err())
			}
			it.Close()
		}
		decode()
		least := uint64(math.MaxUint64)
		for range 50 {
			before := heapAllocated()
			decode()
			least = min(least, heapAllocated()-before)
		}
		t.Logf("%s: %d bytes decompressed, at least %d bytes allocated per decode", c, size, least)
		if least > uint64(size/16) {
			t.Errorf("%s: every decode of a %d-byte records section allocated %d bytes or more; buffers are not reused", c, size, least)
		}
	}
}

// Once its pools are warm, decoding a compressed batch allocates nothing
// either: no per-batch codec state, no per-call boxing. As in
// TestDecompressionReusesBuffers, the least of several runs counts, since
// under the race detector sync.Pool drops items at random.
func TestCompressedIterationAllocatesNothingWarm(t *testing.T) {
	rng := testRand(t)
	recs := randRecords(rng, 100, 1_700_000_000_000)
	for _, c := range allCodecs[1:] {
		batch := mustBuild(t, c, recs, nil)
		least := math.Inf(1)
		for range 20 {
			least = min(least, testing.AllocsPerRun(1, func() {
				it := batch.Records(nil)
				for it.Next() {
					sink += len(it.Record().Value())
				}
				if it.Err() != nil {
					t.Fatal(it.Err())
				}
				it.Close()
			}))
		}
		if least != 0 {
			t.Errorf("%s: every warm decode allocated, at least %v times", c, least)
		}
	}
}

package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/maphash"
	"io"
	"math"
	"math/rand/v2"
	"testing"
)

// fuzzCap is the batch and decompression cap the decoder fuzz target runs
// under: small, so an allocation driven by a length field rather than by
// real content stands out.
const fuzzCap = 1 << 20

var digestSeed = maphash.MakeSeed()

// scan is what decoding a stream produced: a digest per batch of its
// header and every record field, and how many bytes were valid.
type scan struct {
	digests []uint64
	counts  []int
	valid   int   // bytes of whole batches whose records all decoded
	parsed  int   // batches Parse accepted, including a last undecodable one
	err     error // what stopped the scan; io.EOF at a clean end
}

func scanStream(data []byte, opts *DecodeOptions) scan {
	var s scan
	rest := data
	for {
		b, r, err := Parse(rest)
		if err != nil {
			s.err = err
			return s
		}
		s.parsed++
		var h maphash.Hash
		h.SetSeed(digestSeed)
		h.Write(b[:HeaderSize])
		it := b.Records(opts)
		n := 0
		for it.Next() {
			rec := it.Record()
			var num [8]byte
			binary.LittleEndian.PutUint64(num[:], uint64(rec.Offset()))
			h.Write(num[:])
			binary.LittleEndian.PutUint64(num[:], uint64(rec.Timestamp()))
			h.Write(num[:])
			digestBytes(&h, rec.Key())
			digestBytes(&h, rec.Value())
			for hd := rec.Headers(); hd.Next(); {
				digestBytes(&h, hd.Key())
				digestBytes(&h, hd.Value())
			}
			n++
		}
		err = it.Err()
		it.Close()
		if err != nil {
			s.err = err
			return s
		}
		if n != int(b.NumRecords()) {
			s.err = errors.New("iterator ended early without an error")
			return s
		}
		s.digests = append(s.digests, h.Sum64())
		s.counts = append(s.counts, n)
		s.valid += len(b)
		rest = r
	}
}

func digestBytes(h *maphash.Hash, b []byte) {
	var l [8]byte
	n := int64(-1)
	if b != nil {
		n = int64(len(b))
	}
	binary.LittleEndian.PutUint64(l[:], uint64(n))
	h.Write(l[:])
	h.Write(b)
}

// withFixedCRCs rewrites the CRC of every complete batch in data, so the
// fuzzer's mutations reach the record decoder instead of stopping at the
// checksum.
func withFixedCRCs(data []byte) []byte {
	data = bytes.Clone(data)
	for pos := 0; len(data)-pos >= HeaderSize; {
		size, err := CheckHeader(data[pos:])
		if err != nil || size > len(data)-pos {
			break
		}
		Batch(data[pos : pos+size]).updateCRC()
		pos += size
	}
	return data
}

func fuzzSeeds(f *testing.F) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, c := range allCodecs {
		var stream []byte
		for i := range 2 {
			b := mustBuild(f, c, randRecords(rng, 3+i*10, 1_700_000_000_000), func(b *Builder) { b.BaseOffset = int64(i * 100) })
			stream = append(stream, b...)
		}
		f.Add(stream, false)
		f.Add(stream[:len(stream)-7], false) // torn tail
		f.Add(stream, true)
	}
	extreme := mustBuild(f, CodecNone, []Record{
		{Key: []byte{}, Timestamp: math.MinInt64, Headers: []Header{{Key: "k"}}},
		{Value: []byte{}, Timestamp: math.MaxInt64},
	}, nil)
	f.Add([]byte(extreme), false)

	// Lying lengths and bombs, each in a batch with a valid CRC.
	zeros := make([]byte, 4*fuzzCap)
	huge := bytes.Clone(extreme)
	binary.BigEndian.PutUint32(huge[offLength:], math.MaxInt32)
	f.Add(huge, false)
	for _, c := range allCodecs[1:] {
		bomb, err := compress(nil, zeros, c, 0)
		if err != nil {
			f.Fatal(err)
		}
		f.Add([]byte(rawBatch(c, 1, 0, bomb)), false)
	}
	zstdHuge := binary.LittleEndian.AppendUint64([]byte{0x28, 0xb5, 0x2f, 0xfd, 0xe0}, 1<<40)
	f.Add([]byte(rawBatch(CodecZstd, 1, 0, append(zstdHuge, 1, 0, 0))), false)
	f.Add([]byte(rawBatch(CodecSnappy, 1, 0, []byte{0xff, 0xff, 0xff, 0xff, 0x07})), false)
	f.Add([]byte(rawBatch(CodecNone, math.MaxInt32, 0, []byte{0x0e, 0, 0, 0, 1, 1, 0xfe, 0xff, 0xff, 0xff, 0x0f})), false)
	f.Add([]byte(rawBatch(CodecNone, 1, 0, []byte{0xfe, 0xff, 0xff, 0xff, 0x07})), false)
	f.Add([]byte{}, false)
}

// FuzzDecode: decoding never panics; allocation stays within the caps
// whatever the length fields say; the valid prefix re-parses identically
// and cleanly; ReadBatch agrees with Parse batch for batch.
func FuzzDecode(f *testing.F) {
	fuzzSeeds(f)
	opts := &DecodeOptions{MaxBatchBytes: fuzzCap, MaxDecompressedBytes: fuzzCap}
	f.Fuzz(func(t *testing.T, data []byte, fixCRC bool) {
		if fixCRC {
			data = withFixedCRCs(data)
		}
		before := heapAllocated()
		first := scanStream(data, opts)
		// Output buffers double up to the cap (twice the cap in all),
		// plus codec state and the scan's own digests.
		if got, limit := heapAllocated()-before, uint64(3*fuzzCap+(1<<20)+64*len(data)); got > limit {
			t.Fatalf("decoding %d bytes allocated %d, over %d", len(data), got, limit)
		}
		if first.valid > len(data) {
			t.Fatalf("valid prefix %d of %d bytes", first.valid, len(data))
		}
		if first.err != io.EOF && !errors.Is(first.err, ErrCorrupt) && !errors.Is(first.err, ErrShortBatch) && !errors.Is(first.err, ErrTooLarge) {
			t.Fatalf("untyped error: %v", first.err)
		}

		again := scanStream(data[:first.valid], opts)
		if again.err != io.EOF || again.valid != first.valid || len(again.digests) != len(first.digests) {
			t.Fatalf("valid prefix of %d bytes re-parsed to %d bytes, %d batches, %v (first pass %d batches)", first.valid, again.valid, len(again.digests), again.err, len(first.digests))
		}
		for i := range first.digests {
			if again.digests[i] != first.digests[i] || again.counts[i] != first.counts[i] {
				t.Fatalf("batch %d decodes differently on the second pass", i)
			}
		}

		r := bytes.NewReader(data)
		var buf []byte
		rest := data
		for i := 0; i < first.parsed; i++ {
			want, next, err := Parse(rest)
			if err != nil {
				t.Fatalf("Parse changed its mind on batch %d: %v", i, err)
			}
			rest = next
			got, err := ReadBatch(r, buf, opts)
			if errors.Is(err, ErrTooLarge) && len(want) > fuzzCap {
				return // ReadBatch is capped, Parse is not
			}
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("ReadBatch batch %d: %v", i, err)
			}
			buf = got
		}
	})
}

// FuzzBuildRoundTrip: whatever records the bytes describe, every codec
// builds a batch that validates and decodes back to them.
func FuzzBuildRoundTrip(f *testing.F) {
	f.Add([]byte("k\x00v\x01h\x02"), int64(0), uint8(0))
	f.Add([]byte{}, int64(math.MinInt64), uint8(1))
	f.Add(bytes.Repeat([]byte("abc\xff"), 200), int64(math.MaxInt64), uint8(4))
	f.Add([]byte{0xff, 0xfe, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, int64(-1), uint8(3))
	f.Fuzz(func(t *testing.T, data []byte, ts int64, codec uint8) {
		c := allCodecs[int(codec)%len(allCodecs)]
		recs := recordsFromBytes(data, ts)
		b := mustBuilder(t, c)
		for _, r := range recs {
			if err := b.Append(r); err != nil {
				t.Fatal(err)
			}
		}
		batch, err := b.Build(nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := batch.Validate(); err != nil {
			t.Fatal(err)
		}
		got, err := tryDecodeAll(batch, nil)
		if err != nil {
			t.Fatal(err)
		}
		checkDecoded(t, recs, got, 0, nil)
	})
}

// recordsFromBytes cuts data into records: each byte's low bits pick what
// the next field is (null, empty, or a run of the following bytes), and
// timestamps step from ts by the bytes' values, wrapping.
func recordsFromBytes(data []byte, ts int64) []Record {
	var recs []Record
	field := func() []byte {
		if len(data) == 0 {
			return nil
		}
		c := data[0]
		data = data[1:]
		switch c % 3 {
		case 0:
			return nil
		case 1:
			return []byte{}
		}
		n := min(int(c>>2), len(data))
		out := data[:n]
		data = data[n:]
		return out
	}
	for len(data) > 0 {
		r := Record{Timestamp: ts}
		ts += int64(data[0]) * 0x0123456789abcdef
		r.Key = field()
		r.Value = field()
		for len(data) > 0 && data[0]&0x80 != 0 {
			data = data[1:]
			r.Headers = append(r.Headers, Header{Key: string(field()), Value: field()})
		}
		recs = append(recs, r)
	}
	return recs
}

package record

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"math"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// These tests hold Folio's codec against franz-go, which no one here wrote:
// batches built here are parsed with kmsg and kgo's decompressor, and
// batches built with kmsg and kgo's compressor are parsed here. The CRC
// and record framing are checked with the standard library (hash/crc32,
// encoding/binary's zigzag varints), not with this package's code.

var castagnoliTable = crc32.MakeTable(crc32.Castagnoli)

func kgoCodec(c Codec) kgo.CompressionCodec {
	switch c {
	case CodecGzip:
		return kgo.GzipCompression()
	case CodecSnappy:
		return kgo.SnappyCompression()
	case CodecLZ4:
		return kgo.Lz4Compression()
	case CodecZstd:
		return kgo.ZstdCompression()
	}
	return kgo.NoCompression()
}

// batchFields are the header fields a conformance case sets on both sides.
type batchFields struct {
	baseOffset    int64
	leaderEpoch   int32
	producerID    int64
	producerEpoch int16
	baseSequence  int32
	transactional bool
	control       bool
	appendTime    *int64
}

func (f batchFields) apply(b *Builder) {
	b.BaseOffset = f.baseOffset
	b.PartitionLeaderEpoch = f.leaderEpoch
	b.ProducerID = f.producerID
	b.ProducerEpoch = f.producerEpoch
	b.BaseSequence = f.baseSequence
	b.Transactional = f.transactional
	b.Control = f.control
	if f.appendTime != nil {
		b.LogAppendTime = true
		b.AppendTime = *f.appendTime
	}
}

type conformanceCase struct {
	name   string
	recs   []Record
	fields batchFields
}

func conformanceCases(t *testing.T) []conformanceCase {
	rng := testRand(t)
	appendTime := int64(1_800_000_000_000)
	plain := batchFields{baseOffset: 5000, leaderEpoch: -1, producerID: -1, producerEpoch: -1, baseSequence: -1}
	idem := batchFields{baseOffset: 1 << 33, leaderEpoch: 12, producerID: 987654321, producerEpoch: 4, baseSequence: 1_000_000}
	txn := idem
	txn.transactional = true
	ctrl := txn
	ctrl.control = true
	lat := plain
	lat.appendTime = &appendTime
	return []conformanceCase{
		{"one record", []Record{{Key: []byte("key"), Value: []byte("value"), Timestamp: 1_700_000_000_123}}, plain},
		{"null keys", []Record{{Value: []byte("a"), Timestamp: 1}, {Value: []byte("b"), Timestamp: 2}}, plain},
		{"null values", []Record{{Key: []byte("gone"), Timestamp: 1}, {Key: []byte("also"), Timestamp: 3}}, plain},
		{"empty values", []Record{{Key: []byte{}, Value: []byte{}, Timestamp: 1}, {Key: []byte("k"), Value: []byte{}, Timestamp: 1}}, plain},
		{"headers", []Record{{
			Key: []byte("k"), Value: []byte("v"), Timestamp: 7,
			Headers: []Header{{Key: "trace", Value: []byte("abc")}, {Key: "empty", Value: []byte{}}, {Key: "null"}, {Key: ""}},
		}}, plain},
		{"extreme timestamps", []Record{
			{Value: []byte("a"), Timestamp: math.MaxInt64},
			{Value: []byte("b"), Timestamp: math.MinInt64},
			{Value: []byte("c"), Timestamp: -1},
			{Value: []byte("d"), Timestamp: 0},
			{Value: []byte("e"), Timestamp: math.MinInt64 + 1},
		}, plain},
		{"idempotent", randRecords(rng, 20, 1_700_000_000_000), idem},
		{"transactional", randRecords(rng, 20, 1_700_000_000_000), txn},
		{"control", []Record{{Key: []byte{0, 0, 0, 1}, Value: []byte{0, 0, 0, 0, 0, 5}, Timestamp: 1_700_000_000_000}}, ctrl},
		{"log append time", randRecords(rng, 30, 1_700_000_000_000), lat},
		{"10000 records", randRecords(rng, 10_000, 1_700_000_000_000), idem},
	}
}

// kafkaParse decodes a batch with franz-go.
func kafkaParse(t *testing.T, batch []byte) (kmsg.RecordBatch, []kmsg.Record) {
	t.Helper()
	var rb kmsg.RecordBatch
	if err := rb.ReadFrom(batch); err != nil {
		t.Fatalf("kmsg.RecordBatch.ReadFrom: %v", err)
	}
	if rb.Magic != 2 || int(rb.Length) != len(batch)-12 {
		t.Fatalf("kmsg sees magic %d length %d for %d bytes", rb.Magic, rb.Length, len(batch))
	}
	if got := crc32.Checksum(batch[21:], castagnoliTable); uint32(rb.CRC) != got {
		t.Fatalf("crc field %08x, CRC-32C of attributes..end is %08x", uint32(rb.CRC), got)
	}
	raw := rb.Records
	if codec := kgo.CompressionCodecType(rb.Attributes & 0x07); codec != kgo.CodecNone {
		var err error
		if raw, err = kgo.DefaultDecompressor().Decompress(raw, codec); err != nil {
			t.Fatalf("kgo decompress codec %d: %v", codec, err)
		}
	}
	recs := make([]kmsg.Record, rb.NumRecords)
	for i := range recs {
		length, n := binary.Varint(raw)
		if n <= 0 || length < 0 || int64(len(raw)-n) < length {
			t.Fatalf("record %d: bad length prefix", i)
		}
		total := n + int(length)
		if err := recs[i].ReadFrom(raw[:total]); err != nil {
			t.Fatalf("kmsg.Record.ReadFrom record %d: %v", i, err)
		}
		raw = raw[total:]
	}
	if len(raw) != 0 {
		t.Fatalf("%d bytes after the last record", len(raw))
	}
	return rb, recs
}

// kafkaBuild encodes records into a batch with franz-go's kmsg and kgo's
// compressor.
func kafkaBuild(t *testing.T, c Codec, recs []Record, f batchFields) []byte {
	t.Helper()
	var raw []byte
	first, maxTS := recs[0].Timestamp, recs[0].Timestamp
	for i, r := range recs {
		maxTS = max(maxTS, r.Timestamp)
		kr := kmsg.Record{
			TimestampDelta64: r.Timestamp - first,
			OffsetDelta:      int32(i),
			Key:              r.Key,
			Value:            r.Value,
		}
		for _, h := range r.Headers {
			kr.Headers = append(kr.Headers, kmsg.Header{Key: h.Key, Value: h.Value})
		}
		// kmsg writes Length as given: size the body with a one-byte
		// placeholder first.
		kr.Length = int32(len(kr.AppendTo(nil)) - 1)
		raw = kr.AppendTo(raw)
	}
	records, used := raw, kgo.CodecNone
	if c != CodecNone {
		comp, err := kgo.DefaultCompressor(kgoCodec(c))
		if err != nil {
			t.Fatal(err)
		}
		records, used = comp.Compress(new(bytes.Buffer), raw)
		if used != kgo.CompressionCodecType(c) {
			t.Fatalf("kgo compressed with %d, asked for %s", used, c)
		}
	}
	attrs := int16(used)
	if f.transactional {
		attrs |= 0x10
	}
	if f.control {
		attrs |= 0x20
	}
	if f.appendTime != nil {
		attrs |= 0x08
		maxTS = *f.appendTime
	}
	rb := kmsg.RecordBatch{
		FirstOffset:          f.baseOffset,
		PartitionLeaderEpoch: f.leaderEpoch,
		Magic:                2,
		Attributes:           attrs,
		LastOffsetDelta:      int32(len(recs) - 1),
		FirstTimestamp:       first,
		MaxTimestamp:         maxTS,
		ProducerID:           f.producerID,
		ProducerEpoch:        f.producerEpoch,
		FirstSequence:        f.baseSequence,
		NumRecords:           int32(len(recs)),
		Records:              records,
	}
	b := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-12))
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], castagnoliTable))
	return b
}

func TestConformanceFolioToFranz(t *testing.T) {
	for _, c := range allCodecs {
		for _, tc := range conformanceCases(t) {
			t.Run(c.String()+"/"+tc.name, func(t *testing.T) {
				batch := mustBuild(t, c, tc.recs, tc.fields.apply)
				rb, krecs := kafkaParse(t, batch)
				f := tc.fields
				wantAttrs := int16(c)
				if f.appendTime != nil {
					wantAttrs |= 0x08
				}
				if f.transactional {
					wantAttrs |= 0x10
				}
				if f.control {
					wantAttrs |= 0x20
				}
				if rb.Attributes != wantAttrs || rb.FirstOffset != f.baseOffset || rb.PartitionLeaderEpoch != f.leaderEpoch ||
					rb.ProducerID != f.producerID || rb.ProducerEpoch != f.producerEpoch || rb.FirstSequence != f.baseSequence ||
					rb.LastOffsetDelta != int32(len(tc.recs)-1) || int(rb.NumRecords) != len(tc.recs) {
					t.Fatalf("kmsg header %+v differs from what was built", rb)
				}
				// The batch's base timestamp is the first record's and its
				// max timestamp the largest one's, or the append time.
				wantMax := tc.recs[0].Timestamp
				for _, r := range tc.recs {
					wantMax = max(wantMax, r.Timestamp)
				}
				if f.appendTime != nil {
					wantMax = *f.appendTime
				}
				if rb.FirstTimestamp != tc.recs[0].Timestamp || rb.MaxTimestamp != wantMax {
					t.Fatalf("kmsg timestamps first %d max %d, want %d %d", rb.FirstTimestamp, rb.MaxTimestamp, tc.recs[0].Timestamp, wantMax)
				}
				for i, kr := range krecs {
					want := &tc.recs[i]
					// Kafka's rule: a log-append-time batch's records all
					// take the max timestamp.
					ts, wantTS := rb.FirstTimestamp+kr.TimestampDelta64, want.Timestamp
					if rb.Attributes&0x08 != 0 {
						ts, wantTS = rb.MaxTimestamp, *f.appendTime
					}
					if ts != wantTS {
						t.Fatalf("record %d: franz-go timestamp %d, want %d", i, ts, wantTS)
					}
					if kr.OffsetDelta != int32(i) || kr.Attributes != 0 {
						t.Fatalf("record %d: offset delta %d attributes %d", i, kr.OffsetDelta, kr.Attributes)
					}
					if !sameBytes(kr.Key, want.Key) || !sameBytes(kr.Value, want.Value) {
						t.Fatalf("record %d: franz-go key %q (nil %v) value %q (nil %v), want %q (nil %v) %q (nil %v)",
							i, kr.Key, kr.Key == nil, kr.Value, kr.Value == nil, want.Key, want.Key == nil, want.Value, want.Value == nil)
					}
					if len(kr.Headers) != len(want.Headers) {
						t.Fatalf("record %d: %d headers, want %d", i, len(kr.Headers), len(want.Headers))
					}
					for j, h := range kr.Headers {
						if h.Key != want.Headers[j].Key || !sameBytes(h.Value, want.Headers[j].Value) {
							t.Fatalf("record %d header %d: %q=%q (nil %v)", i, j, h.Key, h.Value, h.Value == nil)
						}
					}
				}
			})
		}
	}
}

func TestConformanceFranzToFolio(t *testing.T) {
	for _, c := range allCodecs {
		for _, tc := range conformanceCases(t) {
			t.Run(c.String()+"/"+tc.name, func(t *testing.T) {
				f := tc.fields
				raw := kafkaBuild(t, c, tc.recs, f)
				batch, rest, err := Parse(raw)
				if err != nil || len(rest) != 0 {
					t.Fatalf("Parse: %v (%d bytes left)", err, len(rest))
				}
				if batch.Codec() != c || batch.IsTransactional() != f.transactional || batch.IsControl() != f.control ||
					batch.LogAppendTime() != (f.appendTime != nil) || batch.BaseOffset() != f.baseOffset ||
					batch.PartitionLeaderEpoch() != f.leaderEpoch || batch.ProducerID() != f.producerID ||
					batch.ProducerEpoch() != f.producerEpoch || batch.BaseSequence() != f.baseSequence {
					t.Fatalf("header fields differ: attrs %x base %d", batch.Attributes(), batch.BaseOffset())
				}
				checkDecoded(t, tc.recs, decodeAll(t, batch, nil), f.baseOffset, f.appendTime)
			})
		}
	}
}

// Uncompressed, the format leaves no freedom: both encoders must agree to
// the byte.
func TestConformanceIdenticalBytes(t *testing.T) {
	for _, tc := range conformanceCases(t) {
		folio := mustBuild(t, CodecNone, tc.recs, tc.fields.apply)
		franz := kafkaBuild(t, CodecNone, tc.recs, tc.fields)
		if !bytes.Equal(folio, franz) {
			t.Errorf("%s: Folio and franz-go encode differently\nfolio % x\nfranz % x", tc.name, folio[:min(len(folio), 128)], franz[:min(len(franz), 128)])
		}
	}
}

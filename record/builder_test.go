package record

import (
	"bytes"
	"errors"
	"math"
	"testing"
)

func TestRoundTrip(t *testing.T) {
	rng := testRand(t)
	extreme := []Record{
		{Key: []byte("min"), Value: []byte("v"), Timestamp: math.MinInt64},
		{Key: []byte("max"), Value: []byte("v"), Timestamp: math.MaxInt64},
		{Key: []byte("none"), Timestamp: -1},
		{Key: []byte("zero"), Timestamp: 0},
		{Key: []byte("max-1"), Timestamp: math.MaxInt64 - 1},
	}
	cases := []struct {
		name string
		recs []Record
	}{
		{"one", []Record{{Key: []byte("k"), Value: []byte("v"), Timestamp: 1_700_000_000_000}}},
		{"null key and value", []Record{{Timestamp: 5}}},
		{"empty key and value", []Record{{Key: []byte{}, Value: []byte{}, Timestamp: 5}}},
		{"headers", []Record{{
			Key: []byte("k"), Value: []byte("v"), Timestamp: 9,
			Headers: []Header{{Key: "a", Value: []byte("1")}, {Key: "", Value: []byte{}}, {Key: "null"}, {Key: "a", Value: []byte("dup")}},
		}}},
		{"extreme timestamps", extreme},
		{"random 100", randRecords(rng, 100, 1_700_000_000_000)},
		{"random 10000", randRecords(rng, 10_000, 1_700_000_000_000)},
		{"large value", []Record{{Value: bytes.Repeat([]byte("0123456789"), 50_000), Timestamp: 1}}},
	}
	for _, c := range allCodecs {
		for _, tc := range cases {
			t.Run(c.String()+"/"+tc.name, func(t *testing.T) {
				batch := mustBuild(t, c, tc.recs, func(b *Builder) { b.BaseOffset = 1000 })
				if err := batch.Validate(); err != nil {
					t.Fatalf("Validate: %v", err)
				}
				if batch.Codec() != c {
					t.Fatalf("codec %s, want %s", batch.Codec(), c)
				}
				if got := int(batch.NumRecords()); got != len(tc.recs) {
					t.Fatalf("NumRecords %d, want %d", got, len(tc.recs))
				}
				if got := batch.LastOffset(); got != 1000+int64(len(tc.recs))-1 {
					t.Fatalf("LastOffset %d", got)
				}
				wantMax := tc.recs[0].Timestamp
				for _, r := range tc.recs {
					wantMax = max(wantMax, r.Timestamp)
				}
				if batch.BaseTimestamp() != tc.recs[0].Timestamp || batch.MaxTimestamp() != wantMax {
					t.Fatalf("timestamps base %d max %d, want %d %d", batch.BaseTimestamp(), batch.MaxTimestamp(), tc.recs[0].Timestamp, wantMax)
				}
				checkDecoded(t, tc.recs, decodeAll(t, batch, nil), 1000, nil)
			})
		}
	}
}

func TestBuilderHeaderFields(t *testing.T) {
	b := mustBuilder(t, CodecNone)
	if err := b.Append(Record{Value: []byte("x"), Timestamp: 10}); err != nil {
		t.Fatal(err)
	}
	def, err := b.Build(nil)
	if err != nil {
		t.Fatal(err)
	}
	if def.ProducerID() != -1 || def.ProducerEpoch() != -1 || def.BaseSequence() != -1 || def.PartitionLeaderEpoch() != -1 {
		t.Fatalf("defaults: pid %d epoch %d seq %d leaderEpoch %d, want -1 each", def.ProducerID(), def.ProducerEpoch(), def.BaseSequence(), def.PartitionLeaderEpoch())
	}
	if def.Attributes() != 0 || def.MagicByte() != Magic || def.BaseOffset() != 0 {
		t.Fatalf("defaults: attributes %x magic %d base %d", def.Attributes(), def.MagicByte(), def.BaseOffset())
	}

	b.BaseOffset = 1 << 40
	b.PartitionLeaderEpoch = 7
	b.ProducerID = 123456789
	b.ProducerEpoch = 3
	b.BaseSequence = 42
	b.Transactional = true
	b.Control = true
	b.LogAppendTime = true
	b.AppendTime = 99_999
	got, err := b.Build(nil)
	if err != nil {
		t.Fatal(err)
	}
	if got.BaseOffset() != 1<<40 || got.PartitionLeaderEpoch() != 7 || got.ProducerID() != 123456789 ||
		got.ProducerEpoch() != 3 || got.BaseSequence() != 42 {
		t.Fatalf("fields not kept: %d %d %d %d %d", got.BaseOffset(), got.PartitionLeaderEpoch(), got.ProducerID(), got.ProducerEpoch(), got.BaseSequence())
	}
	if !got.IsTransactional() || !got.IsControl() || !got.LogAppendTime() || got.Codec() != CodecNone {
		t.Fatalf("attributes %016b", got.Attributes())
	}
	if got.MaxTimestamp() != 99_999 || got.BaseTimestamp() != 10 {
		t.Fatalf("log append time: base %d max %d", got.BaseTimestamp(), got.MaxTimestamp())
	}
	at := int64(99_999)
	checkDecoded(t, []Record{{Value: []byte("x"), Timestamp: 10}}, decodeAll(t, got, nil), 1<<40, &at)

	b.Reset()
	if b.Len() != 0 || b.Size() != HeaderSize || b.ProducerID != -1 || b.Transactional || b.LogAppendTime || b.BaseOffset != 0 {
		t.Fatalf("Reset left state: len %d size %d pid %d", b.Len(), b.Size(), b.ProducerID)
	}
}

func TestLogAppendTimeResolvesEveryRecord(t *testing.T) {
	rng := testRand(t)
	recs := randRecords(rng, 50, 1_000_000)
	for _, c := range allCodecs {
		batch := mustBuild(t, c, recs, nil)
		batch.SetLogAppendTime(2_000_000)
		if err := batch.Validate(); err != nil {
			t.Fatalf("%s: SetLogAppendTime broke the CRC: %v", c, err)
		}
		at := int64(2_000_000)
		checkDecoded(t, recs, decodeAll(t, batch, nil), 0, &at)
	}
}

func TestEmptyBatch(t *testing.T) {
	for _, c := range allCodecs {
		b := mustBuilder(t, c)
		b.BaseOffset = 77
		batch, err := b.Build(nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(batch) != HeaderSize || batch.Codec() != CodecNone || batch.NumRecords() != 0 {
			t.Fatalf("%s: empty batch is %d bytes, codec %s, %d records", c, len(batch), batch.Codec(), batch.NumRecords())
		}
		if batch.BaseTimestamp() != NoTimestamp || batch.MaxTimestamp() != NoTimestamp || batch.LastOffsetDelta() != 0 {
			t.Fatalf("%s: empty batch timestamps %d %d lastOffsetDelta %d", c, batch.BaseTimestamp(), batch.MaxTimestamp(), batch.LastOffsetDelta())
		}
		if got := decodeAll(t, batch, nil); len(got) != 0 {
			t.Fatalf("%s: empty batch yields %d records", c, len(got))
		}
	}
}

func TestAppendAtKeepsGaps(t *testing.T) {
	for _, c := range allCodecs {
		b := mustBuilder(t, c)
		b.BaseOffset = 100
		for _, d := range []int32{0, 3, 4, 10} {
			if err := b.AppendAt(d, Record{Value: []byte{byte(d)}, Timestamp: int64(d)}); err != nil {
				t.Fatal(err)
			}
		}
		if err := b.AppendAt(10, Record{}); !errors.Is(err, ErrOffsetDelta) {
			t.Fatalf("repeated delta: %v, want ErrOffsetDelta", err)
		}
		if err := b.AppendAt(-5, Record{}); !errors.Is(err, ErrOffsetDelta) {
			t.Fatalf("negative delta: %v, want ErrOffsetDelta", err)
		}
		if err := b.Append(Record{Value: []byte{11}, Timestamp: 11}); err != nil {
			t.Fatal(err)
		}
		batch, err := b.Build(nil)
		if err != nil {
			t.Fatal(err)
		}
		if batch.LastOffsetDelta() != 11 || batch.NumRecords() != 5 {
			t.Fatalf("%s: lastOffsetDelta %d records %d", c, batch.LastOffsetDelta(), batch.NumRecords())
		}
		got := decodeAll(t, batch, nil)
		for i, want := range []int64{100, 103, 104, 110, 111} {
			if got[i].Offset != want || got[i].Value[0] != byte(want-100) {
				t.Fatalf("%s: record %d offset %d value %v, want %d", c, i, got[i].Offset, got[i].Value, want)
			}
		}
	}
}

func TestBuildReusesDst(t *testing.T) {
	b := mustBuilder(t, CodecNone)
	_ = b.Append(Record{Value: []byte("hello"), Timestamp: 1})
	buf := make([]byte, 0, 4096)
	batch, err := b.Build(buf[5:5])
	if err != nil {
		t.Fatal(err)
	}
	if &batch[0] != &buf[:6][5] {
		t.Fatal("Build did not write into dst's storage")
	}
	again, err := b.Build(batch)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again, batch) || &again[0] != &batch[0] {
		t.Fatal("a second Build over the first differs or moved")
	}
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := b.Build(batch); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("Build into a large enough dst allocated %v times", allocs)
	}
}

func TestBuilderOptionsValidate(t *testing.T) {
	bad := []struct {
		opts  BuilderOptions
		field string
	}{
		{BuilderOptions{Codec: 5}, "Codec"},
		{BuilderOptions{Codec: -1}, "Codec"},
		{BuilderOptions{Codec: CodecSnappy, Level: 1}, "Level"},
		{BuilderOptions{Codec: CodecGzip, Level: 10}, "Level"},
		{BuilderOptions{Codec: CodecGzip, Level: -4}, "Level"},
		{BuilderOptions{Codec: CodecLZ4, Level: 10}, "Level"},
		{BuilderOptions{Codec: CodecZstd, Level: 23}, "Level"},
		{BuilderOptions{Codec: CodecNone, Level: 1}, "Level"},
	}
	for _, tc := range bad {
		_, err := NewBuilder(&tc.opts)
		if !errors.Is(err, ErrInvalidOptions) || !bytes.Contains([]byte(err.Error()), []byte("BuilderOptions."+tc.field)) {
			t.Errorf("%+v: error %v, want ErrInvalidOptions naming %s", tc.opts, err, tc.field)
		}
	}
	good := []BuilderOptions{
		{}, {Codec: CodecGzip, Level: -3}, {Codec: CodecGzip, Level: 9}, {Codec: CodecLZ4, Level: 9},
		{Codec: CodecZstd, Level: 1}, {Codec: CodecZstd, Level: 22}, {Codec: CodecSnappy},
	}
	rng := testRand(t)
	recs := randRecords(rng, 20, 0)
	for _, o := range good {
		b, err := NewBuilder(&o)
		if err != nil {
			t.Fatalf("%+v: %v", o, err)
		}
		for _, r := range recs {
			if err := b.Append(r); err != nil {
				t.Fatal(err)
			}
		}
		batch, err := b.Build(nil)
		if err != nil {
			t.Fatalf("%+v: Build: %v", o, err)
		}
		checkDecoded(t, recs, decodeAll(t, batch, nil), 0, nil)
	}
	if _, err := NewBuilder(nil); err != nil {
		t.Fatalf("nil options: %v", err)
	}
}

// The encoding of one record is fixed by the format; check it byte by byte
// against a hand-assembled record, so a symmetric encoder/decoder bug
// cannot hide.
func TestRecordBytes(t *testing.T) {
	b := mustBuilder(t, CodecNone)
	_ = b.Append(Record{Key: []byte("k"), Value: []byte("vv"), Timestamp: 100})
	_ = b.Append(Record{Value: nil, Timestamp: 99, Headers: []Header{{Key: "h", Value: nil}}})
	batch, err := b.Build(nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []byte{
		// length 9: attrs, tsDelta 0, offDelta 0, keyLen 1 'k', valLen 2 'v' 'v', 0 headers
		18, 0, 0, 0, 2, 'k', 4, 'v', 'v', 0,
		// length 9: attrs, tsDelta -1 (zigzag 1), offDelta 1 (2), key null (1), value null (1), 1 header: keyLen 1 'h', value null
		18, 0, 1, 2, 1, 1, 2, 2, 'h', 1,
	}
	if got := batch[HeaderSize:]; !bytes.Equal(got, want) {
		t.Fatalf("records section\n got % x\nwant % x", got, want)
	}
}

// Compaction rewrites a batch without its last records but keeps its span;
// an emptied batch keeps it too.
func TestSetLastOffsetDelta(t *testing.T) {
	for _, c := range allCodecs {
		b := mustBuilder(t, c)
		b.BaseOffset = 500
		if err := b.SetLastOffsetDelta(-1); !errors.Is(err, ErrOffsetDelta) {
			t.Fatalf("negative span: %v", err)
		}
		if err := b.SetLastOffsetDelta(9); err != nil {
			t.Fatal(err)
		}
		_ = b.AppendAt(2, Record{Value: []byte("kept"), Timestamp: 1})
		batch, err := b.Build(nil)
		if err != nil {
			t.Fatal(err)
		}
		if batch.LastOffsetDelta() != 9 || batch.LastOffset() != 509 || batch.NumRecords() != 1 {
			t.Fatalf("%s: span %d last offset %d records %d", c, batch.LastOffsetDelta(), batch.LastOffset(), batch.NumRecords())
		}
		if got := decodeAll(t, batch, nil); len(got) != 1 || got[0].Offset != 502 {
			t.Fatalf("%s: read back %+v", c, got)
		}
		// A record past the span moves it.
		_ = b.AppendAt(12, Record{Timestamp: 2})
		if batch, _ = b.Build(nil); batch.LastOffsetDelta() != 12 {
			t.Fatalf("%s: span %d after a record at 12", c, batch.LastOffsetDelta())
		}

		b.Reset()
		_ = b.SetLastOffsetDelta(4)
		empty, err := b.Build(nil)
		if err != nil {
			t.Fatal(err)
		}
		if empty.LastOffsetDelta() != 4 || empty.NumRecords() != 0 || len(decodeAll(t, empty, nil)) != 0 {
			t.Fatalf("%s: emptied batch span %d records %d", c, empty.LastOffsetDelta(), empty.NumRecords())
		}
		b.Reset()
		if empty, _ = b.Build(nil); empty.LastOffsetDelta() != 0 {
			t.Fatalf("%s: Reset kept the span: %d", c, empty.LastOffsetDelta())
		}
	}
}

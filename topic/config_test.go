package topic

import (
	"encoding/json"
	"errors"
	"flag"
	"io"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/foliolog/folio/log"
	"github.com/foliolog/folio/readpath"
	"github.com/foliolog/folio/record"
)

func TestConfigDefaults(t *testing.T) {
	want := Config{
		Partitions:      1,
		RetentionBytes:  -1,
		RetentionAge:    7 * 24 * time.Hour,
		SegmentBytes:    1 << 30,
		SegmentAge:      7 * 24 * time.Hour,
		Flush:           log.FlushSync,
		ReadPath:        readpath.Mmap,
		Cleanup:         CleanupDelete,
		TimestampType:   CreateTime,
		MaxMessageBytes: 1048588,
		Compression:     CompressionProducer,

		IndexIntervalBytes:     4096,
		MinCleanableDirtyRatio: 0.5,
		MinCompactionLag:       0,
		DeleteRetention:        24 * time.Hour,
	}
	if got := (Config{}).WithDefaults(); got != want {
		t.Fatalf("defaults = %+v, want %+v", got, want)
	}
	if err := (Config{}).Validate(); err != nil {
		t.Fatalf("zero config: %v", err)
	}
	set := Config{Partitions: 3, RetentionAge: time.Hour, SegmentBytes: 4096}
	if got := set.WithDefaults(); got.Partitions != 3 || got.RetentionAge != time.Hour || got.SegmentBytes != 4096 || got.SegmentAge != DefaultSegmentAge {
		t.Fatalf("WithDefaults overrode set fields: %+v", got)
	}
}

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		field string
		cfg   Config
	}{
		{"Partitions", Config{Partitions: -1}},
		{"Partitions", Config{Partitions: MaxPartitions + 1}},
		{"RetentionBytes", Config{RetentionBytes: -2}},
		{"RetentionAge", Config{RetentionAge: -time.Second}},
		{"SegmentBytes", Config{SegmentBytes: MinSegmentBytes - 1}},
		{"SegmentBytes", Config{SegmentBytes: MaxSegmentBytes + 1}},
		{"SegmentAge", Config{SegmentAge: -1}},
		{"IndexIntervalBytes", Config{IndexIntervalBytes: -2}},
		{"IndexIntervalBytes", Config{IndexIntervalBytes: math.MinInt32}},
		{"MaxMessageBytes", Config{MaxMessageBytes: 10}},
		{"Flush", Config{Flush: log.FlushInterval(0)}},
		{"Flush", Config{Flush: log.FlushInterval(-time.Second)}},
		{"Flush", Config{Flush: log.FlushEveryN(-5)}},
		{"ReadPath", Config{ReadPath: 2}},
		{"Cleanup", Config{Cleanup: 3}},
		{"TimestampType", Config{TimestampType: 2}},
		{"Compression", Config{Compression: 6}},
		{"MinCleanableDirtyRatio", Config{MinCleanableDirtyRatio: -0.1}},
		{"MinCleanableDirtyRatio", Config{MinCleanableDirtyRatio: 1.01}},
		{"MinCleanableDirtyRatio", Config{MinCleanableDirtyRatio: math.NaN()}},
		{"MinCleanableDirtyRatio", Config{MinCleanableDirtyRatio: math.Inf(1)}},
		{"MinCompactionLag", Config{MinCompactionLag: -time.Millisecond}},
		{"DeleteRetention", Config{DeleteRetention: -2}},
		{"DeleteRetention", Config{DeleteRetention: -time.Hour}},
	} {
		err := tc.cfg.Validate()
		if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("Validate(%+v) = %v, want ErrInvalidConfig naming %s", tc.cfg, err, tc.field)
		}
	}
	for _, ok := range []Config{
		{RetentionBytes: Unlimited, RetentionAge: Unlimited},
		{SegmentBytes: MinSegmentBytes, MaxMessageBytes: MinMaxMessageBytes},
		{SegmentBytes: MaxSegmentBytes, MaxMessageBytes: math.MaxInt32, Partitions: MaxPartitions},
		{Flush: log.FlushInterval(time.Millisecond)},
		{Flush: log.FlushEveryN(1)},
		{Flush: log.FlushNone, ReadPath: readpath.Sendfile, Cleanup: CleanupCompactDelete, TimestampType: LogAppendTime, Compression: CompressionZstd},
		{MinCleanableDirtyRatio: 1, MinCompactionLag: time.Hour, DeleteRetention: NoDeleteRetention},
		{MinCleanableDirtyRatio: 1e-9, DeleteRetention: time.Nanosecond},
		{IndexIntervalBytes: IndexEveryBatch},
		{IndexIntervalBytes: 1},
		{IndexIntervalBytes: math.MaxInt32},
	} {
		if err := ok.Validate(); err != nil {
			t.Errorf("Validate(%+v) = %v", ok, err)
		}
	}
}

func TestConfigSet(t *testing.T) {
	for _, tc := range []struct {
		key, value string
		check      func(Config) bool
	}{
		{"partitions", "12", func(c Config) bool { return c.Partitions == 12 }},
		{"retention.bytes", "10GiB", func(c Config) bool { return c.RetentionBytes == 10<<30 }},
		{"retention.bytes", "-1", func(c Config) bool { return c.RetentionBytes == Unlimited }},
		{"retention.bytes", "unlimited", func(c Config) bool { return c.RetentionBytes == Unlimited }},
		{"retention.ms", "7d", func(c Config) bool { return c.RetentionAge == 7*24*time.Hour }},
		{"retention", "1d12h", func(c Config) bool { return c.RetentionAge == 36*time.Hour }},
		{"retention", "3600000", func(c Config) bool { return c.RetentionAge == time.Hour }},
		{"retention", "forever", nil},
		{"retention", "-1", func(c Config) bool { return c.RetentionAge == Unlimited }},
		{"segment.bytes", "64MiB", func(c Config) bool { return c.SegmentBytes == 64<<20 }},
		{"segment", "100MB", func(c Config) bool { return c.SegmentBytes == 100e6 }},
		{"segment.ms", "12h", func(c Config) bool { return c.SegmentAge == 12*time.Hour }},
		{"index.interval.bytes", "128", func(c Config) bool { return c.IndexIntervalBytes == 128 }},
		{"index.interval.bytes", "4096", func(c Config) bool { return c.IndexIntervalBytes == DefaultIndexIntervalBytes }},
		{"index.interval.bytes", "1KiB", func(c Config) bool { return c.IndexIntervalBytes == 1024 }},
		{"index.interval.bytes", "2147483647", func(c Config) bool { return c.IndexIntervalBytes == math.MaxInt32 }},
		// Kafka's 0 is "every batch", not "the default".
		{"index.interval.bytes", "0", func(c Config) bool { return c.IndexIntervalBytes == IndexEveryBatch }},
		{"flush", "sync", func(c Config) bool { return c.Flush == log.FlushSync }},
		{"flush", "none", func(c Config) bool { return c.Flush == log.FlushNone }},
		{"flush", "interval:100ms", func(c Config) bool {
			return c.Flush == log.FlushInterval(100*time.Millisecond)
		}},
		{"flush", "every:1000", func(c Config) bool { return c.Flush == log.FlushEveryN(1000) }},
		{"read.path", "sendfile", func(c Config) bool { return c.ReadPath == readpath.Sendfile }},
		{"cleanup.policy", "compact", func(c Config) bool { return c.Cleanup == CleanupCompact }},
		{"cleanup", "delete,compact", func(c Config) bool { return c.Cleanup == CleanupCompactDelete }},
		{"message.timestamp.type", "LogAppendTime", func(c Config) bool { return c.TimestampType == LogAppendTime }},
		{"timestamp", "createtime", func(c Config) bool { return c.TimestampType == CreateTime }},
		{"max.message.bytes", "2MiB", func(c Config) bool { return c.MaxMessageBytes == 2<<20 }},
		{"compression.type", "uncompressed", func(c Config) bool { return c.Compression == CompressionNone }},
		{"compression", "zstd", func(c Config) bool { return c.Compression == CompressionZstd }},
		{"min.cleanable.dirty.ratio", "0.1", func(c Config) bool { return c.MinCleanableDirtyRatio == 0.1 }},
		{"min.cleanable.dirty.ratio", "1", func(c Config) bool { return c.MinCleanableDirtyRatio == 1 }},
		{"min.compaction.lag.ms", "60000", func(c Config) bool { return c.MinCompactionLag == time.Minute }},
		{"min.compaction.lag.ms", "0", func(c Config) bool { return c.MinCompactionLag == 0 }},
		{"min.compaction.lag.ms", "2h", func(c Config) bool { return c.MinCompactionLag == 2*time.Hour }},
		{"delete.retention.ms", "86400000", func(c Config) bool { return c.DeleteRetention == 24*time.Hour }},
		{"delete.retention.ms", "1s", func(c Config) bool { return c.DeleteRetention == time.Second }},
		// Kafka's 0 is "no tombstone retention", not "the default".
		{"delete.retention.ms", "0", func(c Config) bool { return c.DeleteRetention == NoDeleteRetention }},
		{"delete.retention.ms", "0s", func(c Config) bool { return c.DeleteRetention == NoDeleteRetention }},
		// Refused values, each leaving the config as it was.
		{"partitions", "0", nil},
		{"partitions", "-2", nil},
		{"partitions", "3000000000", nil},
		{"retention.bytes", "0", nil},
		{"retention.bytes", "-5", nil},
		{"retention.ms", "-1s", nil},
		{"retention.ms", "7days", nil},
		{"segment.bytes", "10", nil},
		{"segment.bytes", "3GiB", nil},
		{"segment.ms", "0s", nil},
		{"segment.ms", "-1", nil},
		{"index.interval.bytes", "-1", nil},
		{"index.interval.bytes", "2GiB", nil},
		{"index.interval.bytes", "4k4", nil},
		{"index.interval.bytes", "", nil},
		{"flush", "interval:0s", nil},
		{"flush", "interval", nil},
		{"flush", "every:x", nil},
		{"flush", "sync:1", nil},
		{"flush", "always", nil},
		{"read.path", "MMAP", nil},
		{"cleanup.policy", "compact,compact", nil},
		{"max.message.bytes", "4GiB", nil},
		{"compression.type", "brotli", nil},
		{"retention.hours", "1", nil},
		{"min.cleanable.dirty.ratio", "0", nil},
		{"min.cleanable.dirty.ratio", "-0", nil},
		{"min.cleanable.dirty.ratio", "1.5", nil},
		{"min.cleanable.dirty.ratio", "-0.5", nil},
		{"min.cleanable.dirty.ratio", "NaN", nil},
		{"min.cleanable.dirty.ratio", "half", nil},
		{"min.compaction.lag.ms", "-1", nil},
		{"min.compaction.lag.ms", "soon", nil},
		{"delete.retention.ms", "-1", nil},
		{"delete.retention.ms", "unlimited", nil},
	} {
		c := Config{Partitions: 5}
		err := c.Set(tc.key, tc.value)
		if tc.check == nil {
			if !errors.Is(err, ErrInvalidConfig) {
				t.Errorf("Set(%s, %q) = %v, want ErrInvalidConfig", tc.key, tc.value, err)
			}
			if c != (Config{Partitions: 5}) {
				t.Errorf("failed Set(%s, %q) changed the config to %+v", tc.key, tc.value, c)
			}
			continue
		}
		if err != nil {
			t.Errorf("Set(%s, %q): %v", tc.key, tc.value, err)
		} else if !tc.check(c) {
			t.Errorf("Set(%s, %q) gave %+v", tc.key, tc.value, c)
		}
	}
}

func randomConfig(r *rand.Rand) Config {
	c := Config{
		Partitions:      1 + r.Int32N(MaxPartitions),
		RetentionBytes:  []int64{Unlimited, 1 + r.Int64N(1<<40), 5 << 30}[r.IntN(3)],
		RetentionAge:    []time.Duration{Unlimited, time.Duration(1 + r.Int64N(1<<50)), 3 * 24 * time.Hour}[r.IntN(3)],
		SegmentBytes:    MinSegmentBytes + r.Int64N(MaxSegmentBytes-MinSegmentBytes+1),
		SegmentAge:      time.Duration(1 + r.Int64N(1<<45)),
		ReadPath:        readpath.Kind(r.IntN(2)),
		Cleanup:         CleanupPolicy(r.IntN(len(cleanupNames))),
		TimestampType:   TimestampType(r.IntN(len(timestampTypeNames))),
		MaxMessageBytes: MinMaxMessageBytes + r.Int32N(math.MaxInt32-MinMaxMessageBytes),
		Compression:     Compression(r.IntN(len(compressionNames))),

		MinCleanableDirtyRatio: []float64{1, DefaultMinCleanableDirtyRatio, 1 - r.Float64()}[r.IntN(3)],
		MinCompactionLag:       []time.Duration{0, time.Duration(r.Int64N(1 << 45))}[r.IntN(2)],
		DeleteRetention:        []time.Duration{NoDeleteRetention, DefaultDeleteRetention, time.Duration(1 + r.Int64N(1<<45))}[r.IntN(3)],

		IndexIntervalBytes: []int32{IndexEveryBatch, DefaultIndexIntervalBytes, 1 + r.Int32N(math.MaxInt32)}[r.IntN(3)],
	}
	switch r.IntN(4) {
	case 1:
		c.Flush = log.FlushNone
	case 2:
		c.Flush = log.FlushInterval(time.Duration(1 + r.Int64N(1<<40)))
	case 3:
		c.Flush = log.FlushEveryN(1 + r.Int64N(1<<40))
	}
	return c
}

// TestSettingsRoundTrip: applying a config's Settings to a zero Config
// rebuilds it, for random configs.
func TestSettingsRoundTrip(t *testing.T) {
	seed := testSeed(t)
	r := rand.New(rand.NewPCG(seed, 1))
	for i := 0; i < 2000; i++ {
		want := randomConfig(r)
		if err := want.Validate(); err != nil {
			t.Fatalf("random config %+v invalid: %v", want, err)
		}
		var got Config
		for _, s := range want.Settings() {
			if err := got.Set(s.Key, s.Value); err != nil {
				t.Fatalf("Set(%s, %q) of %+v: %v", s.Key, s.Value, want, err)
			}
		}
		if got != want {
			t.Fatalf("round trip of %+v gave %+v", want, got)
		}
	}
	keys := make([]string, 0, len(Keys))
	for _, s := range (Config{}).Settings() {
		keys = append(keys, s.Key)
	}
	if strings.Join(keys, ",") != strings.Join(Keys, ",") {
		t.Fatalf("Settings keys %v, Keys %v", keys, Keys)
	}
}

func TestParseBytes(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0", 0, true}, {"4096", 4096, true}, {"1b", 1, true}, {"1k", 1024, true}, {"1K", 1024, true},
		{"1KiB", 1024, true}, {"1kB", 1000, true}, {"2MiB", 2 << 20, true}, {"2MB", 2e6, true},
		{"2m", 2 << 20, true}, {"1g", 1 << 30, true}, {"1GB", 1e9, true}, {"3TiB", 3 << 40, true}, {"1tb", 1e12, true},
		{"", 0, false}, {"k", 0, false}, {"-1", 0, false}, {"1.5GiB", 0, false}, {"1 GiB", 0, false},
		{"1PiB", 0, false}, {"9223372036854775807", math.MaxInt64, true}, {"9223372036854775808", 0, false},
		{"8388608TiB", 0, false}, {"+5", 0, false}, {"0x10", 0, false},
	} {
		got, err := ParseBytes(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
	}
	for _, tc := range []struct {
		in   int64
		want string
	}{
		{0, "0"}, {1, "1"}, {1024, "1KiB"}, {1 << 30, "1GiB"}, {1536, "1536"}, {DefaultMaxMessageBytes, "1048588"},
		{5 << 40, "5TiB"}, {Unlimited, "unlimited"},
	} {
		if got := FormatBytes(tc.in); got != tc.want {
			t.Errorf("FormatBytes(%d) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestParseDuration(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"7d", 7 * 24 * time.Hour, true}, {"1d12h", 36 * time.Hour, true}, {"100ms", 100 * time.Millisecond, true},
		{"1h30m", 90 * time.Minute, true}, {"604800000", 7 * 24 * time.Hour, true}, {"0", 0, true}, {"0s", 0, true},
		{"1.5s", 1500 * time.Millisecond, true}, {"2d1.5h", 49*time.Hour + 30*time.Minute, true},
		{"", 0, false}, {"d", 0, false}, {"-1s", 0, false}, {"-1", 0, false}, {"1d-1h", 0, false}, {"7days", 0, false},
		{"1x", 0, false}, {"d5h", 0, false}, {"106752d", 0, false}, {"106751d", 106751 * 24 * time.Hour, true}, {"9223372036854776ms", 0, false},
		{"9223372036854775807", 0, false}, {"1dd", 0, false},
	} {
		got, err := ParseDuration(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
	}
	for _, tc := range []struct {
		in   time.Duration
		want string
	}{
		{7 * 24 * time.Hour, "7d"}, {36 * time.Hour, "1d12h"}, {100 * time.Millisecond, "100ms"}, {0, "0s"},
		{90*time.Second + 5*time.Microsecond + 3, "1m30s5us3ns"}, {Unlimited, "unlimited"},
	} {
		if got := FormatDuration(tc.in); got != tc.want {
			t.Errorf("FormatDuration(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
	seed := testSeed(t)
	r := rand.New(rand.NewPCG(seed, 2))
	for i := 0; i < 10000; i++ {
		d := time.Duration(r.Int64N(math.MaxInt64))
		if i%2 == 0 {
			d = time.Duration(r.Int64N(1e13))
		}
		got, err := ParseDuration(FormatDuration(d))
		if err != nil || got != d {
			t.Fatalf("ParseDuration(FormatDuration(%d) = %q) = %v, %v", d, FormatDuration(d), got, err)
		}
		b := r.Int64N(math.MaxInt64)
		if i%2 == 0 {
			b = r.Int64N(1<<20) << (10 * r.IntN(4))
		}
		if got, err := ParseBytes(FormatBytes(b)); err != nil || got != b {
			t.Fatalf("ParseBytes(FormatBytes(%d) = %q) = %v, %v", b, FormatBytes(b), got, err)
		}
	}
}

// TestFlagValues: the setting types plug into the flag package and JSON.
func TestFlagValues(t *testing.T) {
	var c Config
	fs := flag.NewFlagSet("folio", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Var(&c.Flush, "flush", "flush policy")
	fs.Var(&c.ReadPath, "read-path", "read path")
	fs.Var(&c.Cleanup, "cleanup", "cleanup policy")
	fs.Var(&c.TimestampType, "timestamp", "timestamp type")
	fs.Var(&c.Compression, "compression", "codec")
	err := fs.Parse([]string{"-flush", "interval:250ms", "-read-path", "sendfile", "-cleanup", "compact,delete",
		"-timestamp", "LogAppendTime", "-compression", "lz4"})
	if err != nil {
		t.Fatal(err)
	}
	want := Config{Flush: log.FlushInterval(250 * time.Millisecond), ReadPath: readpath.Sendfile,
		Cleanup: CleanupCompactDelete, TimestampType: LogAppendTime, Compression: CompressionLZ4}
	if c != want {
		t.Fatalf("flags gave %+v, want %+v", c, want)
	}
	if err := fs.Parse([]string{"-flush", "sometimes"}); err == nil {
		t.Fatal("bad -flush accepted")
	}
	if c.Flush != want.Flush {
		t.Fatalf("a refused -flush changed the value to %v", c.Flush)
	}

	type doc struct {
		Flush log.FlushPolicy
		Path  readpath.Kind
		Clean CleanupPolicy
		TS    TimestampType
		Codec Compression
	}
	in := doc{want.Flush, want.ReadPath, want.Cleanup, want.TimestampType, want.Compression}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != `{"Flush":"interval:250ms","Path":"sendfile","Clean":"compact,delete","TS":"LogAppendTime","Codec":"lz4"}` {
		t.Fatalf("json %s", b)
	}
	var out doc
	if err := json.Unmarshal(b, &out); err != nil || out != in {
		t.Fatalf("json round trip: %+v, %v", out, err)
	}
	if _, err := json.Marshal(doc{Path: 7}); err == nil {
		t.Fatal("an unknown read path marshaled")
	}
	if err := json.Unmarshal([]byte(`{"Codec":"brotli"}`), &out); err == nil {
		t.Fatal("an unknown codec unmarshaled")
	}
}

func TestEnums(t *testing.T) {
	if TimestampType(5).String() != "TimestampType(5)" || CleanupCompactDelete.String() != "compact,delete" {
		t.Fatal("String of enums")
	}
	for c, want := range map[CleanupPolicy][2]bool{CleanupDelete: {true, false}, CleanupCompact: {false, true}, CleanupCompactDelete: {true, true}} {
		if c.Deletes() != want[0] || c.Compacts() != want[1] {
			t.Errorf("%v: Deletes %v Compacts %v", c, c.Deletes(), c.Compacts())
		}
	}
	codecs := map[Compression]record.Codec{CompressionNone: record.CodecNone, CompressionGzip: record.CodecGzip,
		CompressionSnappy: record.CodecSnappy, CompressionLZ4: record.CodecLZ4, CompressionZstd: record.CodecZstd}
	for c, want := range codecs {
		if got, ok := c.Codec(); !ok || got != want {
			t.Errorf("%v.Codec() = %v, %v", c, got, ok)
		}
		if p, err := ParseCompression(want.String()); err != nil || p != c {
			t.Errorf("ParseCompression(%q) = %v, %v", want.String(), p, err)
		}
	}
	if _, ok := CompressionProducer.Codec(); ok {
		t.Error("producer compression has a codec")
	}
}

// FuzzConfigSet: no setting string panics, a refused one changes nothing, and
// an accepted one leaves a valid config that Settings reproduces.
func FuzzConfigSet(f *testing.F) {
	for _, k := range Keys {
		f.Add(k, "1")
	}
	for _, s := range [][2]string{{"flush", "interval:1d2h"}, {"flush", "every:9"}, {"retention", "-1"},
		{"segment.bytes", "1GiB"}, {"retention.ms", "9999999999999999"}, {"flush", "interval:"}, {"cleanup.policy", "delete,compact"},
		{"min.cleanable.dirty.ratio", "0.75"}, {"min.cleanable.dirty.ratio", "1e-300"}, {"min.cleanable.dirty.ratio", "0x1p-2"},
		{"delete.retention.ms", "0"}, {"min.compaction.lag.ms", "1d"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, key, value string) {
		c := Config{Partitions: 2}
		if err := c.Set(key, value); err != nil {
			if !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("Set(%q, %q) = %v, not ErrInvalidConfig", key, value, err)
			}
			if c != (Config{Partitions: 2}) {
				t.Fatalf("refused Set changed config to %+v", c)
			}
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("Set(%q, %q) left an invalid config: %v", key, value, err)
		}
		var back Config
		for _, s := range c.Settings() {
			if err := back.Set(s.Key, s.Value); err != nil {
				t.Fatalf("Set(%s, %q): %v", s.Key, s.Value, err)
			}
		}
		if back != c.WithDefaults() {
			t.Fatalf("settings of %+v rebuild %+v", c, back)
		}
	})
}

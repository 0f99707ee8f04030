package partition

import (
	"errors"
	"testing"
	"time"

	"github.com/foliolog/folio/log"
	"github.com/foliolog/folio/readpath"
	"github.com/foliolog/folio/topic"
)

// TestLogOptionsMapCompaction: a topic's cleanup policy and compaction
// settings reach its log as Kafka's broker applies them, with the shared
// cleaner the owner passed.
func TestLogOptionsMapCompaction(t *testing.T) {
	cleaner, err := log.NewCleaner(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cleaner.Close()
	po := &Options{Cleaner: cleaner}
	base := topic.Config{
		RetentionAge: time.Hour, RetentionBytes: 1 << 20,
		MinCleanableDirtyRatio: 0.25, MinCompactionLag: time.Minute, DeleteRetention: 2 * time.Hour,
	}
	for _, tc := range []struct {
		cleanup  topic.CleanupPolicy
		compact  bool
		retained bool // retention by age and size stays on
	}{
		{topic.CleanupDelete, false, true},
		{topic.CleanupCompact, true, false},
		{topic.CleanupCompactDelete, true, true},
	} {
		cfg := base
		cfg.Cleanup = tc.cleanup
		o, err := logOptions(cfg, po, false)
		if err != nil {
			t.Fatalf("%v: %v", tc.cleanup, err)
		}
		if o.Compact != tc.compact {
			t.Errorf("%v: Compact %v, want %v", tc.cleanup, o.Compact, tc.compact)
		}
		if tc.retained && (o.RetentionAge != time.Hour || o.RetentionBytes != 1<<20) {
			t.Errorf("%v: retention %v / %d, want the topic's 1h / 1MiB", tc.cleanup, o.RetentionAge, o.RetentionBytes)
		}
		if !tc.retained && (o.RetentionAge >= 0 || o.RetentionBytes != 0) {
			t.Errorf("%v: retention %v / %d, want none", tc.cleanup, o.RetentionAge, o.RetentionBytes)
		}
		if o.Cleaner != cleaner {
			t.Errorf("%v: the log gets a cleaner other than the owner's", tc.cleanup)
		}
		if o.MinCleanableDirtyRatio != 0.25 || o.MinCompactionLag != time.Minute || o.DeleteRetention != 2*time.Hour {
			t.Errorf("%v: ratio %v, lag %v, delete retention %v; want 0.25, 1m, 2h", tc.cleanup,
				o.MinCleanableDirtyRatio, o.MinCompactionLag, o.DeleteRetention)
		}
	}
	// Defaults are Kafka's; Kafka's delete.retention.ms=0 is the log's
	// "none" (negative), not its default (zero).
	o, err := logOptions(topic.Config{Cleanup: topic.CleanupCompact}, po, false)
	if err != nil {
		t.Fatal(err)
	}
	if o.MinCleanableDirtyRatio != 0.5 || o.MinCompactionLag != 0 || o.DeleteRetention != 24*time.Hour {
		t.Errorf("defaults: ratio %v, lag %v, delete retention %v", o.MinCleanableDirtyRatio, o.MinCompactionLag, o.DeleteRetention)
	}
	var none topic.Config
	if err := none.Set(topic.KeyDeleteRetention, "0"); err != nil {
		t.Fatal(err)
	}
	if o, err = logOptions(none, po, false); err != nil || o.DeleteRetention >= 0 {
		t.Errorf("delete.retention.ms=0 maps to DeleteRetention %v (%v), want negative", o.DeleteRetention, err)
	}
	if o, err = logOptions(topic.Config{Cleanup: topic.CleanupCompact}, &Options{ReadOnly: true}, false); err != nil || o.Cleaner != nil || !o.ReadOnly {
		t.Fatalf("read-only options: cleaner %p, read-only %v, %v", o.Cleaner, o.ReadOnly, err)
	}
}

// TestLogOptionsMapTopicSettings: flush policy, read path, timestamp type,
// the batch limit and unlimited retention map onto the log's terms, and
// the hook's wish for an external high watermark reaches the log.
func TestLogOptionsMapTopicSettings(t *testing.T) {
	for _, tc := range []struct {
		flush log.FlushPolicy
		want  log.FlushPolicy
	}{
		{log.FlushSync, log.FlushSync},
		{log.FlushNone, log.FlushNone},
		{log.FlushInterval(time.Second), log.FlushInterval(time.Second)},
		{log.FlushEveryN(7), log.FlushEveryN(7)},
	} {
		o, err := logOptions(topic.Config{Flush: tc.flush}, &Options{}, false)
		if err != nil || o.FlushPolicy != tc.want {
			t.Errorf("flush %+v: %v (%v), want %v", tc.flush, o.FlushPolicy, err, tc.want)
		}
	}
	o, err := logOptions(topic.Config{ReadPath: readpath.Sendfile, TimestampType: topic.LogAppendTime,
		MaxMessageBytes: 4096, RetentionAge: topic.Unlimited, RetentionBytes: topic.Unlimited}, &Options{}, true)
	if err != nil {
		t.Fatal(err)
	}
	if o.ReadPath != readpath.Sendfile || !o.LogAppendTime || o.MaxBatchBytes != 4096 || o.RetentionAge >= 0 || o.RetentionBytes != 0 || !o.ExternalHighWatermark {
		t.Fatalf("log options %+v", o)
	}
	if o, _ := logOptions(topic.Config{}, &Options{}, false); o.ReadPath != readpath.Mmap || o.LogAppendTime || o.ExternalHighWatermark {
		t.Fatalf("default log options %+v", o)
	}
	// The batch limit never passes a segment.
	if o, _ := logOptions(topic.Config{SegmentBytes: 1000, MaxMessageBytes: 5000}, &Options{}, false); o.MaxBatchBytes != 1000 {
		t.Fatalf("MaxBatchBytes %d in segments of 1000", o.MaxBatchBytes)
	}
}

// TestLogOptionsMapIndexInterval: index.interval.bytes reaches the log's
// IndexIntervalBytes, Kafka's default when unset, and Kafka's 0 (every
// batch) as the log's 1, since the log's 0 means its default.
func TestLogOptionsMapIndexInterval(t *testing.T) {
	for _, tc := range []struct {
		value string // "" leaves it unset
		want  int
	}{
		{"", log.DefaultIndexIntervalBytes},
		{"128", 128},
		{"4096", 4096},
		{"1", 1},
		{"0", 1},
		{"2147483647", 1<<31 - 1},
	} {
		var cfg topic.Config
		if tc.value != "" {
			if err := cfg.Set(topic.KeyIndexInterval, tc.value); err != nil {
				t.Fatal(err)
			}
		}
		o, err := logOptions(cfg, &Options{}, false)
		if err != nil {
			t.Fatalf("index.interval.bytes=%q: %v", tc.value, err)
		}
		if o.IndexIntervalBytes != tc.want {
			t.Errorf("index.interval.bytes=%q: IndexIntervalBytes %d, want %d", tc.value, o.IndexIntervalBytes, tc.want)
		}
	}
}

func TestValidateConfig(t *testing.T) {
	if err := ValidateConfig(topic.Config{}); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	// The topic package allows segments the log cannot roll.
	if err := ValidateConfig(topic.Config{SegmentBytes: 100}); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("100-byte segments: %v, want ErrInvalidConfig", err)
	}
	if err := ValidateConfig(topic.Config{Partitions: -1}); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("negative partitions: %v, want ErrInvalidConfig", err)
	}
}

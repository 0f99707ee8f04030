package folio

import (
	"context"
	"errors"
	"testing"

	"github.com/foliolog/folio/partition"
)

// TestAlterTopicConfigLive lowers max.message.bytes and sets retention on
// an open topic: a Producer made before the change refuses a record the
// topic took before it, retention deletes by the new size rule, the
// configuration survives a reopen, and a change the open partitions cannot
// apply is refused with nothing changed.
func TestAlterTopicConfigLive(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	b := openT(t, dir, nil)
	if _, err := b.CreateTopic("t", TopicConfig{Partitions: 1, SegmentBytes: 4096, Flush: FlushNone}); err != nil {
		t.Fatal(err)
	}
	pr, err := b.NewProducer(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	big := make([]byte, 2000)
	for range 8 {
		if _, _, err := pr.Produce(ctx, &Record{Topic: "t", Value: big}); err != nil {
			t.Fatal(err)
		}
	}
	in, err := b.AlterTopicConfig("t", false, func(c *TopicConfig) error {
		c.MaxMessageBytes = 1000
		c.RetentionBytes = 4096
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if in.Config.MaxMessageBytes != 1000 || in.Config.RetentionBytes != 4096 {
		t.Fatalf("AlterTopicConfig answered %+v", in.Config)
	}
	if _, _, err := pr.Produce(ctx, &Record{Topic: "t", Value: big}); !errors.Is(err, ErrMessageTooLarge) {
		t.Fatalf("a 2000-byte record after max.message.bytes=1000: %v, want ErrMessageTooLarge", err)
	}
	if _, _, err := pr.Produce(ctx, &Record{Topic: "t", Value: make([]byte, 100)}); err != nil {
		t.Fatal(err)
	}
	n, err := b.EnforceRetention()
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatal("retention.bytes=4096 over ~16 KB of segments deleted nothing")
	}

	// Not live: refused, the configuration unchanged.
	_, err = b.AlterTopicConfig("t", false, func(c *TopicConfig) error { c.Flush = FlushSync; return nil })
	if !errors.Is(err, ErrInvalidConfig) || !errors.Is(err, partition.ErrNotLive) {
		t.Fatalf("changing the flush policy of an open topic: %v, want ErrInvalidConfig and ErrNotLive", err)
	}
	// validateOnly changes nothing.
	if _, err := b.AlterTopicConfig("t", true, func(c *TopicConfig) error { c.MaxMessageBytes = 500; return nil }); err != nil {
		t.Fatal(err)
	}
	if got, _ := b.DescribeTopic("t"); got.Config.MaxMessageBytes != 1000 || got.Config.Flush != FlushNone {
		t.Fatalf("after a refused change and a validate-only one: %+v", got.Config)
	}
	if _, err := b.AlterTopicConfig("__consumer_offsets", false, func(*TopicConfig) error { return nil }); !errors.Is(err, ErrReservedName) {
		t.Fatalf("altering an internal topic: %v", err)
	}

	pr.Close()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b = openT(t, dir, nil)
	got, err := b.DescribeTopic("t")
	if err != nil {
		t.Fatal(err)
	}
	if got.Config.MaxMessageBytes != 1000 || got.Config.RetentionBytes != 4096 {
		t.Fatalf("after reopen: %+v", got.Config)
	}
}

package folio

import (
	"context"
	"crypto/rand"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestAlterTopicConfigLive lowers max.message.bytes and sets retention on
// an open topic: a Producer made before the change refuses a record the
// topic took before it, retention deletes by the new size rule, the
// configuration survives a reopen, and an invalid change is refused with
// nothing changed.
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

	// Invalid: refused, the configuration unchanged.
	_, err = b.AlterTopicConfig("t", false, func(c *TopicConfig) error { c.MinCleanableDirtyRatio = 2; return nil })
	if !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("min.cleanable.dirty.ratio=2: %v, want ErrInvalidConfig", err)
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

// TestAlterConfigsOverTheWire: a Kafka client's IncrementalAlterConfigs
// reaches the open topic of a real Broker (its in-process Producer, made
// before, refuses a record above the new max.message.bytes) and the
// catalog (the value survives a reopen); the internal offsets topic is
// refused.
func TestAlterConfigsOverTheWire(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dir := t.TempDir()
	b, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := b.CreateTopic("t", TopicConfig{Partitions: 2}); err != nil {
		t.Fatal(err)
	}
	pr, err := b.NewProducer(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	big := make([]byte, 2000)
	rand.Read(big)
	if _, _, err := pr.Produce(ctx, &Record{Topic: "t", Value: big}); err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(serveT(t, b)))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if _, err := b.GroupCoordinator(); err != nil {
		t.Fatal(err)
	}
	rs, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "max.message.bytes", Value: ptrTo("1000")}}, "t", "__consumer_offsets")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		switch r.Name {
		case "t":
			if r.Err != nil {
				t.Fatalf("t: %v %s", r.Err, r.ErrMessage)
			}
		default:
			if r.Err == nil {
				t.Fatalf("%s: altered", r.Name)
			}
		}
	}
	if _, _, err := pr.Produce(ctx, &Record{Topic: "t", Value: big}); !errors.Is(err, ErrMessageTooLarge) {
		t.Fatalf("a 2000-byte record after max.message.bytes=1000 over the wire: %v", err)
	}
	cl.Close()
	pr.Close()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b2 := openT(t, dir, nil)
	if got, err := b2.DescribeTopic("t"); err != nil || got.Config.MaxMessageBytes != 1000 {
		t.Fatalf("after reopen: %+v %v", got.Config, err)
	}
}

func ptrTo(s string) *string { return &s }

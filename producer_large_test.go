package folio

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/foliolog/folio/readpath"
	"github.com/foliolog/folio/record"
)

// TestProducerRecordAboveBatchBytes: BatchBytes (64 KiB here) caps how
// many records go together, not a record: one of 200 KiB, which the
// topic's default max.message.bytes (1 MiB) takes, goes in a batch of its
// own between the small ones; only a record above max.message.bytes fails.
func TestProducerRecordAboveBatchBytes(t *testing.T) {
	b := openT(t, t.TempDir(), nil)
	createTopicT(t, b, "t", TopicConfig{})
	p := producerT(t, b, &ProducerOptions{BatchBytes: 64 << 10})
	ctx := context.Background()
	big := bytes.Repeat([]byte("b"), 200<<10)
	vals := [][]byte{[]byte("small 0"), big, []byte("small 2")}
	done := make(chan error, len(vals))
	for _, v := range vals { // async, so the small ones could share its batch
		p.ProduceAsync(ctx, &Record{Topic: "t", Value: v}, func(_ *Record, err error) { done <- err })
	}
	for range vals {
		if err := <-done; err != nil {
			t.Fatalf("producing a record that fits max.message.bytes: %v", err)
		}
	}
	c := consumerT(t, b, nil)
	_ = c.Assign(Assignment{Topic: "t", Start: AtEarliest()})
	for i, r := range pollN(t, c, len(vals)) {
		if r.Offset != int64(i) || !bytes.Equal(r.Value, vals[i]) {
			t.Fatalf("record %d: offset %d, %d bytes; want %d bytes", i, r.Offset, len(r.Value), len(vals[i]))
		}
	}
	l, err := partLog(b, "t", 0)
	if err != nil {
		t.Fatal(err)
	}
	v, err := l.Read(1, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := readpath.Guard(func() error {
		buf, err := v.Bytes()
		if err != nil {
			return err
		}
		bt, _, err := record.Parse(buf)
		if err == nil && (bt.BaseOffset() != 1 || bt.NumRecords() != 1) {
			t.Errorf("the large record's batch starts at %d with %d records; want it alone", bt.BaseOffset(), bt.NumRecords())
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	v.Release()

	huge := bytes.Repeat([]byte("h"), 1<<20+1)
	if _, _, err := p.Produce(ctx, &Record{Topic: "t", Value: huge}); !errors.Is(err, ErrMessageTooLarge) {
		t.Fatalf("a record above max.message.bytes: %v, want ErrMessageTooLarge", err)
	}
}

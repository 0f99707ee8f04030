package transport

import (
	"fmt"
	"testing"
	"time"

	"github.com/foliolog/folio/topic"
	kafka "github.com/segmentio/kafka-go"
)

// TestKafkaGoProduceConsume: segmentio/kafka-go negotiates its own
// versions (older ones than franz-go) and must work as well.
func TestKafkaGoProduceConsume(t *testing.T) {
	ts := startServer(t, nil, nil)
	ts.b.mustCreate(t, "kg", topic.Config{Partitions: 1})
	ctx := testCtx(t)
	tr := &kafka.Transport{} // its own, so its idle connections close with the test
	defer tr.CloseIdleConnections()
	for _, codec := range []kafka.Compression{0, kafka.Gzip, kafka.Snappy, kafka.Lz4, kafka.Zstd} {
		w := &kafka.Writer{Addr: kafka.TCP(ts.addr), Topic: "kg", RequiredAcks: kafka.RequireAll, Compression: codec, BatchTimeout: time.Millisecond, Transport: tr}
		var msgs []kafka.Message
		for i := range 20 {
			msgs = append(msgs, kafka.Message{Key: fmt.Appendf(nil, "k%d", i), Value: fmt.Appendf(nil, "%v-%d", codec, i)})
		}
		if err := w.WriteMessages(ctx, msgs...); err != nil {
			t.Fatalf("codec %v: %v", codec, err)
		}
		w.Close()
	}
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: []string{ts.addr}, Topic: "kg", Partition: 0, MaxWait: 50 * time.Millisecond})
	defer r.Close()
	if err := r.SetOffset(kafka.FirstOffset); err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		m, err := r.ReadMessage(ctx)
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		if m.Offset != int64(i) || string(m.Key) != fmt.Sprintf("k%d", i%20) {
			t.Fatalf("message %d: offset %d key %q", i, m.Offset, m.Key)
		}
	}
	// Metadata and offsets through kafka-go's Client.
	cl := &kafka.Client{Addr: kafka.TCP(ts.addr), Transport: tr}
	offs, err := cl.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{"kg": {kafka.LastOffsetOf(0), kafka.FirstOffsetOf(0)}}})
	if err != nil {
		t.Fatal(err)
	}
	if p := offs.Topics["kg"]; len(p) != 1 || p[0].LastOffset != 100 || p[0].FirstOffset != 0 {
		t.Fatalf("ListOffsets: %+v", p)
	}
}

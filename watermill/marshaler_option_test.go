package foliowatermill_test

import (
	"context"
	"testing"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/foliolog/folio"
	foliowatermill "github.com/foliolog/folio/watermill"
)

// jsonEnvelope is an application's own mapping: the UUID in a header of
// its choice, the payload as the value, and the key left empty.
type jsonEnvelope struct{}

func (jsonEnvelope) Marshal(_ string, msg *message.Message) (*folio.Record, error) {
	return &folio.Record{Value: msg.Payload, Headers: []folio.Header{{Key: "id", Value: []byte(msg.UUID)}}}, nil
}

func (jsonEnvelope) Unmarshal(rec *folio.Record) (*message.Message, error) {
	var id string
	for _, h := range rec.Headers {
		if h.Key == "id" {
			id = string(h.Value)
		}
	}
	msg := message.NewMessage(id, rec.Value)
	msg.Metadata.Set("via", "envelope")
	return msg, nil
}

// TestMarshalerOption: the mapping is overridable. A Marshaler in the
// Publisher's options decides the record that is stored (read back with a
// plain Folio consumer), and one in the Subscriber's options decides the
// message that is delivered.
func TestMarshalerOption(t *testing.T) {
	b := openBroker(t, t.TempDir())
	pub := newPub(t, b, &foliowatermill.PublisherOptions{Marshaler: jsonEnvelope{}})
	if err := pub.Publish("custom", message.NewMessage("uuid-1", []byte(`{"n":1}`))); err != nil {
		t.Fatal(err)
	}
	c, err := b.NewConsumer(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Assign(folio.Assignment{Topic: "custom", Partition: 0}); err != nil {
		t.Fatal(err)
	}
	recs, err := c.Poll(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 || recs[0].Key != nil || string(recs[0].Value) != `{"n":1}` ||
		len(recs[0].Headers) != 1 || recs[0].Headers[0].Key != "id" || string(recs[0].Headers[0].Value) != "uuid-1" {
		t.Fatalf("stored %+v, want the envelope's record", recs)
	}
	sub := newSub(t, b, &foliowatermill.SubscriberOptions{Marshaler: jsonEnvelope{}})
	ch, err := sub.Subscribe(context.Background(), "custom")
	if err != nil {
		t.Fatal(err)
	}
	msg := receive(t, ch)
	msg.Ack()
	if msg.UUID != "uuid-1" || string(msg.Payload) != `{"n":1}` || msg.Metadata.Get("via") != "envelope" {
		t.Fatalf("delivered %s %q %v, want the envelope's message", msg.UUID, msg.Payload, msg.Metadata)
	}
}

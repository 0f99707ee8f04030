package foliowatermill_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/foliolog/folio"
	foliowatermill "github.com/foliolog/folio/watermill"
	"go.uber.org/goleak"
)

// TestMain fails the run on goroutines left behind. Watermill's suite
// leaves some of its own: its test multiplier, which fans several
// subscribers into one channel, forwards on an unbuffered channel that
// nobody reads once a test has what it wanted.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreAnyFunction("github.com/ThreeDotsLabs/watermill/internal/subscriber.(*multiplier).Subscribe.func2"),
		goleak.IgnoreAnyFunction("github.com/ThreeDotsLabs/watermill/internal/subscriber.(*multiplier).Subscribe.func3"),
	)
}

const waitLimit = 10 * time.Second

func openBroker(t *testing.T, dir string) *folio.Broker {
	t.Helper()
	b, err := folio.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

func newPub(t *testing.T, b *folio.Broker, opts *foliowatermill.PublisherOptions) *foliowatermill.Publisher {
	t.Helper()
	p, err := foliowatermill.NewPublisher(b, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

func newSub(t *testing.T, b *folio.Broker, opts *foliowatermill.SubscriberOptions) *foliowatermill.Subscriber {
	t.Helper()
	s, err := foliowatermill.NewSubscriber(b, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func publishN(t *testing.T, p *foliowatermill.Publisher, topic string, n int) []string {
	t.Helper()
	var ids []string
	var msgs []*message.Message
	for i := range n {
		id := fmt.Sprintf("m-%03d", i)
		msgs = append(msgs, message.NewMessage(id, []byte(id)))
		ids = append(ids, id)
	}
	if err := p.Publish(topic, msgs...); err != nil {
		t.Fatal(err)
	}
	return ids
}

// receive takes the next message or fails after waitLimit.
func receive(t *testing.T, ch <-chan *message.Message) *message.Message {
	t.Helper()
	select {
	case msg, ok := <-ch:
		if !ok {
			t.Fatal("channel closed")
		}
		return msg
	case <-time.After(waitLimit):
		t.Fatal("no message within", waitLimit)
	}
	return nil
}

func TestMarshalerRoundTrip(t *testing.T) {
	msg := message.NewMessage("uuid-1", []byte("payload"))
	msg.Metadata.Set("b", "2")
	msg.Metadata.Set("a", "1")
	for _, tc := range []struct {
		name    string
		m       foliowatermill.DefaultMarshaler
		wantKey string
	}{
		{"uuid key", foliowatermill.DefaultMarshaler{}, "uuid-1"},
		{"partition key", foliowatermill.DefaultMarshaler{PartitionKey: func(topic string, m *message.Message) ([]byte, error) {
			return []byte(topic + "/" + m.Metadata.Get("a")), nil
		}}, "t/1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec, err := tc.m.Marshal("t", msg)
			if err != nil {
				t.Fatal(err)
			}
			if string(rec.Key) != tc.wantKey || string(rec.Value) != "payload" {
				t.Fatalf("key %q value %q", rec.Key, rec.Value)
			}
			var names []string
			for _, h := range rec.Headers {
				names = append(names, h.Key)
			}
			want := "[a b]"
			if tc.m.PartitionKey != nil {
				want = "[" + foliowatermill.UUIDHeader + " a b]"
			}
			if fmt.Sprint(names) != want {
				t.Fatalf("headers %v, want %s", names, want)
			}
			back, err := tc.m.Unmarshal(rec)
			if err != nil {
				t.Fatal(err)
			}
			if back.UUID != "uuid-1" || string(back.Payload) != "payload" || len(back.Metadata) != 2 ||
				back.Metadata.Get("a") != "1" || back.Metadata.Get("b") != "2" {
				t.Fatalf("round trip gave %s %q %v", back.UUID, back.Payload, back.Metadata)
			}
		})
	}
	bad := message.NewMessage("u", nil)
	bad.Metadata.Set(foliowatermill.UUIDHeader, "x")
	if _, err := (foliowatermill.DefaultMarshaler{}).Marshal("t", bad); err == nil {
		t.Fatal("metadata named UUIDHeader was accepted")
	}
}

// Without a group every subscription sees every message, in order.
func TestNoGroupFanOut(t *testing.T) {
	b := openBroker(t, t.TempDir())
	pub := newPub(t, b, nil)
	ids := publishN(t, pub, "fan", 10)
	var chans []<-chan *message.Message
	for range 2 {
		ch, err := newSub(t, b, nil).Subscribe(context.Background(), "fan")
		if err != nil {
			t.Fatal(err)
		}
		chans = append(chans, ch)
	}
	for i, ch := range chans {
		for _, id := range ids {
			msg := receive(t, ch)
			if msg.UUID != id {
				t.Fatalf("subscriber %d got %s, want %s", i, msg.UUID, id)
			}
			msg.Ack()
		}
	}
}

// Subscriptions of one group share the partitions: each message reaches
// one of them, and each reads its own partition.
func TestGroupSharesPartitions(t *testing.T) {
	b := openBroker(t, t.TempDir())
	cfg := folio.TopicConfig{Partitions: 2}
	pub := newPub(t, b, &foliowatermill.PublisherOptions{TopicConfig: cfg})
	opts := &foliowatermill.SubscriberOptions{ConsumerGroup: "g", TopicConfig: cfg}
	// Subscribe returns once the member holds its assignment: after the
	// second returns, the group has settled with one partition each.
	ch1, err := newSub(t, b, opts).Subscribe(context.Background(), "shared")
	if err != nil {
		t.Fatal(err)
	}
	ch2, err := newSub(t, b, opts).Subscribe(context.Background(), "shared")
	if err != nil {
		t.Fatal(err)
	}
	ids := publishN(t, pub, "shared", 100)
	got := map[string]int{}
	parts := [2]map[int32]bool{{}, {}}
	for len(got) < len(ids) {
		var msg *message.Message
		var from int
		select {
		case msg = <-ch1:
		case msg = <-ch2:
			from = 1
		case <-time.After(waitLimit):
			t.Fatalf("%d of %d messages received", len(got), len(ids))
		}
		got[msg.UUID]++
		ri, ok := foliowatermill.RecordFromContext(msg.Context())
		if !ok || ri.Topic != "shared" {
			t.Fatalf("RecordFromContext = %+v, %v", ri, ok)
		}
		parts[from][ri.Partition] = true
		msg.Ack()
	}
	for id, n := range got {
		if n != 1 {
			t.Fatalf("%s delivered %d times", id, n)
		}
	}
	if len(parts[0]) != 1 || len(parts[1]) != 1 || fmt.Sprint(parts[0]) == fmt.Sprint(parts[1]) {
		t.Fatalf("partitions read per subscription: %v", parts)
	}
}

// A nacked message comes again, before any later one.
func TestNackRedelivers(t *testing.T) {
	b := openBroker(t, t.TempDir())
	ids := publishN(t, newPub(t, b, nil), "nack", 2)
	ch, err := newSub(t, b, &foliowatermill.SubscriberOptions{ConsumerGroup: "g"}).Subscribe(context.Background(), "nack")
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		msg := receive(t, ch)
		if msg.UUID != ids[0] {
			t.Fatalf("got %s after a nack, want %s again", msg.UUID, ids[0])
		}
		msg.Nack()
		select {
		case <-msg.Context().Done():
		case <-time.After(waitLimit):
			t.Fatal("message context not cancelled after Nack")
		}
	}
	receive(t, ch).Ack()
	if msg := receive(t, ch); msg.UUID != ids[1] {
		t.Fatalf("got %s, want %s", msg.UUID, ids[1])
	}
}

// Offsets are committed after Ack, durably: a new subscription of the group,
// even on a reopened Broker, starts after the last acked message, and the
// message delivered but not acked comes again.
func TestCommitAfterAck(t *testing.T) {
	dir := t.TempDir()
	b, err := folio.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := foliowatermill.NewPublisher(b, nil)
	if err != nil {
		t.Fatal(err)
	}
	ids := publishN(t, pub, "commits", 5)
	opts := &foliowatermill.SubscriberOptions{ConsumerGroup: "g"}
	sub, err := foliowatermill.NewSubscriber(b, opts)
	if err != nil {
		t.Fatal(err)
	}
	ch, err := sub.Subscribe(context.Background(), "commits")
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids[:3] {
		msg := receive(t, ch)
		if msg.UUID != id {
			t.Fatalf("got %s, want %s", msg.UUID, id)
		}
		msg.Ack()
	}
	unacked := receive(t, ch)
	if err := sub.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-unacked.Context().Done():
	default:
		t.Fatal("context of a message in flight not cancelled by Close")
	}
	if err := errors.Join(pub.Close(), b.Close()); err != nil {
		t.Fatal(err)
	}

	b = openBroker(t, dir)
	ch, err = newSub(t, b, opts).Subscribe(context.Background(), "commits")
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids[3:] {
		msg := receive(t, ch)
		if msg.UUID != id {
			t.Fatalf("after reopen got %s, want %s", msg.UUID, id)
		}
		msg.Ack()
	}
}

// Close ends every subscription at once and is idempotent; Subscribe and
// Publish after Close fail with their sentinels.
func TestClose(t *testing.T) {
	b := openBroker(t, t.TempDir())
	pub := newPub(t, b, nil)
	sub := newSub(t, b, &foliowatermill.SubscriberOptions{ConsumerGroup: "g"})
	plain := newSub(t, b, nil)
	var chans []<-chan *message.Message
	for _, s := range []*foliowatermill.Subscriber{sub, plain} {
		for _, topic := range []string{"c1", "c2"} {
			ch, err := s.Subscribe(context.Background(), topic)
			if err != nil {
				t.Fatal(err)
			}
			chans = append(chans, ch)
		}
	}
	publishN(t, pub, "c1", 3) // one message each sits unacked in c1's subscriptions
	receive(t, chans[0])
	receive(t, chans[2])
	for _, s := range []*foliowatermill.Subscriber{sub, plain} {
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatalf("second Close: %v", err)
		}
	}
	for i, ch := range chans {
		select {
		case _, ok := <-ch:
			if ok {
				t.Fatalf("channel %d delivered after Close", i)
			}
		default:
			t.Fatalf("channel %d not closed when Close returned", i)
		}
	}
	if _, err := sub.Subscribe(context.Background(), "c1"); !errors.Is(err, foliowatermill.ErrSubscriberClosed) {
		t.Fatalf("Subscribe after Close: %v", err)
	}
	if err := errors.Join(pub.Close(), pub.Close()); err != nil {
		t.Fatal(err)
	}
	if err := pub.Publish("c1", message.NewMessage("x", nil)); !errors.Is(err, foliowatermill.ErrPublisherClosed) {
		t.Fatalf("Publish after Close: %v", err)
	}
}

// Subscribe's context ends the subscription.
func TestSubscribeContext(t *testing.T) {
	b := openBroker(t, t.TempDir())
	ctx, cancel := context.WithCancel(context.Background())
	ch, err := newSub(t, b, nil).Subscribe(ctx, "ctx")
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	select {
	case _, ok := <-ch:
		if ok {
			t.Fatal("message on an empty topic")
		}
	case <-time.After(waitLimit):
		t.Fatal("channel not closed after the context ended")
	}
}

func TestDisableTopicCreation(t *testing.T) {
	b := openBroker(t, t.TempDir())
	pub := newPub(t, b, &foliowatermill.PublisherOptions{DisableTopicCreation: true})
	if err := pub.Publish("missing", message.NewMessage("x", nil)); !errors.Is(err, folio.ErrUnknownTopic) {
		t.Fatalf("Publish to a missing topic: %v", err)
	}
	sub := newSub(t, b, &foliowatermill.SubscriberOptions{DisableTopicCreation: true})
	if _, err := sub.Subscribe(context.Background(), "missing"); !errors.Is(err, folio.ErrUnknownTopic) {
		t.Fatalf("Subscribe to a missing topic: %v", err)
	}
	if _, err := foliowatermill.NewSubscriber(b, &foliowatermill.SubscriberOptions{NackResendDelay: -1}); !errors.Is(err, folio.ErrInvalidConfig) {
		t.Fatalf("negative NackResendDelay: %v", err)
	}
}

// A consumed message can be published on after its Ack, when its context
// has ended (as a forwarding handler does).
func TestForwardAckedMessage(t *testing.T) {
	b := openBroker(t, t.TempDir())
	pub := newPub(t, b, nil)
	in := message.NewMessage("fwd-1", []byte("body"))
	in.Metadata.Set("trace", "t-1")
	if err := pub.Publish("first", in); err != nil {
		t.Fatal(err)
	}
	sub := newSub(t, b, nil)
	ch, err := sub.Subscribe(context.Background(), "first")
	if err != nil {
		t.Fatal(err)
	}
	msg := receive(t, ch)
	msg.Ack()
	select {
	case <-msg.Context().Done():
	case <-time.After(waitLimit):
		t.Fatal("context not cancelled after Ack")
	}
	if err := pub.Publish("second", msg); err != nil {
		t.Fatalf("publishing an acked message: %v", err)
	}
	ch2, err := sub.Subscribe(context.Background(), "second")
	if err != nil {
		t.Fatal(err)
	}
	got := receive(t, ch2)
	if got.UUID != "fwd-1" || string(got.Payload) != "body" || got.Metadata.Get("trace") != "t-1" {
		t.Fatalf("forwarded %s %q %v", got.UUID, got.Payload, got.Metadata)
	}
	got.Ack()
}

// With CommitInterval, acks within a batch wait for the batch's end or the
// subscription's; nothing acked is lost at Close.
func TestCommitInterval(t *testing.T) {
	b := openBroker(t, t.TempDir())
	ids := publishN(t, newPub(t, b, nil), "batched", 5)
	opts := &foliowatermill.SubscriberOptions{ConsumerGroup: "g", CommitInterval: time.Hour}
	sub := newSub(t, b, opts)
	ch, err := sub.Subscribe(context.Background(), "batched")
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids[:3] {
		msg := receive(t, ch)
		if msg.UUID != id {
			t.Fatalf("got %s, want %s", msg.UUID, id)
		}
		msg.Ack()
	}
	receive(t, ch) // the fourth: the three acks before it are still held back
	committed := func() int64 {
		t.Helper()
		lags, err := b.GroupLag("g")
		if err != nil || len(lags) != 1 {
			t.Fatalf("GroupLag: %v %v", lags, err)
		}
		return lags[0].Committed
	}
	if c := committed(); c != -1 {
		t.Fatalf("committed %d within the batch, want none yet", c)
	}
	if err := sub.Close(); err != nil {
		t.Fatal(err)
	}
	if c := committed(); c != 3 {
		t.Fatalf("committed %d after Close, want 3", c)
	}
	ch, err = newSub(t, b, opts).Subscribe(context.Background(), "batched")
	if err != nil {
		t.Fatal(err)
	}
	if msg := receive(t, ch); msg.UUID != ids[3] {
		t.Fatalf("next subscription starts at %s, want %s", msg.UUID, ids[3])
	}
}

package foliowatermill

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/foliolog/folio"
)

// ErrPublisherClosed is returned by Publish after Close.
var ErrPublisherClosed = errors.New("foliowatermill: publisher closed")

// PublisherOptions configure a Publisher. A nil *PublisherOptions, and
// every zero field, means the default stated on the field.
type PublisherOptions struct {
	// Marshaler turns messages into records. Default DefaultMarshaler{}.
	Marshaler Marshaler
	// Producer configures the underlying folio.Producer (batching,
	// compression, idempotence). Default nil: folio's defaults, except
	// that a zero Linger means none rather than folio's 5 ms: Publish
	// waits for its messages, so a linger would only delay it. Set Linger
	// to let concurrent Publish calls share batches at that cost.
	Producer *folio.ProducerOptions
	// DisableTopicCreation makes Publish to a missing topic fail with an
	// error matching folio.ErrUnknownTopic. Default false: the topic is
	// created with TopicConfig.
	DisableTopicCreation bool
	// TopicConfig is the configuration of topics the Publisher creates.
	// Default: the zero folio.TopicConfig (one partition, FlushSync).
	TopicConfig folio.TopicConfig
	// Logger receives the Publisher's events. Default watermill.NopLogger.
	Logger watermill.LoggerAdapter
}

// Publisher publishes Watermill messages to a folio.Broker. It implements
// message.Publisher and is safe for concurrent use.
type Publisher struct {
	b      *folio.Broker
	opts   PublisherOptions
	prod   *folio.Producer
	topics *topics

	closed  atomic.Bool
	closeMu sync.Mutex // serializes Close; guards err
	err     error
}

var _ message.Publisher = (*Publisher)(nil)

// NewPublisher returns a Publisher over b. b must stay open until the
// Publisher is closed.
func NewPublisher(b *folio.Broker, opts *PublisherOptions) (*Publisher, error) {
	var o PublisherOptions
	if opts != nil {
		o = *opts
	}
	if o.Marshaler == nil {
		o.Marshaler = DefaultMarshaler{}
	}
	if o.Logger == nil {
		o.Logger = watermill.NopLogger{}
	}
	var po folio.ProducerOptions
	if o.Producer != nil {
		po = *o.Producer
	}
	if po.Linger == 0 {
		po.Linger = -1 // none: see PublisherOptions.Producer
	}
	prod, err := b.NewProducer(&po)
	if err != nil {
		return nil, fmt.Errorf("foliowatermill: new producer: %w", err)
	}
	return &Publisher{b: b, opts: o, prod: prod, topics: newTopics(b, o.DisableTopicCreation, o.TopicConfig)}, nil
}

// Publish appends msgs to topic and returns once every one of them is
// acknowledged under the topic's flush policy (durable on disk under
// FlushSync), or with the errors of those that failed. Messages of one call
// that go to one partition keep their order there.
func (p *Publisher) Publish(topic string, msgs ...*message.Message) error {
	if p.closed.Load() {
		return ErrPublisherClosed
	}
	if err := p.topics.ensureKnown(topic); err != nil {
		return err
	}
	recs := make([]*folio.Record, len(msgs))
	for i, msg := range msgs {
		rec, err := p.opts.Marshaler.Marshal(topic, msg)
		if err != nil {
			return err
		}
		rec.Topic = topic
		recs[i] = rec
	}
	errs := make([]error, len(recs))
	var wg sync.WaitGroup
	wg.Add(len(recs))
	for i, rec := range recs {
		// Not the message's context: a consumed message being forwarded
		// has a context that ended with its Ack. A wait for buffer memory
		// ends at Close.
		p.prod.ProduceAsync(context.Background(), rec, func(_ *folio.Record, err error) {
			errs[i] = err
			wg.Done()
		})
	}
	wg.Wait()
	var all []error
	for i, err := range errs {
		if errors.Is(err, folio.ErrClosed) && p.closed.Load() {
			err = ErrPublisherClosed
		}
		if err != nil {
			if errors.Is(err, folio.ErrUnknownTopic) {
				p.topics.forget(topic)
			}
			all = append(all, fmt.Errorf("foliowatermill: publish message %s to %q: %w", msgs[i].UUID, topic, err))
			continue
		}
		p.opts.Logger.Trace("message published", watermill.LogFields{
			"uuid": msgs[i].UUID, "topic": topic, "partition": recs[i].Partition, "offset": recs[i].Offset,
		})
	}
	return errors.Join(all...)
}

// Close appends what Publish calls in progress have buffered, waits until
// each of their messages is settled, and releases the producer. A Publish
// call waiting for buffer memory then, and every later one, returns
// ErrPublisherClosed. Close is idempotent: later calls return what the
// first returned.
func (p *Publisher) Close() error {
	p.closeMu.Lock()
	defer p.closeMu.Unlock()
	if !p.closed.CompareAndSwap(false, true) {
		return p.err
	}
	if err := p.prod.Close(); err != nil && !errors.Is(err, folio.ErrClosed) {
		p.err = fmt.Errorf("foliowatermill: close producer: %w", err)
	}
	return p.err
}

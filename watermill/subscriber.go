package foliowatermill

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/foliolog/folio"
	"github.com/foliolog/folio/group"
)

// ErrSubscriberClosed is returned by Subscribe after Close.
var ErrSubscriberClosed = errors.New("foliowatermill: subscriber closed")

// Defaults of SubscriberOptions.
const (
	// DefaultCommitTimeout bounds the commit of an acked message's offset.
	DefaultCommitTimeout = 30 * time.Second
	// DefaultPollRetryDelay is how long a subscription waits before it
	// polls again after a failed poll.
	DefaultPollRetryDelay = time.Second
)

// SubscriberOptions configure a Subscriber. A nil *SubscriberOptions, and
// every zero field, means the default stated on the field.
type SubscriberOptions struct {
	// ConsumerGroup, if set, makes every subscription a member of this
	// Folio consumer group: the group's members share the partitions of
	// the topic, and offsets are committed after Ack. Default "": every
	// subscription reads every partition and commits nothing.
	ConsumerGroup string
	// StartAtLatest starts a subscription without a committed offset at
	// the end of each partition (only messages published from then on).
	// Default false: at the earliest retained message, as
	// watermill-kafka does.
	StartAtLatest bool
	// NackResendDelay is how long a nacked message waits before it is
	// sent again. Default 0: at once.
	NackResendDelay time.Duration
	// CommitInterval, with a ConsumerGroup, lets acked offsets wait: they
	// are committed at most this often while a polled batch is being
	// delivered, and always before the next poll and when the
	// subscription ends, so a commit covers many messages. A crash then
	// delivers again up to the messages acked since the last commit.
	// Default 0: each Ack is committed, durably, before the next message
	// is sent (one fsync of __consumer_offsets per message).
	CommitInterval time.Duration
	// CommitTimeout bounds one commit. Default DefaultCommitTimeout.
	CommitTimeout time.Duration
	// PollRetryDelay is the pause after a failed poll (a deleted topic, a
	// failed read) before the next. Default DefaultPollRetryDelay.
	PollRetryDelay time.Duration
	// Marshaler turns records into messages. Default DefaultMarshaler{}.
	Marshaler Marshaler
	// DisableTopicCreation makes Subscribe to a missing topic fail with an
	// error matching folio.ErrUnknownTopic. Default false: the topic is
	// created with TopicConfig.
	DisableTopicCreation bool
	// TopicConfig is the configuration of topics the Subscriber creates.
	// Default: the zero folio.TopicConfig (one partition, FlushSync).
	TopicConfig folio.TopicConfig
	// Group configures the group membership (session timeout, assignors,
	// static membership). Its Reset is replaced as StartAtLatest says and
	// its auto-commit is turned off: the Subscriber commits after Ack.
	// Default nil: folio's defaults.
	Group *folio.GroupOptions
	// Consumer configures the underlying consumer (name, batch sizes);
	// ZeroCopy is turned off, since messages outlive a poll. Default nil.
	Consumer *folio.ConsumerOptions
	// Logger receives the Subscriber's events. Default watermill.NopLogger.
	Logger watermill.LoggerAdapter
}

// Subscriber subscribes to topics of a folio.Broker. It implements
// message.Subscriber and message.SubscribeInitializer and is safe for
// concurrent use.
type Subscriber struct {
	b      *folio.Broker
	opts   SubscriberOptions
	topics *topics

	ctx    context.Context // cancelled by Close
	cancel context.CancelFunc

	mu     sync.Mutex
	closed bool
	subs   sync.WaitGroup
}

var (
	_ message.Subscriber           = (*Subscriber)(nil)
	_ message.SubscribeInitializer = (*Subscriber)(nil)
)

// NewSubscriber returns a Subscriber over b. b must stay open until the
// Subscriber is closed.
func NewSubscriber(b *folio.Broker, opts *SubscriberOptions) (*Subscriber, error) {
	var o SubscriberOptions
	if opts != nil {
		o = *opts
	}
	switch {
	case o.NackResendDelay < 0:
		return nil, fmt.Errorf("%w: SubscriberOptions.NackResendDelay %v is negative", folio.ErrInvalidConfig, o.NackResendDelay)
	case o.CommitInterval < 0:
		return nil, fmt.Errorf("%w: SubscriberOptions.CommitInterval %v is negative", folio.ErrInvalidConfig, o.CommitInterval)
	case o.CommitTimeout < 0:
		return nil, fmt.Errorf("%w: SubscriberOptions.CommitTimeout %v is negative", folio.ErrInvalidConfig, o.CommitTimeout)
	case o.PollRetryDelay < 0:
		return nil, fmt.Errorf("%w: SubscriberOptions.PollRetryDelay %v is negative", folio.ErrInvalidConfig, o.PollRetryDelay)
	}
	if o.Marshaler == nil {
		o.Marshaler = DefaultMarshaler{}
	}
	if o.Logger == nil {
		o.Logger = watermill.NopLogger{}
	}
	if o.CommitTimeout == 0 {
		o.CommitTimeout = DefaultCommitTimeout
	}
	if o.PollRetryDelay == 0 {
		o.PollRetryDelay = DefaultPollRetryDelay
	}
	s := &Subscriber{b: b, opts: o, topics: newTopics(b, o.DisableTopicCreation, o.TopicConfig)}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	return s, nil
}

// SubscribeInitialize creates topic if it is missing (and creation is
// allowed), so that messages published before the first Subscribe are
// kept for it.
func (s *Subscriber) SubscribeInitialize(topic string) error {
	_, err := s.topics.ensure(topic)
	return err
}

// source is what a subscription reads: a plain consumer or a group member.
// Only the subscription's goroutine uses it.
type source interface {
	Poll(ctx context.Context) ([]folio.Record, error)
	// commit records that rec was acked, committing it now or later.
	commit(ctx context.Context, rec *folio.Record) error
	// flush commits what commit left waiting.
	flush(ctx context.Context) error
	Close() error
}

type plainSource struct{ *folio.Consumer }

func (plainSource) commit(context.Context, *folio.Record) error { return nil }
func (plainSource) flush(context.Context) error                 { return nil }

type groupSource struct {
	*folio.GroupConsumer
	interval time.Duration
	pending  map[folio.TopicPartition]int64
	last     time.Time
}

func (g *groupSource) commit(ctx context.Context, rec *folio.Record) error {
	g.pending[folio.TopicPartition{Topic: rec.Topic, Partition: rec.Partition}] = rec.Offset + 1
	if g.interval > 0 && time.Since(g.last) < g.interval {
		return nil
	}
	return g.flush(ctx)
}

func (g *groupSource) flush(ctx context.Context) error {
	if len(g.pending) == 0 {
		return nil
	}
	err := g.CommitOffsets(ctx, g.pending)
	// Cleared on failure too: a commit refused after a rebalance would be
	// refused again, and the partition's new owner redelivers.
	clear(g.pending)
	g.last = time.Now()
	return err
}

// Subscribe returns a channel of the messages of topic. The channel is
// closed when ctx ends or the Subscriber is closed. With a ConsumerGroup,
// Subscribe returns once the subscription holds its first assignment.
func (s *Subscriber) Subscribe(ctx context.Context, topic string) (<-chan *message.Message, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, ErrSubscriberClosed
	}
	s.subs.Add(1)
	s.mu.Unlock()

	subCtx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(s.ctx, cancel)
	src, err := s.open(subCtx, topic)
	if err != nil {
		stop()
		cancel()
		s.subs.Done()
		return nil, err
	}
	out := make(chan *message.Message)
	logger := s.opts.Logger.With(watermill.LogFields{"topic": topic, "consumer_group": s.opts.ConsumerGroup})
	go func() {
		defer s.subs.Done()
		defer close(out)
		defer cancel()
		defer stop()
		defer func() {
			if err := src.Close(); err != nil && !errors.Is(err, folio.ErrClosed) {
				logger.Error("closing the subscription's consumer failed", err, nil)
			}
		}()
		s.run(subCtx, src, out, logger)
		s.flush(subCtx, src, logger) // what was acked before the end
	}()
	return out, nil
}

// open returns the subscription's source.
func (s *Subscriber) open(ctx context.Context, topic string) (source, error) {
	info, err := s.topics.ensure(topic)
	if err != nil {
		return nil, err
	}
	var co folio.ConsumerOptions
	if s.opts.Consumer != nil {
		co = *s.opts.Consumer
	}
	co.ZeroCopy = false
	if s.opts.ConsumerGroup == "" {
		co.Reset = folio.ResetEarliest // retention passed the position: go on from what is left
		c, err := s.b.NewConsumer(&co)
		if err != nil {
			return nil, fmt.Errorf("foliowatermill: new consumer: %w", err)
		}
		start := folio.AtEarliest()
		if s.opts.StartAtLatest {
			start = folio.AtLatest()
		}
		as := make([]folio.Assignment, len(info.Partitions))
		for i, p := range info.Partitions {
			as[i] = folio.Assignment{Topic: topic, Partition: p.Partition, Start: start}
		}
		if err := c.Assign(as...); err != nil {
			_ = c.Close()
			return nil, fmt.Errorf("foliowatermill: assign %q: %w", topic, err)
		}
		return plainSource{c}, nil
	}
	var gopts folio.GroupOptions
	if s.opts.Group != nil {
		gopts = *s.opts.Group
	}
	gopts.DisableAutoCommit = true
	gopts.Reset = group.ResetEarliest
	if s.opts.StartAtLatest {
		gopts.Reset = group.ResetLatest
	}
	gopts.Consumer = &co
	gc, err := s.b.JoinGroup(ctx, s.opts.ConsumerGroup, []string{topic}, &gopts)
	if err != nil {
		return nil, fmt.Errorf("foliowatermill: join group %q for %q: %w", s.opts.ConsumerGroup, topic, err)
	}
	return &groupSource{GroupConsumer: gc, interval: s.opts.CommitInterval, pending: map[folio.TopicPartition]int64{}, last: time.Now()}, nil
}

// run polls and delivers until ctx ends or the broker closes.
func (s *Subscriber) run(ctx context.Context, src source, out chan<- *message.Message, logger watermill.LoggerAdapter) {
	for {
		s.flush(ctx, src, logger) // the previous batch's acks, before a rebalance can move them
		recs, err := src.Poll(ctx)
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, folio.ErrClosed) {
				return
			}
			logger.Error("poll failed; retrying", err, watermill.LogFields{"retry_in": s.opts.PollRetryDelay})
			if !wait(ctx, s.opts.PollRetryDelay) {
				return
			}
			continue
		}
		for i := range recs {
			if !s.deliver(ctx, src, &recs[i], out, logger) {
				return
			}
		}
	}
}

// deliver sends rec's message until it is acked, and then commits it. It
// reports false when the subscription ends first.
func (s *Subscriber) deliver(ctx context.Context, src source, rec *folio.Record, out chan<- *message.Message, logger watermill.LoggerAdapter) bool {
	fields := watermill.LogFields{"partition": rec.Partition, "offset": rec.Offset}
	for {
		msg, err := s.opts.Marshaler.Unmarshal(rec)
		if err != nil {
			// A record that is no message is skipped, as acked: stopping
			// would block the partition for good.
			logger.Error("cannot unmarshal record; skipped", err, fields)
			return s.commit(ctx, src, rec, logger, fields)
		}
		msgCtx, cancelMsg := context.WithCancel(context.WithValue(ctx, recordKey{}, RecordInfo{
			Topic: rec.Topic, Partition: rec.Partition, Offset: rec.Offset, Timestamp: rec.Timestamp,
		}))
		msg.SetContext(msgCtx)
		select {
		case out <- msg:
		case <-ctx.Done():
			cancelMsg()
			return false
		}
		select {
		case <-msg.Acked():
			cancelMsg()
			logger.Trace("message acked", fields)
			return s.commit(ctx, src, rec, logger, fields)
		case <-msg.Nacked():
			cancelMsg()
			logger.Trace("message nacked; sending it again", fields)
			if !wait(ctx, s.opts.NackResendDelay) {
				return false
			}
		case <-ctx.Done():
			cancelMsg()
			return false
		}
	}
}

// commit commits past rec, now or (with CommitInterval) later. It runs
// even when the subscription is ending, so that an Ack just before Close
// counts; a failure is logged (the message will be delivered again). It
// reports whether the subscription goes on.
func (s *Subscriber) commit(ctx context.Context, src source, rec *folio.Record, logger watermill.LoggerAdapter, fields watermill.LogFields) bool {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.opts.CommitTimeout)
	defer cancel()
	if err := src.commit(cctx, rec); err != nil {
		logger.Error("commit after ack failed; the messages will be delivered again", err, fields)
	}
	return ctx.Err() == nil
}

// flush commits what src holds back, also when the subscription is ending.
func (s *Subscriber) flush(ctx context.Context, src source, logger watermill.LoggerAdapter) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.opts.CommitTimeout)
	defer cancel()
	if err := src.flush(cctx); err != nil {
		logger.Error("commit of acked messages failed; they will be delivered again", err, nil)
	}
}

// wait waits d or until ctx ends, reporting whether d passed.
func wait(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// Close ends every subscription and returns once their channels are
// closed and their consumers released. Messages sent and not yet acked are
// delivered again to the next subscription. Close is idempotent.
func (s *Subscriber) Close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.cancel()
	s.subs.Wait()
	return nil
}

// RecordInfo says where a delivered message was read from.
type RecordInfo struct {
	Topic     string
	Partition int32
	Offset    int64
	Timestamp time.Time
}

type recordKey struct{}

// RecordFromContext returns where the message whose context ctx is came
// from, and false for a context of no delivered message.
func RecordFromContext(ctx context.Context) (RecordInfo, bool) {
	ri, ok := ctx.Value(recordKey{}).(RecordInfo)
	return ri, ok
}

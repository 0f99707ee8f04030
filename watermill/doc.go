// Package foliowatermill is a Watermill Pub/Sub (github.com/ThreeDotsLabs/watermill)
// over a *folio.Broker: a Publisher and a Subscriber that let services written
// against Watermill's message.Publisher and message.Subscriber run on an
// embedded Folio queue, and move to Apache Kafka (watermill-kafka) later
// without touching their handlers: examples/watermillkafka (a module of its
// own) runs one service both ways.
//
// The package lives in its own Go module, github.com/foliolog/folio/watermill,
// so that an application importing only github.com/foliolog/folio never pulls
// in Watermill. Its name is foliowatermill rather than watermill so that it
// can be imported beside Watermill's own package without renaming.
//
// # Mapping
//
// A Marshaler turns messages into records and back; DefaultMarshaler maps
// the message UUID onto the record key, each metadata entry onto a header
// (in name order) and the payload onto the value. Replace it through
// PublisherOptions.Marshaler and SubscriberOptions.Marshaler.
//
// # Topics and partitions
//
// A Watermill topic is a Folio topic. Publish and Subscribe create a topic
// that does not exist yet with the TopicConfig of their options (one
// partition by default), unless DisableTopicCreation is set. Order is
// guaranteed within a partition: a topic of one partition delivers in
// publish order; with more, records go to partitions by key.
//
// # Subscriptions
//
// Without SubscriberOptions.ConsumerGroup, every subscription reads every
// partition of its topic on its own, from the earliest record by default
// (StartAtLatest: only new ones): every subscriber sees every message, and
// nothing is committed. With a ConsumerGroup, the subscription joins that
// Folio consumer group: the group's subscriptions share the partitions, and
// a message's offset is committed (durably, in __consumer_offsets) after
// it is acked, before the next message of the subscription is sent, so a
// subscription that replaces it continues after the last acked message.
// SubscriberOptions.CommitInterval trades that for throughput: acked
// offsets then wait, at most that long within a polled batch, and are
// always committed before the next poll and when the subscription ends.
//
// A subscription sends one message at a time and waits for its Ack or
// Nack: a nacked message is sent again (a fresh copy, after
// NackResendDelay) until it is acked, so order is kept across failures.
// Delivery is at least once: a crash or a rebalance between the handler's
// Ack and the commit delivers the message again.
//
// Each message's context is derived from the context given to Subscribe
// and is cancelled once the message is acked or nacked, or the
// subscription ends; RecordFromContext returns where the message came
// from.
//
// Close on a Subscriber ends its subscriptions and returns once their
// channels are closed; Close on a Publisher returns once every message
// of a Publish call in progress is settled. Both are idempotent.
package foliowatermill

package folio

import "time"

// Metrics is the hook through which a Broker reports events as they happen,
// for an adapter to a metrics system (Prometheus, OpenTelemetry) that lives
// outside this module: the core depends on no metrics library. Stats gives
// the same picture as a snapshot instead.
//
// Methods are called on the produce and consume paths, from many
// goroutines at once: implementations must be safe for concurrent use,
// fast, and must not call back into the Broker. Embed NoMetrics in an
// implementation so that methods added later get a no-op default.
type Metrics interface {
	// Appended reports records appended to a partition: how many, their
	// size in bytes as stored (batch headers included), and how long the
	// append took, including the wait for the fsync under FlushSync.
	Appended(topic string, partition int32, records, bytes int, took time.Duration)
	// AppendFailed reports an append that wrote nothing or whose outcome
	// is unknown: a full disk, a failed partition, a refused batch.
	AppendFailed(topic string, partition int32, err error)
	// Consumed reports records handed to a consumer from a partition, and
	// the bytes of the batches they came from.
	Consumed(topic string, partition int32, records, bytes int)
	// ProduceBlocked reports a produce call that waited for buffer memory
	// (ProducerOptions.MaxBufferedBytes), and for how long.
	ProduceBlocked(waited time.Duration)
	// Fsynced reports one fsync of a partition's files and how long it
	// took: the group commits that FlushSync acknowledgements wait for, and
	// the seals of rolled segments.
	Fsynced(topic string, partition int32, took time.Duration)
	// Checkpointed reports a write of the checkpoint file: how many
	// partitions it covered, how long it took, and its error, if any.
	Checkpointed(partitions int, took time.Duration, err error)
}

// NoMetrics implements Metrics by doing nothing. Embed it to implement only
// some of the methods.
type NoMetrics struct{}

func (NoMetrics) Appended(string, int32, int, int, time.Duration) {}
func (NoMetrics) AppendFailed(string, int32, error)               {}
func (NoMetrics) Consumed(string, int32, int, int)                {}
func (NoMetrics) ProduceBlocked(time.Duration)                    {}
func (NoMetrics) Fsynced(string, int32, time.Duration)            {}
func (NoMetrics) Checkpointed(int, time.Duration, error)          {}

var _ Metrics = NoMetrics{}

package folioprom

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/foliolog/folio"
	"github.com/prometheus/client_golang/prometheus"
)

// Defaults of Options.
var (
	// DefaultLatencyBuckets are the upper bounds, in seconds, of the
	// latency histograms: 50 µs to about 3.3 s, doubling.
	DefaultLatencyBuckets = prometheus.ExponentialBuckets(50e-6, 2, 17)
)

// DefaultGroupLagTimeout bounds the listing of consumer groups at a scrape.
const DefaultGroupLagTimeout = 5 * time.Second

// Options configure a Collector. A nil *Options, and every zero field,
// means the default stated on the field.
type Options struct {
	// DropPartitionLabel reports per topic instead of per partition:
	// counters, sizes and lag are summed over the topic's partitions and
	// the per-partition offsets are left out. For topics with many
	// partitions, to bound the series. Default false.
	DropPartitionLabel bool
	// LatencyBuckets are the histogram buckets in seconds. Default
	// DefaultLatencyBuckets.
	LatencyBuckets []float64
	// ConstLabels are added to every metric, for example to tell two
	// Brokers of one process apart. Default none.
	ConstLabels prometheus.Labels
	// GroupLagTimeout bounds how long a scrape waits for the group
	// coordinator's listing. Default DefaultGroupLagTimeout.
	GroupLagTimeout time.Duration
}

// Collector implements folio.Metrics and prometheus.Collector; see the
// package documentation. It is safe for concurrent use.
type Collector struct {
	opts Options

	recordsIn, bytesIn, recordsOut, bytesOut *prometheus.CounterVec
	appendFailures                           *prometheus.CounterVec
	appendSeconds, fsyncSeconds              *prometheus.HistogramVec
	blockedSeconds, checkpointSeconds        prometheus.Histogram
	checkpointFailures                       prometheus.Counter

	// series caches the children of the vectors above per partition (per
	// topic with DropPartitionLabel: partition -1), for the hot path.
	series sync.Map // seriesKey -> *partSeries

	brokerMu sync.Mutex
	broker   *folio.Broker

	descs statDescs
}

type seriesKey struct {
	topic     string
	partition int32
}

type partSeries struct {
	recordsIn, bytesIn, recordsOut, bytesOut prometheus.Counter
	appendFailures                           prometheus.Counter
	appendSeconds, fsyncSeconds              prometheus.Observer
}

var (
	_ folio.Metrics        = (*Collector)(nil)
	_ prometheus.Collector = (*Collector)(nil)
)

// New returns a Collector. Pass it as folio.Options.Metrics to Open, then
// Attach the Broker, and register it on a registry.
func New(opts *Options) *Collector {
	var o Options
	if opts != nil {
		o = *opts
	}
	if len(o.LatencyBuckets) == 0 {
		o.LatencyBuckets = DefaultLatencyBuckets
	}
	if o.GroupLagTimeout <= 0 {
		o.GroupLagTimeout = DefaultGroupLagTimeout
	}
	c := &Collector{opts: o}
	part := []string{"topic", "partition"}
	if o.DropPartitionLabel {
		part = []string{"topic"}
	}
	counter := func(name, help string, labels []string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help, ConstLabels: o.ConstLabels}, labels)
	}
	histogram := func(name, help string, labels []string) *prometheus.HistogramVec {
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: name, Help: help, ConstLabels: o.ConstLabels, Buckets: o.LatencyBuckets,
		}, labels)
	}
	c.recordsIn = counter("folio_records_in_total", "Records appended.", part)
	c.bytesIn = counter("folio_bytes_in_total", "Bytes appended, as stored (batch headers included).", part)
	c.recordsOut = counter("folio_records_out_total", "Records handed to consumers and Kafka fetches.", part)
	c.bytesOut = counter("folio_bytes_out_total", "Bytes of the batches that consumed records came from.", part)
	c.appendFailures = counter("folio_append_failures_total", "Appends that wrote nothing or whose outcome is unknown.", []string{"topic"})
	c.appendSeconds = histogram("folio_append_duration_seconds", "Time an append took, the wait for its fsync under FlushSync included.", []string{"topic"})
	c.fsyncSeconds = histogram("folio_fsync_duration_seconds", "Time an fsync of a partition's files took.", []string{"topic"})
	c.blockedSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "folio_produce_blocked_duration_seconds", Help: "Time produce calls waited for buffer memory.",
		ConstLabels: o.ConstLabels, Buckets: o.LatencyBuckets,
	})
	c.checkpointSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "folio_checkpoint_duration_seconds", Help: "Time a write of the checkpoint file took.",
		ConstLabels: o.ConstLabels, Buckets: o.LatencyBuckets,
	})
	c.checkpointFailures = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "folio_checkpoint_failures_total", Help: "Checkpoint writes that failed.", ConstLabels: o.ConstLabels,
	})
	c.descs = newStatDescs(o)
	return c
}

// Attach makes the Collector report b's Stats at every scrape. Without it
// only the hook's metrics are reported. Attach(nil) detaches.
func (c *Collector) Attach(b *folio.Broker) {
	c.brokerMu.Lock()
	c.broker = b
	c.brokerMu.Unlock()
}

func (c *Collector) seriesFor(topic string, partition int32) *partSeries {
	if c.opts.DropPartitionLabel {
		partition = -1
	}
	k := seriesKey{topic, partition}
	if s, ok := c.series.Load(k); ok {
		return s.(*partSeries)
	}
	labels := []string{topic}
	if !c.opts.DropPartitionLabel {
		labels = append(labels, strconv.Itoa(int(partition)))
	}
	s := &partSeries{
		recordsIn:      c.recordsIn.WithLabelValues(labels...),
		bytesIn:        c.bytesIn.WithLabelValues(labels...),
		recordsOut:     c.recordsOut.WithLabelValues(labels...),
		bytesOut:       c.bytesOut.WithLabelValues(labels...),
		appendFailures: c.appendFailures.WithLabelValues(topic),
		appendSeconds:  c.appendSeconds.WithLabelValues(topic),
		fsyncSeconds:   c.fsyncSeconds.WithLabelValues(topic),
	}
	got, _ := c.series.LoadOrStore(k, s)
	return got.(*partSeries)
}

// Appended implements folio.Metrics.
func (c *Collector) Appended(topic string, partition int32, records, bytes int, took time.Duration) {
	s := c.seriesFor(topic, partition)
	s.recordsIn.Add(float64(records))
	s.bytesIn.Add(float64(bytes))
	s.appendSeconds.Observe(took.Seconds())
}

// AppendFailed implements folio.Metrics.
func (c *Collector) AppendFailed(topic string, partition int32, _ error) {
	c.seriesFor(topic, partition).appendFailures.Inc()
}

// Consumed implements folio.Metrics.
func (c *Collector) Consumed(topic string, partition int32, records, bytes int) {
	s := c.seriesFor(topic, partition)
	s.recordsOut.Add(float64(records))
	s.bytesOut.Add(float64(bytes))
}

// ProduceBlocked implements folio.Metrics.
func (c *Collector) ProduceBlocked(waited time.Duration) { c.blockedSeconds.Observe(waited.Seconds()) }

// Fsynced implements folio.Metrics.
func (c *Collector) Fsynced(topic string, partition int32, took time.Duration) {
	c.seriesFor(topic, partition).fsyncSeconds.Observe(took.Seconds())
}

// Checkpointed implements folio.Metrics.
func (c *Collector) Checkpointed(_ int, took time.Duration, err error) {
	c.checkpointSeconds.Observe(took.Seconds())
	if err != nil {
		c.checkpointFailures.Inc()
	}
}

func (c *Collector) vecs() []prometheus.Collector {
	return []prometheus.Collector{
		c.recordsIn, c.bytesIn, c.recordsOut, c.bytesOut, c.appendFailures,
		c.appendSeconds, c.fsyncSeconds, c.blockedSeconds, c.checkpointSeconds, c.checkpointFailures,
	}
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, v := range c.vecs() {
		v.Describe(ch)
	}
	c.descs.describe(ch)
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	c.brokerMu.Lock()
	b := c.broker
	c.brokerMu.Unlock()
	if b != nil {
		st := b.Stats()
		c.prune(st)
		c.collectStats(ch, b, st)
	}
	for _, v := range c.vecs() {
		v.Collect(ch)
	}
}

// prune drops the hook's series of partitions the Broker no longer has
// (deleted topics), so that their series end.
func (c *Collector) prune(st folio.Stats) {
	live := make(map[seriesKey]bool, len(st.Partitions))
	for _, p := range st.Partitions {
		k := seriesKey{p.Topic, p.Partition}
		if c.opts.DropPartitionLabel {
			k.partition = -1
		}
		live[k] = true
	}
	topics := map[string]bool{}
	for k := range live {
		topics[k.topic] = true
	}
	c.series.Range(func(key, _ any) bool {
		k := key.(seriesKey)
		if live[k] {
			return true
		}
		c.series.Delete(k)
		labels := []string{k.topic}
		if !c.opts.DropPartitionLabel {
			labels = append(labels, strconv.Itoa(int(k.partition)))
		}
		for _, v := range []*prometheus.CounterVec{c.recordsIn, c.bytesIn, c.recordsOut, c.bytesOut} {
			v.DeleteLabelValues(labels...)
		}
		if !topics[k.topic] {
			c.appendFailures.DeleteLabelValues(k.topic)
			c.appendSeconds.DeleteLabelValues(k.topic)
			c.fsyncSeconds.DeleteLabelValues(k.topic)
		}
		return true
	})
}

// groupLagContext bounds the coordinator calls of one scrape.
func (c *Collector) groupLagContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), c.opts.GroupLagTimeout)
}

package transport

import (
	"fmt"
	"strconv"
	"time"

	"github.com/foliolog/folio/errs"
	"github.com/foliolog/folio/log"
	"github.com/foliolog/folio/topic"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Topic configurations over the wire use Kafka's names and units
// (retention.ms=604800000, segment.bytes=1073741824, -1 for unlimited).
// The keys the topic package acts on are translated both ways; Folio's own
// (flush, read.path) are answered beside them, and Kafka's flush.messages
// and flush.ms map onto Folio's flush policy. Keys Kafka clients commonly
// send that Folio does not act on (replication, Kafka's index knobs,
// tiered storage) are accepted by CreateTopics and reported by
// DescribeConfigs with Kafka's default, never refused.

// Kafka's config sources (DescribeConfigs).
const (
	sourceTopic   = 1 // DYNAMIC_TOPIC_CONFIG (TOPIC_CONFIG before KIP-226)
	sourceBroker  = 4 // STATIC_BROKER_CONFIG
	sourceDefault = 5 // DEFAULT_CONFIG
)

// kafkaConfig is one configuration entry in Kafka's form.
type kafkaConfig struct {
	name, value string
	source      int8
	readOnly    bool
}

// acceptedKeys are Kafka topic configs accepted and not acted on, with
// the default Kafka reports for them.
var acceptedKeys = map[string]string{
	"min.insync.replicas":                     "1",
	"segment.index.bytes":                     "10485760",
	"segment.jitter.ms":                       "0",
	"preallocate":                             "false",
	"file.delete.delay.ms":                    "60000",
	"max.compaction.lag.ms":                   "9223372036854775807",
	"message.downconversion.enable":           "true",
	"message.timestamp.difference.max.ms":     "9223372036854775807",
	"message.timestamp.before.max.ms":         "9223372036854775807",
	"message.timestamp.after.max.ms":          "9223372036854775807",
	"local.retention.ms":                      "-2",
	"local.retention.bytes":                   "-2",
	"remote.storage.enable":                   "false",
	"leader.replication.throttled.replicas":   "",
	"follower.replication.throttled.replicas": "",
}

// setKafkaConfig applies one CreateTopics config to cfg: a key the topic
// package knows (in Kafka's units, which it accepts), or one of
// acceptedKeys (ignored). Anything else is an error naming the key.
func setKafkaConfig(cfg *topic.Config, key, value string) error {
	if _, ok := acceptedKeys[key]; ok {
		return nil
	}
	if key == keyFlushMessages || key == keyFlushMs {
		return setKafkaFlush(cfg, key, value)
	}
	if key == topic.KeyPartitions {
		return fmt.Errorf("%w: %q is not a topic config (use the partition count)", topic.ErrInvalidConfig, key)
	}
	if key == topic.KeyCompression && value == "uncompressed" {
		value = "none" // Kafka's name
	}
	if err := cfg.Set(key, value); err != nil {
		return fmt.Errorf("%w: %w", topic.ErrInvalidConfig, err)
	}
	return nil
}

func ms(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }

// Kafka's flush keys, mapped onto Folio's one flush policy (topic.KeyFlush):
// flush.messages=1 is sync, N > 1 every:N; flush.ms=D is interval:D (0 is
// sync). Each reports the policy it expresses and Kafka's "never"
// (Long.MAX_VALUE) otherwise, so that values read back by DescribeConfigs
// and sent again (as AlterConfigs does) change nothing: "never" turns the
// key's own kind of policy into none and leaves any other as it is.
const (
	keyFlushMessages = "flush.messages"
	keyFlushMs       = "flush.ms"
	kafkaNever       = "9223372036854775807"
)

func setKafkaFlush(cfg *topic.Config, key, value string) error {
	n, err := strconv.ParseInt(value, 10, 64)
	if err != nil || n < 0 || (key == keyFlushMessages && n < 1) {
		return fmt.Errorf("%w: %s=%q is not a count of records (at least 1)/milliseconds", topic.ErrInvalidConfig, key, value)
	}
	cur := cfg.WithDefaults().Flush
	switch {
	case value == kafkaNever && key == keyFlushMessages:
		if cur == log.FlushSync || cur.EveryN() > 0 {
			cfg.Flush = log.FlushNone
		}
	case value == kafkaNever:
		if cur.Interval() > 0 {
			cfg.Flush = log.FlushNone
		}
	case key == keyFlushMessages && n == 1, key == keyFlushMs && n == 0:
		cfg.Flush = log.FlushSync
	case key == keyFlushMessages:
		cfg.Flush = log.FlushEveryN(n)
	default:
		cfg.Flush = log.FlushInterval(time.Duration(n) * time.Millisecond)
	}
	return nil
}

// kafkaValues returns cfg's settings in Kafka's form, by name.
func kafkaValues(cfg topic.Config) [][2]string {
	cfg = cfg.WithDefaults()
	unlimited := func(n int64) string {
		if n < 0 {
			return "-1"
		}
		return strconv.FormatInt(n, 10)
	}
	retention := "-1"
	if cfg.RetentionAge >= 0 {
		retention = ms(cfg.RetentionAge)
	}
	compression := cfg.Compression.String()
	if cfg.Compression == topic.CompressionNone {
		compression = "uncompressed" // Kafka's name
	}
	deleteRetention := "0"
	if cfg.DeleteRetention > 0 {
		deleteRetention = ms(cfg.DeleteRetention)
	}
	indexInterval := strconv.FormatInt(int64(cfg.IndexIntervalBytes), 10)
	if cfg.IndexIntervalBytes == topic.IndexEveryBatch {
		indexInterval = "0" // Kafka's "every batch", which Set reads back so
	}
	flushMessages, flushMs := kafkaNever, kafkaNever
	switch {
	case cfg.Flush == log.FlushSync:
		flushMessages = "1"
	case cfg.Flush.EveryN() > 0:
		flushMessages = strconv.FormatInt(cfg.Flush.EveryN(), 10)
	case cfg.Flush.Interval() > 0:
		// At least 1: 0 would read back as sync.
		flushMs = strconv.FormatInt(max(1, cfg.Flush.Interval().Milliseconds()), 10)
	}
	return [][2]string{
		{"cleanup.policy", cfg.Cleanup.String()},
		{"compression.type", compression},
		{"delete.retention.ms", deleteRetention},
		{keyFlushMessages, flushMessages},
		{keyFlushMs, flushMs},
		{topic.KeyIndexInterval, indexInterval},
		{"max.message.bytes", strconv.FormatInt(int64(cfg.MaxMessageBytes), 10)},
		{"message.timestamp.type", cfg.TimestampType.String()},
		{"min.cleanable.dirty.ratio", strconv.FormatFloat(cfg.MinCleanableDirtyRatio, 'g', -1, 64)},
		{"min.compaction.lag.ms", ms(cfg.MinCompactionLag)},
		{"retention.bytes", unlimited(cfg.RetentionBytes)},
		{"retention.ms", retention},
		{"segment.bytes", strconv.FormatInt(cfg.SegmentBytes, 10)},
		{"segment.ms", ms(cfg.SegmentAge)},
		{topic.KeyFlush, cfg.Flush.String()},
		{topic.KeyReadPath, cfg.ReadPath.String()},
		{topic.KeyUnclean, strconv.FormatBool(cfg.UncleanLeaderElection)},
	}
}

// topicConfigs returns a topic's configuration as DescribeConfigs and
// CreateTopics answer it: each value with its source (the topic's own, or
// the default when it equals the default), then the accepted keys.
func topicConfigs(cfg topic.Config) []kafkaConfig {
	defaults := map[string]string{}
	for _, kv := range kafkaValues(topic.Config{}) {
		defaults[kv[0]] = kv[1]
	}
	var out []kafkaConfig
	for _, kv := range kafkaValues(cfg) {
		src := int8(sourceTopic)
		if defaults[kv[0]] == kv[1] {
			src = sourceDefault
		}
		out = append(out, kafkaConfig{name: kv[0], value: kv[1], source: src})
	}
	for k, v := range acceptedKeys {
		out = append(out, kafkaConfig{name: k, value: v, source: sourceDefault, readOnly: true})
	}
	return out
}

// brokerConfigs returns the broker configs the server answers for.
func (s *Server) brokerConfigs() []kafkaConfig {
	return []kafkaConfig{
		{"auto.create.topics.enable", strconv.FormatBool(!s.opts.DisableAutoCreate), sourceBroker, true},
		{"num.partitions", strconv.FormatInt(int64(s.opts.AutoCreatePartitions), 10), sourceBroker, true},
		{"socket.request.max.bytes", strconv.Itoa(s.opts.MaxRequestBytes), sourceBroker, true},
		{"connections.max.idle.ms", ms(s.opts.IdleTimeout), sourceBroker, true},
		{"default.replication.factor", "1", sourceDefault, true},
		{"min.insync.replicas", "1", sourceDefault, true},
		{"broker.id", strconv.FormatInt(int64(s.opts.NodeID), 10), sourceBroker, true},
	}
}

// defaultKafkaValues returns the default of every key Folio acts on, in
// Kafka's form, by name.
func defaultKafkaValues() map[string]string {
	out := map[string]string{}
	for _, kv := range kafkaValues(topic.Config{}) {
		out[kv[0]] = kv[1]
	}
	return out
}

// resetKafkaConfig sets key back to its default (IncrementalAlterConfigs
// DELETE). An accepted key is not stored, so there is nothing to reset;
// an unknown one is an error naming it.
func resetKafkaConfig(cfg *topic.Config, key string, defaults map[string]string) error {
	if _, ok := acceptedKeys[key]; ok {
		return nil
	}
	v, ok := defaults[key]
	if !ok {
		return fmt.Errorf("%w: unknown topic config %q", topic.ErrInvalidConfig, key)
	}
	return setKafkaConfig(cfg, key, v)
}

// alterResource alters one resource of an AlterConfigs or
// IncrementalAlterConfigs request and returns its error code and message:
// topics through the Backend; the broker's configs are read-only
// (INVALID_REQUEST, as for any other resource type); a resource named
// twice in one request is INVALID_REQUEST (Kafka's rule).
func alterResource(rc *reqCtx, typ kmsg.ConfigResourceType, name string, times int, validateOnly bool, change func(*topic.Config) error) (int16, *string) {
	fail := func(code int16, err error) (int16, *string) {
		msg := err.Error()
		return code, &msg
	}
	switch {
	case times > 1:
		return fail(kerr.InvalidRequest.Code, fmt.Errorf("resource %s %q named %d times", typ, name, times))
	case typ == kmsg.ConfigResourceTypeBroker:
		return fail(kerr.InvalidRequest.Code, fmt.Errorf("the broker's configs are read-only (server options)"))
	case typ != kmsg.ConfigResourceTypeTopic:
		return fail(kerr.InvalidRequest.Code, fmt.Errorf("resource type %s cannot be altered", typ))
	}
	if _, err := rc.s.b.AlterTopicInfo(name, validateOnly, change); err != nil {
		return fail(errs.Code(err), err)
	}
	return 0, nil
}

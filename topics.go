package folio

import (
	"errors"
	"fmt"
	"maps"
	"sort"
	"time"

	"github.com/foliolog/folio/log"
	"github.com/foliolog/folio/partition"
	"github.com/foliolog/folio/readpath"
	"github.com/foliolog/folio/replica"
	"github.com/foliolog/folio/topic"
)

// TopicConfig is a topic's configuration: partitions, retention, segment
// size, index interval, flush policy, read path, cleanup policy, timestamp
// type, max message bytes and compression. Its zero fields take the defaults stated
// in the topic package (Kafka's where Kafka has one; FlushSync for
// durability). Config.Set parses Kafka-style settings ("retention.ms",
// "flush", ...).
type TopicConfig = topic.Config

// FlushPolicy is what an acknowledgement of a produced record waits for
// (TopicConfig.Flush): FlushSync (the default), FlushNone, FlushInterval(d)
// or FlushEveryN(n). Its text form, for flags and configuration files, is
// "sync", "none", "interval:<duration>" or "every:<n>" (ParseFlushPolicy).
// It is the log package's type.
type FlushPolicy = log.FlushPolicy

// Flush policies for TopicConfig.Flush.
var (
	// FlushSync acknowledges a record after an fsync covers it (group
	// commit): it survives power loss. The default.
	FlushSync = log.FlushSync
	// FlushNone acknowledges once the record is in the page cache: it
	// survives a crash of the process, not of the machine.
	FlushNone = log.FlushNone
)

// FlushInterval fsyncs at most d after the first unsynced append: a power
// cut loses at most about d of acknowledged records.
func FlushInterval(d time.Duration) FlushPolicy { return log.FlushInterval(d) }

// FlushEveryN fsyncs once n records are unsynced.
func FlushEveryN(n int64) FlushPolicy { return log.FlushEveryN(n) }

// ParseFlushPolicy parses a FlushPolicy's text form: sync | none |
// interval:<duration> | every:<n>.
func ParseFlushPolicy(s string) (FlushPolicy, error) { return log.ParseFlushPolicy(s) }

// ReadPath is how a topic's reads reach its segment files
// (TopicConfig.ReadPath): ReadMmap (the default) or ReadSendfile. Its text
// form is "mmap" or "sendfile". It is the readpath package's type.
type ReadPath = readpath.Kind

// Read paths for TopicConfig.ReadPath.
const (
	// ReadMmap reads through read-only mappings of the segments, and writes
	// to sockets from the mapping. The default.
	ReadMmap = readpath.Mmap
	// ReadSendfile reads with pread in process, and sends to TCP sockets
	// with sendfile(2).
	ReadSendfile = readpath.Sendfile
)

// The other enumerations of a TopicConfig, named here so that configuring a
// topic needs no import of the topic package. Each is the topic package's
// type, with its text form for flags and configuration files.
type (
	// CleanupPolicy is how a topic sheds old records (TopicConfig.Cleanup).
	CleanupPolicy = topic.CleanupPolicy
	// TimestampType is whose clock stamps a topic's records
	// (TopicConfig.TimestampType).
	TimestampType = topic.TimestampType
	// Compression is the codec a topic stores batches with
	// (TopicConfig.Compression).
	Compression = topic.Compression
)

const (
	// CleanupDelete deletes whole segments past retention. The default.
	CleanupDelete = topic.CleanupDelete
	// CleanupCompact keeps the latest record of each key (a table's
	// changelog); retention does not delete.
	CleanupCompact = topic.CleanupCompact
	// CleanupCompactDelete compacts, and deletes segments past retention.
	CleanupCompactDelete = topic.CleanupCompactDelete

	// CreateTime keeps the producer's timestamps. The default.
	CreateTime = topic.CreateTime
	// LogAppendTime stamps each batch with the log's clock at append.
	LogAppendTime = topic.LogAppendTime

	// CompressionProducer keeps each batch as the producer compressed it.
	// The default.
	CompressionProducer = topic.CompressionProducer
	CompressionNone     = topic.CompressionNone
	CompressionGzip     = topic.CompressionGzip
	CompressionSnappy   = topic.CompressionSnappy
	CompressionLZ4      = topic.CompressionLZ4
	CompressionZstd     = topic.CompressionZstd

	// Unlimited, in TopicConfig.RetentionBytes or RetentionAge, keeps data
	// regardless of size or age (Kafka's -1).
	Unlimited = topic.Unlimited
)

// TopicInfo describes a topic and the offsets of its partitions.
type TopicInfo struct {
	Name string
	// ID identifies this incarnation of the topic: it changes when the
	// topic is deleted and created again.
	ID topic.ID
	// Internal marks Folio's own topics (names starting with "__").
	Internal bool
	// Created is when the topic was created.
	Created time.Time
	// Config is the configuration with every default spelled out.
	Config     TopicConfig
	Partitions []PartitionInfo
}

// PartitionInfo gives one partition's offsets at the time of the call.
type PartitionInfo struct {
	Partition int32
	// LogStartOffset is the first offset a consumer can read.
	LogStartOffset int64
	// HighWatermark is the offset below which records are visible to
	// consumers: the durable end under FlushSync, the log end otherwise.
	HighWatermark int64
	// LogEndOffset is the offset the next record will get.
	LogEndOffset int64
}

// CreateTopic creates a topic with cfg (zero fields take defaults) and opens
// its partitions. The name must follow Kafka's rules (ErrInvalidName) and
// must not start with "__" (ErrReservedName); an existing name is
// ErrTopicExists. The topic is durable when CreateTopic returns: a crash
// during it leaves either no topic or the whole topic, and a partition
// that fails to open (the limit on open files, a full disk) undoes the
// creation: no topic, no directories, and the error says which partition
// failed and why (for the open-files limit, which limit to raise).
func (b *Broker) CreateTopic(name string, cfg TopicConfig) (TopicInfo, error) {
	if err := topic.ValidateName(name); err != nil {
		return TopicInfo{}, err
	}
	return b.createTopic(name, cfg, false)
}

func (b *Broker) createTopic(name string, cfg TopicConfig, internal bool) (TopicInfo, error) {
	if b.cluster != nil && !internal {
		return b.cluster.createTopic(name, cfg)
	}
	return b.createLocalTopic(name, cfg, func() (topic.Info, error) {
		if internal {
			return b.catalog.CreateInternal(name, cfg)
		}
		return b.catalog.Create(name, cfg)
	})
}

// createReplicaTopic creates this broker's replica of a topic the
// cluster's metadata holds, under its id.
func (b *Broker) createReplicaTopic(rec replica.TopicRecord) (TopicInfo, error) {
	return b.createLocalTopic(rec.Name, rec.Config, func() (topic.Info, error) {
		return b.catalog.CreateWithID(rec.Name, rec.ID, rec.Config)
	})
}

// createLocalTopic creates a topic in the data directory through create
// (the catalog's) and opens its partitions.
func (b *Broker) createLocalTopic(name string, cfg TopicConfig, create func() (topic.Info, error)) (TopicInfo, error) {
	// Refuse what the partitions would refuse before the catalog commits
	// to it.
	if err := partition.ValidateConfig(cfg); err != nil {
		return TopicInfo{}, fmt.Errorf("folio: topic %q: %w: %w", name, ErrInvalidConfig, err)
	}
	b.topicsMu.Lock()
	defer b.topicsMu.Unlock()
	if err := b.writable(); err != nil {
		return TopicInfo{}, err
	}
	in, err := create()
	if errors.Is(err, ErrTopicExists) || errors.Is(err, topic.ErrNameCollision) {
		return TopicInfo{}, err // it names the topic; said once
	}
	if err != nil {
		return TopicInfo{}, fmt.Errorf("folio: creating topic %q: %w", name, err)
	}
	ts := &topicState{info: in, parts: make([]*brokerPart, in.Config.Partitions)}
	for p := range in.Config.Partitions {
		part, err := b.openPartition(in, p, log.State{})
		if err != nil {
			return TopicInfo{}, b.undoCreate(ts, p, err)
		}
		ts.parts[p] = part
	}
	b.publishLocked(ts, in.Config.Partitions)
	return b.describe(ts), nil
}

// undoCreate rolls back a topic whose partition failed (err) to open
// during its creation: the partitions before it are closed, and the
// catalog forgets the topic and removes its directories as DeleteTopic
// would, so that the data directory is as before and the creation can be
// retried (after raising the limit err names, say). Should the catalog
// fail to forget it, the topic stays in the catalog unserved, and the next
// Open opens it.
func (b *Broker) undoCreate(ts *topicState, failed int32, err error) error {
	name := ts.info.Name
	err = b.limitHint(err)
	var errs []error
	for _, p := range ts.parts[:failed] {
		if cerr := p.CloseDeleted(); cerr != nil && !errors.Is(cerr, log.ErrClosed) {
			errs = append(errs, cerr)
		}
	}
	if derr := b.catalog.Delete(name); derr != nil {
		return fmt.Errorf("folio: creating topic %q: opening partition %d failed: %w; undoing the creation failed too (the next Open opens the topic): %w",
			name, failed, err, errors.Join(append(errs, derr)...))
	}
	b.removeSnapshots(ts.info.ID)
	return fmt.Errorf("folio: creating topic %q: opening partition %d of %d failed, so the topic was not created: %w",
		name, failed, ts.info.Config.Partitions, err)
}

// publishLocked installs ts with its first n partitions in the topic map.
func (b *Broker) publishLocked(ts *topicState, n int32) {
	ts.parts = ts.parts[:n]
	m := maps.Clone(*b.topics.Load())
	m[ts.info.Name] = ts
	b.topics.Store(&m)
	b.topicsGen.Add(1)
}

// DeleteTopic deletes a topic and its records. Producers and consumers using
// it get ErrUnknownTopic from then on; records a consumer already holds
// stay valid. Internal topics cannot be deleted (ErrReservedName). Every
// group's committed offsets in the topic are deleted too, durably, as in
// Kafka: a topic created again under the name starts without them.
func (b *Broker) DeleteTopic(name string) error {
	if topic.IsInternal(name) {
		return fmt.Errorf("%w: %q is internal and cannot be deleted", ErrReservedName, name)
	}
	if b.cluster != nil && b.cluster.replicated(name) {
		return b.cluster.deleteTopic(name)
	}
	return b.deleteLocalTopic(name)
}

// deleteLocalTopic is DeleteTopic of the topic in this data directory; a
// replicated topic's replica is deleted by the cluster's manager when the
// metadata no longer holds the topic.
func (b *Broker) deleteLocalTopic(name string) error {
	b.topicsMu.Lock()
	defer b.topicsMu.Unlock()
	if err := b.writable(); err != nil {
		return err
	}
	ts, ok := (*b.topics.Load())[name]
	if !ok {
		return fmt.Errorf("%w: %q", ErrUnknownTopic, name)
	}
	// Unpublish first so that no new produce or read finds the topic, then
	// close the logs (appends in flight finish or fail with log.ErrClosed),
	// then let the catalog remove the directories.
	m := maps.Clone(*b.topics.Load())
	delete(m, name)
	b.topics.Store(&m)
	b.topicsGen.Add(1)
	var errs []error
	for _, p := range ts.parts {
		if err := p.CloseDeleted(); err != nil && !errors.Is(err, log.ErrClosed) {
			errs = append(errs, err)
		}
	}
	// The groups' offsets go too, as in Kafka: durably, before the catalog
	// forgets the topic, so that a topic created again under the name
	// never inherits them. The topic is unpublished, so no commit for it
	// is taken any more. Should a crash or a failed write leave some, the
	// coordinator's load drops the offsets of topics that do not exist.
	if c := b.groups.loaded.Load(); c != nil {
		if err := c.DeleteTopicOffsets(name); err != nil {
			errs = append(errs, fmt.Errorf("deleting the groups' offsets: %w", err))
		}
	}
	if err := b.catalog.Delete(name); err != nil {
		errs = append(errs, err)
	}
	b.removeSnapshots(ts.info.ID)
	if len(errs) > 0 {
		return fmt.Errorf("folio: deleting topic %q: %w", name, errors.Join(errs...))
	}
	return nil
}

// AddPartitions grows a topic to total partitions. Partitions are never
// removed. Keyed records produced afterwards may map to other partitions
// than before, as in Kafka.
func (b *Broker) AddPartitions(name string, total int32) (TopicInfo, error) {
	if b.cluster != nil && b.cluster.replicated(name) {
		return b.cluster.addPartitions(name, total)
	}
	return b.addLocalPartitions(name, total)
}

// addLocalPartitions is AddPartitions of the topic in this data
// directory; a replicated topic's replica grows when the cluster's
// manager sees the metadata's new count.
func (b *Broker) addLocalPartitions(name string, total int32) (TopicInfo, error) {
	b.topicsMu.Lock()
	defer b.topicsMu.Unlock()
	if err := b.writable(); err != nil {
		return TopicInfo{}, err
	}
	old, ok := (*b.topics.Load())[name]
	if !ok {
		return TopicInfo{}, fmt.Errorf("%w: %q", ErrUnknownTopic, name)
	}
	in, err := b.catalog.AddPartitions(name, total)
	if err != nil {
		return TopicInfo{}, fmt.Errorf("folio: adding partitions to %q: %w", name, err)
	}
	ts := &topicState{info: in, parts: make([]*brokerPart, total)}
	copy(ts.parts, old.parts)
	for p := int32(len(old.parts)); p < total; p++ {
		part, err := b.openPartition(in, p, log.State{})
		if err != nil {
			return TopicInfo{}, b.undoAddPartitions(ts, int32(len(old.parts)), p, err)
		}
		ts.parts[p] = part
	}
	b.publishLocked(ts, total)
	return b.describe(ts), nil
}

// undoAddPartitions rolls back an AddPartitions whose partition failed
// (err) to open, as undoCreate does a creation: the new partitions opened
// before it, [from, failed), are closed, and the catalog takes the topic
// back to from partitions and removes the new directories, so that the
// topic is as before and the call can be retried. Should the catalog fail
// to, the topic is served with its old partitions until the next Open,
// which opens all that the catalog names.
func (b *Broker) undoAddPartitions(ts *topicState, from, failed int32, err error) error {
	name, total := ts.info.Name, ts.info.Config.Partitions
	err = b.limitHint(err)
	var errs []error
	for _, p := range ts.parts[from:failed] {
		if cerr := p.CloseDeleted(); cerr != nil && !errors.Is(cerr, log.ErrClosed) {
			errs = append(errs, cerr)
		}
	}
	if uerr := b.catalog.UndoAddPartitions(name, from, total); uerr != nil {
		return fmt.Errorf("folio: adding partitions to %q: opening partition %d failed: %w; undoing it failed too (the topic is served with its %d partitions until the next Open opens all %d): %w",
			name, failed, err, from, total, errors.Join(append(errs, uerr)...))
	}
	return fmt.Errorf("folio: adding partitions to %q: opening partition %d of %d failed, so the topic keeps its %d partitions: %w",
		name, failed, total, from, errors.Join(append([]error{err}, errs...)...))
}

// Topics lists every topic, by name, with its partitions' offsets.
func (b *Broker) Topics() ([]TopicInfo, error) {
	if b.closed.Load() {
		return nil, ErrClosed
	}
	m := *b.topics.Load()
	out := make([]TopicInfo, 0, len(m))
	for _, ts := range m {
		out = append(out, b.describe(ts))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// DescribeTopic returns one topic with its partitions' offsets.
func (b *Broker) DescribeTopic(name string) (TopicInfo, error) {
	if b.closed.Load() {
		return TopicInfo{}, ErrClosed
	}
	ts, ok := (*b.topics.Load())[name]
	if !ok {
		return TopicInfo{}, fmt.Errorf("%w: %q", ErrUnknownTopic, name)
	}
	return b.describe(ts), nil
}

func (b *Broker) describe(ts *topicState) TopicInfo {
	ti := TopicInfo{
		Name: ts.info.Name, ID: ts.info.ID, Internal: ts.info.Internal,
		Created: ts.info.Created, Config: ts.info.Config,
		Partitions: make([]PartitionInfo, len(ts.parts)),
	}
	for i, p := range ts.parts {
		ti.Partitions[i] = PartitionInfo{
			Partition:      int32(i),
			LogStartOffset: p.LogStartOffset(),
			HighWatermark:  p.HighWatermark(),
			LogEndOffset:   p.LogEndOffset(),
		}
	}
	return ti
}

// DeleteRecordsBefore makes offset the partition's new log start offset
// (Kafka's DeleteRecords): records below it are no longer served, and the
// segments holding only such records are deleted. The new start is written
// to the checkpoint file before DeleteRecordsBefore returns, so the records
// stay deleted across a crash. offset may not pass the high watermark
// (*OffsetOutOfRangeError).
func (b *Broker) DeleteRecordsBefore(topicName string, partition int32, offset int64) error {
	if err := b.writable(); err != nil {
		return err
	}
	p, err := b.lookup(topicName, partition)
	if err != nil {
		return err
	}
	if err := p.DeleteRecordsBefore(offset); err != nil {
		var oor *log.OffsetOutOfRangeError
		if errors.As(err, &oor) {
			return &OffsetOutOfRangeError{Topic: p.Topic(), Partition: p.Index(), Offset: offset, Start: oor.Start, End: oor.End}
		}
		return brokerErr(fmt.Errorf("folio: %w", err))
	}
	if err := b.writeCheckpoint(b.allPartitions()); err != nil {
		return fmt.Errorf("folio: %s: records before %d are deleted but the new start is not checkpointed: %w", p, offset, err)
	}
	return nil
}

// EnforceRetention applies every partition's retention now (the Broker
// also does so every Options.RetentionCheckInterval) and returns how many
// segments were deleted.
func (b *Broker) EnforceRetention() (int, error) {
	if err := b.writable(); err != nil {
		return 0, err
	}
	now := b.opts.Now()
	total := 0
	var errs []error
	for _, p := range b.allPartitions() {
		n, err := p.EnforceRetention(now)
		total += n
		if err != nil && !errors.Is(err, log.ErrClosed) {
			errs = append(errs, fmt.Errorf("folio: %w", err))
		}
	}
	return total, errors.Join(errs...)
}

// AlterTopicConfig changes a topic's configuration while its partitions
// are open: change edits a copy of the current one (every default spelled
// out; Partitions is not its to change, AddPartitions does that). The new
// configuration is written to the catalog durably before the partitions
// apply it, so that it survives a crash once AlterTopicConfig returns.
//
// Every setting applies to the open partitions at once, as Kafka applies
// a topic config change (partition.Partition.Reconfigure has the details):
// max.message.bytes, compression and the timestamp type from the next
// append (the Producer re-reads the limit and the codec for every batch
// it begins); segment.bytes and segment.ms from the
// next roll check; retention from the next retention pass; the cleanup
// policy starts or stops the topic's cleaning at once, the compaction
// settings apply from the next pass; the flush policy to appends from now
// on; the read path to segments opened from now on (new readers of the
// next active segment, and of sealed segments as they are next opened).
// Internal topics are refused (ErrReservedName). With validateOnly the
// change is checked and nothing is written.
func (b *Broker) AlterTopicConfig(name string, validateOnly bool, change func(*TopicConfig) error) (TopicInfo, error) {
	if topic.IsInternal(name) {
		return TopicInfo{}, fmt.Errorf("%w: %q is internal; its configuration is Folio's", ErrReservedName, name)
	}
	if b.cluster != nil && !validateOnly && b.cluster.replicated(name) {
		return b.cluster.alterTopicConfig(name, change)
	}
	return b.alterLocalTopicConfig(name, validateOnly, change)
}

// alterLocalTopicConfig is AlterTopicConfig of the topic in this data
// directory; a replicated topic's replica takes a new configuration when
// the cluster's manager sees it in the metadata.
func (b *Broker) alterLocalTopicConfig(name string, validateOnly bool, change func(*TopicConfig) error) (TopicInfo, error) {
	b.topicsMu.Lock()
	defer b.topicsMu.Unlock()
	if err := b.writable(); err != nil {
		return TopicInfo{}, err
	}
	old, ok := (*b.topics.Load())[name]
	if !ok {
		return TopicInfo{}, fmt.Errorf("%w: %q", ErrUnknownTopic, name)
	}
	cfg := old.info.Config.WithDefaults()
	parts := cfg.Partitions
	if err := change(&cfg); err != nil {
		return TopicInfo{}, fmt.Errorf("folio: topic %q: %w", name, err)
	}
	if cfg.Partitions != parts {
		return TopicInfo{}, fmt.Errorf("folio: topic %q: %w: the partition count is changed by AddPartitions", name, ErrInvalidConfig)
	}
	for _, p := range old.parts {
		if _, err := p.CheckReconfigure(cfg); err != nil {
			return TopicInfo{}, fmt.Errorf("folio: topic %q: %w: %w", name, ErrInvalidConfig, err)
		}
	}
	if validateOnly {
		ts := &topicState{info: old.info, parts: old.parts}
		ts.info.Config = cfg.WithDefaults()
		return b.describe(ts), nil
	}
	in, err := b.catalog.Alter(name, cfg)
	if err != nil {
		return TopicInfo{}, fmt.Errorf("folio: altering topic %q: %w", name, err)
	}
	for _, p := range old.parts {
		// Checked above under topicsMu, which every change holds: it
		// cannot fail now but for a bug, which is reported.
		if err := p.Reconfigure(in.Config); err != nil {
			return TopicInfo{}, fmt.Errorf("folio: topic %q: the catalog holds the new configuration, but %w", name, err)
		}
	}
	ts := &topicState{info: in, parts: old.parts}
	b.publishLocked(ts, int32(len(old.parts)))
	return b.describe(ts), nil
}

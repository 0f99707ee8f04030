// Package folio is Kafka's log model inside a Go process: topics split into
// partitions, each partition an append-only log of RecordBatch v2 batches in
// segment files, producers that batch and partition records as Kafka's
// clients do, and consumers that read from any offset and block until
// records arrive.
//
// # Model
//
// A Broker owns one data directory (Open). It holds topics (CreateTopic,
// DeleteTopic, AddPartitions, Topics, DescribeTopic), each with a
// TopicConfig: partitions, retention, segment size, index interval, flush
// policy, read path, cleanup policy, timestamp type, max message bytes and
// compression. A partition is a directory "<topic>-<partition>" of
// segments whose bytes are Kafka's, so tools that read Kafka segments read
// Folio's.
//
// A Producer appends Records. Keyed records go where Kafka's default
// partitioner puts them (murmur2 of the key), unkeyed ones stick to a
// partition for a batch's worth, and ManualPartitioning honours
// Record.Partition. Records are batched per partition: a batch waits up to
// ProducerOptions.Linger (5 ms, Kafka's linger.ms) for more records, and
// no longer than the next Flush; Produce waits for the acknowledgement and
// never lingers; ProduceAsync reports it to a callback. Memory held by records not yet
// acknowledged is capped (ProducerOptions.MaxBufferedBytes): past the cap a
// produce call blocks under its ctx rather than growing without bound.
// Producers are idempotent by default: each has a durable producer id and
// numbers its batches per partition, and a partition refuses a gap and
// answers a retry of one of the producer's last five batches with the
// original offsets (AppendBatch gives the same to batches from outside).
//
// A Consumer reads partitions assigned to it (Assign) from an Offset:
// earliest, latest, an exact offset or a timestamp. Poll and Records block,
// without polling, until records arrive. Seek moves, Position and Lag
// report. Control batches are never handed to the application and offset
// gaps left by compaction are skipped. A position below the log start
// offset moves the consumer to the log start (ResetEarliest, the default
// ResetPolicy), or is an *OffsetOutOfRangeError under ResetNone. Consumer
// groups are built on this: a group member assigns what the coordinator
// gave it and commits Position. A new group, without committed offsets,
// starts at the earliest offset by default (GroupOptions.Reset), so it
// reads what was produced before it joined.
//
// Stats gives a snapshot (offsets, segments, open files and mappings, lag of
// every consumer); Options.Metrics receives events for a metrics system, and
// Options.Logger the Broker's own log.
//
// Each partition is served by package partition, which applies Kafka's
// broker rules to appends; the Broker wires it to the data directory.
// AppendBatch takes a batch as a Kafka producer sends it and answers what a
// Produce response carries; Sync, Compact, OffsetForTime and
// DeleteRecordsBefore act on one partition; Broker.Partition hands the
// partition itself to code that serves it other than through a Producer or
// Consumer (a Kafka endpoint, replication, a tool).
//
// # Compaction
//
// A topic whose cleanup policy is compact (or compact,delete, which keeps
// retention too) is compacted as Kafka compacts: the Broker's one log
// cleaner (Options.Cleaner), shared by every such partition, keeps the
// latest record of each key and, DeleteRetention after they were first
// cleaned, drops tombstones (records with a null value). A partition is
// cleaned once the share of its cleanable records not yet cleaned reaches
// MinCleanableDirtyRatio; records younger than MinCompactionLag and the
// active segment are never touched. Records without a key are refused
// (ErrInvalidBatch). Compacted records keep their offsets, so a consumer
// sees gaps, never an error. Broker.Compact(ctx, topic, p) cleans one
// partition now. __consumer_offsets is a compacted topic: a group's
// superseded commits go away.
//
// # Durability: what an acknowledgement means
//
// The topic's flush policy decides, and every acknowledgement keeps it:
//
//   - FlushSync (the default): the record was fsynced before the ack;
//     concurrent appends share fsyncs. It survives power loss. Consumers see
//     only fsynced records.
//   - FlushInterval(d), FlushEveryN(n): fsyncs at most d after, or every n
//     records; a power cut loses at most that window.
//   - FlushNone: the record is in the page cache; it survives a crash of the
//     process but not of the machine. Consumers see records as soon as they
//     are written, so after a power cut a consumer may have seen records the
//     log no longer holds, and offsets it saw may be reused.
//
// A failed write or fsync (a full disk, an I/O error) stops the partition:
// produce returns ErrDiskFull or ErrPartitionFailed, records whose append
// failed after offsets were assigned report ErrUnknownOutcome, reads and
// retention go on, and reopening the Broker recovers. When a produce's ctx
// ends while it waits for the acknowledgement, the record's fate is unknown
// (ErrUnknownOutcome): it may still be written.
//
// # Replication
//
// With Options.Cluster, several Brokers replicate topics between them as
// Kafka brokers do (see ClusterOptions): a topic created through any of
// them gets ReplicationFactor replicas per partition, each partition has
// one leader per leader epoch, which takes produce, and followers that
// copy it over the Kafka endpoint. An acks=all append (the default)
// returns once every in-sync replica holds it, and is refused with
// NOT_ENOUGH_REPLICAS, nothing written, while fewer than
// MinInsyncReplicas are in sync. Close is a controlled shutdown: the
// partitions a Broker leads move to another in-sync replica first. A
// Broker that stops without Close is taken for crashed once it has not
// heartbeat for SessionTimeout, and its partitions move to in-sync
// replicas then; with none left a partition waits for one, unless
// UncleanLeaderElection lets a replica outside the ISR lead, losing
// records: a Consumer that had read them gets ErrTruncated. The
// cluster's metadata is shared in memory, so the Brokers of one cluster
// live in one process until the metadata moves to Raft.
// __consumer_offsets is replicated too: the coordinator of a group is the
// leader of its offsets partition (Broker.CoordinatorID) and moves with
// it, and a commit is acknowledged once committed (acks=all).
//
// # The data directory
//
// Besides the topic catalog (topic.CatalogFile) and the partition
// directories, the Broker keeps:
//
//   - LockFile, flocked by the one writing Broker, holding its pid and host:
//     a second Open, in this process or another, fails with ErrDirLocked
//     naming them. The kernel drops the lock when the holder dies.
//   - FormatFile, the on-disk format version: a directory of an unknown
//     version, or holding other files and no FormatFile, is refused with
//     ErrUnknownFormat.
//   - CheckpointFile, every partition's recovery point, log start offset and
//     cleaner checkpoint (for a compacted partition, the offset below which
//     everything has been cleaned), written every Options.CheckpointInterval
//     (60 s) and at Close, never per append. Files written before Folio
//     compacted (checkpoint version 1) are read, their partitions cleaned
//     again from the start.
//   - CleanShutdownFile, written at a clean Close and removed durably before
//     the first write of the next session. Without it, each partition scans
//     its segments from its recovery point and cuts a torn tail.
//   - producer-state snapshots, written at Close, so a restart replays only
//     what came after.
//
// Each of these is written tmp + fsync + rename + fsync(dir) and carries a
// CRC. OpenReadOnly opens a directory without the lock and writes nothing,
// for tools beside a live Broker in another process; it sees each partition
// up to its last complete valid batch as of the open, and Refresh brings it
// up to date (there is no notification across processes, so a follower
// refreshes at an interval). CheckFormat, ReadCheckpoint and CheckMetadata
// read the metadata files without opening the directory at all.
//
// # Lifetimes
//
// Records handed to a producer must not change until their acknowledgement.
// Records a consumer returns are the caller's to keep; with
// ConsumerOptions.ZeroCopy their Key, Value and header values alias the
// segment mapping or a read buffer and are valid only until the next Poll
// (in a Records loop, until the loop body returns), and so is the slice
// Poll returns them in, which the next Poll reuses. Broker, Producer and
// Consumer own their goroutines and stop them in Close, which is
// idempotent; later calls return ErrClosed. Closing the Broker closes the
// producers (appending what they buffered) and consumers made from it.
//
// # Caveats
//
//   - Tombstone retention runs on the clock of a cleaned segment file's
//     modification time (as Kafka did before KIP-534): copying a data
//     directory without file times restarts the DeleteRetention of its
//     tombstones. A crash loses the cleaner's progress since the last
//     checkpoint: the cleaner cleans that part again, and its tombstones
//     stay longer, never shorter.
//   - A record without a key is refused (ErrNoKey) on a compacted topic, by
//     the producer before it joins a batch; a batch from outside
//     (AppendBatch) holding one fails whole, as Kafka's broker does.
//   - A record that does not fit a batch of the topic's MaxMessageBytes on
//     its own is refused (ErrMessageTooLarge) by its uncompressed size, as
//     Kafka's producer does.
//   - Adding partitions changes where keyed records go, as in Kafka.
//   - A read-only Broker beside a FlushSync writer can see records that are
//     written but not yet acknowledged (it reads complete batches, not the
//     writer's high watermark), which a power cut may take back.
package folio

// Package partition is one partition of a topic as a Kafka broker serves
// it: the layer between the log (package log), which stores batches and
// knows nothing of producers or topics, and whatever serves the partition
// to clients: the root package's Producer and Consumer, a Kafka endpoint,
// replication. It imports no package above it; those packages wire it.
//
// # Model
//
// Open opens a partition's log with the options its topic's configuration
// (topic.Config) maps to: segment size and age, retention, compaction,
// flush policy, read path, timestamp type, max.message.bytes. The settings
// a data directory's owner shares between partitions (the resource caps,
// the log cleaner, the hook that removes the clean-shutdown marker, the
// clock) come in Options.
// Reconfigure applies a changed topic configuration to the open partition
// and its log at once (each setting from its next use: the next append,
// roll check, retention or cleaning pass; see Reconfigure); an append reads
// the settings in force with one atomic load.
//
// AppendBatch appends a RecordBatch v2 from outside as a Kafka broker does:
// it validates the batch (CRC, structure; control batches are Folio's
// own), recompresses it when the topic names another codec, refuses it
// above max.message.bytes, stamps the log append time when the topic asks,
// and applies idempotence for a batch with a producer id: the last five
// batches of each producer are remembered, so a retry gets its original
// offsets (Duplicate) and a gap or an old epoch is refused. The result is
// what a Produce response carries: base and last offset, log append time,
// log start offset. AppendProduced is the in-process producer's path: its
// batches are built for the partition, so it skips the checks and
// appends several at once.
//
// Producer state (each idempotent producer's epoch and last batches) is
// loaded at the first idempotent append, not at Open: from the snapshot in
// Options.Snapshots if the log still covers it, then by replaying the
// batch headers after it, as Kafka's ProducerStateManager does.
// SaveProducerState writes the snapshot at a clean shutdown;
// ExpireProducers forgets producers idle past producer.id.expiration.ms.
//
// Read returns whole batches bounded by a chosen end: the high watermark
// for consumers, the log end for a follower copying the partition. Wait
// and WaitChan block, without polling, until the high watermark passes an
// offset. DeleteRecordsBefore, EnforceRetention, Compact and Sync do what
// their log counterparts do, with errors that name the partition.
//
// # Acknowledgements and the high watermark
//
// An append is acknowledged when the local log holds it under the topic's
// flush policy (FlushSync: fsynced; the others: written), and then when
// the Replication hook releases it. The hook is called once per append
// call: BeforeAppend may refuse the append before anything is written (a
// definite failure), AfterAppend may hold the acknowledgement, as Kafka's
// leader holds an acks=all produce until the in-sync replicas have the
// batch, and no partition lock is held while it waits. A hook whose
// ExternalHighWatermark is true owns the high watermark
// (SetHighWatermark); the log never lets it pass the durable end under
// FlushSync nor the log end. Without a hook (SingleNode) the log keeps its
// own high watermark: the durable end under FlushSync, the log end
// otherwise.
//
// # Errors and contexts
//
// Append errors are this package's sentinels (ErrInvalidBatch,
// ErrMessageTooLarge, ErrDiskFull, ErrUnknownOutcome, ErrDeleted) or the
// topic package's idempotence errors, each naming the partition. A failed
// write or fsync after offsets were assigned is ErrUnknownOutcome and
// stops the partition (fail-stop, ErrFailed) until it is reopened. The ctx
// of an append bounds the waits on other parties: ended before the append
// or while it waits for the producer's previous batch, nothing is written
// and the error is ctx's; ended while the hook holds the acknowledgement,
// the error wraps ErrUnknownOutcome. The log's write and fsync are never
// interrupted. Read returns the log's errors unwrapped, because it is on
// every consumer's path.
//
// # Caveats
//
//   - Waits are bounded by the high watermark only: the log offers no
//     notification of its end yet, which a follower waiting at the
//     leader's end will need.
//   - SaveProducerState must not race appends: a batch the log holds and
//     the state does not yet would be missed by the next replay.
//   - The partition does not own the data directory: the checkpoint of its
//     recovery point and log start offset (Checkpoint), its snapshot's
//     file, and the removal of its directory are its owner's.
package partition

// Package topic holds what Folio knows about topics above one partition's
// log: their names, their configuration, the durable catalog of a data
// directory, the partitioners that spread records over partitions, and the
// idempotent-producer state each partition keeps.
//
// # Names
//
// Topic names follow Kafka's rules (ValidateName): 1 to 249 characters of
// [a-zA-Z0-9._-], not "." or "..". Names starting with "__" belong to
// Folio's own topics (__consumer_offsets) and are created with
// CreateInternal. No accepted name can contain a path separator, so a
// partition's directory, DirName(topic, p) = "<topic>-<p>", is always a
// direct child of the data directory. Two names that differ only in case,
// or in '.' versus '_', are refused side by side (ErrNameCollision): the
// first pair would share a directory on a case-insensitive file system,
// the second a metric name in Kafka, which refuses them too.
//
// # Configuration
//
// Config holds one topic's settings; each zero field means its documented
// default (Kafka's where Kafka has one), so Config{} is valid. Settings and
// Set convert to and from Kafka-style "key=value" strings for the command
// line: "retention.ms=7d", "flush=interval:100ms", "segment.bytes=512MiB".
// The compaction settings (min.cleanable.dirty.ratio, min.compaction.lag.ms,
// delete.retention.ms) matter only to topics whose cleanup policy compacts;
// delete.retention.ms=0 means what it means in Kafka, no tombstone
// retention (NoDeleteRetention), not the default; so does
// index.interval.bytes=0, an index entry at every batch (IndexEveryBatch).
// A catalog written before a setting existed loads with that setting's
// default.
//
// The flush policy (Config.Flush) and the read path (Config.ReadPath) are
// the types of the packages that carry them out, log.FlushPolicy and
// readpath.Kind (folio.FlushPolicy and folio.ReadPath in the root package),
// so a program names each with one type. The catalog stores them by their
// text forms. Validation here checks syntax and ranges only.
//
// # The catalog
//
// A Catalog is the durable list of a data directory's topics: one file,
// CatalogFile, with a magic number, a format version and a CRC-32C around
// a JSON body, always replaced whole (written to a temporary file, fsynced,
// renamed over the old one, and the directory fsynced). The partition
// directories obey two ordering rules, so that a crash at any point leaves
// the old catalog or the new one and never a catalog naming a missing
// directory:
//
//   - create and AddPartitions make the new directories and fsync the data
//     directory before the catalog that names them is written;
//   - Delete writes the catalog without the topic first, then renames each
//     partition directory to "<topic>-<p>.<id>-delete" (freeing the name
//     for an immediate re-create), fsyncs, and removes them.
//
// OpenCatalog finishes what a crash interrupted: it removes a temporary
// catalog file, every "-delete" directory and every partition directory
// the catalog does not name, and reports them (Recovery). Entries whose
// names are not partition-directory names are left alone. A catalog file
// that fails its checksum is an error wrapping ErrCorrupt, never an empty
// catalog; so is a missing catalog file beside partition directories (a
// data directory gets its catalog file before its first partition).
//
// A read-only open (Options.ReadOnly), for tools that inspect a data
// directory beside the process that owns it, only stats, lists and reads.
// It creates no directory or catalog (a missing one is ErrNoCatalog),
// repairs nothing (Recovery then lists what a writable open would repair,
// which beside a live writer can include a change in progress), and
// refuses every change with ErrReadOnly. The writer replaces the catalog
// by an atomic rename, so one read sees one whole catalog; a read that
// fails the checksum anyway is retried a few times before it is reported
// as ErrCorrupt. A read-only Catalog is a snapshot taken at open: it does
// not see the writer's later changes, so it is reopened to refresh.
//
// A failure before the catalog rename leaves the old catalog in force and
// the Catalog usable. A failed rename or directory fsync leaves it unknown
// which catalog a restart will find, so the Catalog then refuses every call
// with ErrFailed until it is reopened, which settles the question.
//
// The catalog also hands out producer ids (AllocateProducerID) that are
// unique across restarts: it writes the end of a block of ids before it
// hands out the block's first, so a crash skips the rest of a block but
// never repeats an id.
//
// # Partitioners
//
// KeyPartition puts a keyed record where Kafka's Java client (and
// franz-go's default partitioner) puts it: murmur2 of the key, seed
// 0x9747b28c, sign bit cleared, modulo the partition count. An empty key is
// a key; a nil key means "no key". Partitioner adds Kafka's sticky
// placement of unkeyed records: they all go to one partition until a
// batch's worth (StickyBytes) went there or OnNewBatch reports the batch
// full, then to another, so unkeyed records fill whole batches. A record
// sent to an explicit partition bypasses both (CheckPartition).
//
// # Producer state
//
// ProducerState gives a partition Kafka's idempotence. It keeps, per
// producer id, the current epoch and the last RetainedBatches (5) batches
// with their sequence ranges and offsets. Check, before an append, returns
// the original offsets of a retried batch, or refuses the batch with an
// error mirroring Kafka's:
//
//	ErrOutOfOrderSequence  OUT_OF_ORDER_SEQUENCE_NUMBER: a gap, an overlap, or
//	                       a new epoch that does not start at sequence 0
//	ErrDuplicateSequence   DUPLICATE_SEQUENCE_NUMBER: see below
//	ErrProducerFenced      INVALID_PRODUCER_EPOCH: an epoch below the current one
//	ErrUnknownProducerID   UNKNOWN_PRODUCER_ID, with RejectUnknownProducers
//	ErrInvalidBatch        INVALID_RECORD: negative sequence or epoch
//
// Sequences wrap from math.MaxInt32 to 0 as in Kafka. Update records a
// batch after it was appended.
//
// Two choices differ from a current Kafka broker. A retry of a batch older
// than the five retained ones, whose sequences this epoch did write, is
// refused with ErrDuplicateSequence rather than OUT_OF_ORDER_SEQUENCE_NUMBER:
// its original offsets are gone, but a client can tell "already written"
// from "records lost" (the Java client treats DUPLICATE_SEQUENCE_NUMBER as
// success) instead of retrying forever. And a producer without state is
// accepted at any sequence by default, as Kafka does since 2.5, because
// retention may have removed all its batches; RejectUnknownProducers
// restores the older, stricter rule.
//
// Transactions are not tracked: transactional batches are sequenced like
// idempotent ones, and control batches (markers) only move the epoch.
//
// After a restart the state is rebuilt from the log: Rebuild replays batch
// headers (any iterator of record.Batch; headers suffice), the whole
// partition or a tail, and Rebuild's comment says what a tail forgets.
// MarshalSnapshot and LoadSnapshot play the part of Kafka's producer
// snapshot files, so that the owner can store one at each segment roll and
// Replay only the batches after it. RemoveExpired drops producers idle
// longer than Expiration (Kafka's producer.id.expiration.ms, one day).
//
// # Caveats
//
// One writable Catalog per data directory and process: the Broker's lock
// file keeps others out. Read-only Catalogs take no lock and may be opened
// beside it, in any process. The caller closes a topic's partition logs before Delete.
// ProducerState's Check and Update must run under the partition's append
// lock as a pair; each call alone is safe for concurrent use.
package topic

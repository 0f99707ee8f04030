// Package log is one partition's log: an ordered set of segments (package
// segment) in one directory, in Kafka's format and with Kafka's rules for
// rolling, retention, recovery and truncation, plus an explicit durability
// promise for every acknowledgement.
//
// # Model
//
// A Log holds its segments in a btree (github.com/google/btree) keyed by
// base offset. The last segment is active: Append assigns offsets, stamps
// the partition leader epoch (and, for log-append-time topics, the
// timestamp) and writes batches to it. It rolls to a new segment when a
// batch would take it past SegmentBytes, when it is older than SegmentAge,
// when an index is full, or when an offset would not fit the segment's
// 4-byte relative offsets. The segment rolled past is sealed (final time
// index entry, fsync, indexes trimmed) by a group commit or by the log's
// background goroutine, never by the appender that rolled.
//
// Readers work on an immutable snapshot: a copy-on-write clone of the btree
// and the log start offset, published atomically by each roll, deletion and
// truncation. Read, OffsetForTime, Wait and WaitChan take no lock the
// appender holds.
//
// Four offsets describe a log:
//   - log start offset: the first offset served; retention and
//     DeleteRecordsBefore move it up;
//   - log end offset: the offset the next record gets;
//   - durable end offset (the recovery point): every record below it is
//     fsynced;
//   - high watermark: readers see only records below it. On one node it is
//     the durable end under FlushSync and the log end under the other
//     policies. With Options.ExternalHighWatermark replication sets it
//     (SetHighWatermark), capped by the same limit.
//
// # Durability: what an acknowledgement means
//
// Append returns only after its bytes are written to the file (the page
// cache), under every policy, so an acknowledged record always survives a
// crash of the process. On power loss or a kernel crash:
//   - FlushSync (the default): Append returns after an fsync covers the
//     records. Nothing acknowledged is lost. Concurrent appenders share
//     fsyncs (group commit: one flush in flight, and the next one covers
//     everyone who wrote meanwhile); no fsync runs under the append lock.
//   - FlushEveryN(n): the append that leaves n or more records unsynced
//     waits for an fsync. With one appender fewer than n acknowledged
//     records can be lost; concurrent appenders add the records of the
//     appends in flight.
//   - FlushInterval(d): an fsync runs at most d after the first unsynced
//     append; records acknowledged in the last d (plus one fsync) can be
//     lost.
//   - FlushNone: no fsync on the append path, as in Kafka; a segment is
//     fsynced when sealed and at Close. Anything since the last seal can be
//     lost.
//
// What a consumer may see that a power cut takes back: under FlushSync
// nothing, since the high watermark is the durable end. Under the other
// policies the high watermark is the log end, so a consumer can read, and
// act on, records that a power cut then removes; after the restart the log
// ends earlier and those offsets are given to new records. A consumer that
// must not see such records uses FlushSync, or (with replication) a high
// watermark that only counts replicated records.
//
// Failures are fail-stop: a failed write or fsync (EIO, ENOSPC, a torn
// write) puts the log in a failed state. Appends and Sync then return an
// error wrapping ErrFailed and the cause; no fsync is retried blindly;
// reads of what was visible go on. Close and Open again: recovery cuts
// whatever the failure left half-written.
//
// # Recovery
//
// Open takes the State the owner checkpointed (Checkpoint: recovery point,
// log start offset, high watermark) and whether the last shutdown was clean.
// After a clean one it costs O(1) per segment: a sealed segment is read
// only where it ends (to check the chain of offsets) and maps nothing
// until first read, and only the last segment is loaded; nothing on disk
// changes until the first write unless damage is found (a hole is filled
// with empty batches and reported, and a log end below the checkpointed
// one stays there). After an unclean one the segments from the one holding
// the recovery point onwards are scanned batch by batch and cut at the
// first bad batch (the valid batches after damage in the last segment are
// kept in a segment of their own); a cut in a segment with segments after
// it keeps them and fills the hole, so offsets continue from the real end.
// A segment emptied below the recovery point (a stat shows it; nothing
// below the recovery point is opened otherwise) has its hole filled as
// after a clean shutdown. A sealed segment that a clean open trusted and
// that cannot load is repaired by the first read that meets it: each
// damaged range is replaced by an empty batch covering its offsets (the
// batches after it kept), reported to reads as a *DamagedRangeError. Files a
// crash left behind are resolved first, by Kafka's rules (.deleted and
// .cleaned removed, a complete .swap takes the place of the segments it
// covers, index files without a .log removed). Options.BeforeFirstWrite
// runs exactly once, before the first change to the directory after Open,
// which is where the owner removes its clean-shutdown marker.
//
// # Retention and truncation
//
// EnforceRetention (and the background schedule, every
// RetentionCheckInterval) deletes the oldest segments by age (largest
// record timestamp), by size and by log start offset, never the active
// one; the log start offset moves in the same snapshot that hides them.
// DeleteRecordsBefore moves the log start offset (Kafka's DeleteRecords).
// TruncateTo removes everything at and after an offset, reactivating a
// sealed segment if needed; no file is truncated while a view of it may be
// read.
//
// # Replication: leader epochs and follower appends
//
// Every batch carries the partition leader epoch it was written in. The
// log keeps Kafka's leader-epoch cache (each epoch with the first offset
// appended in it) in the file EpochCheckpointFile, in Kafka's text format,
// written durably before every fsync that moves the durable end, by
// SetLeaderEpoch and by TruncateTo, so it never lags what a power cut
// leaves. Open recovers it, cut to the log's range, and rebuilds a missing
// or damaged one from the batches (Recovery().EpochCheckpoint names the
// damage). EndOffsetForEpoch answers Kafka's OffsetForLeaderEpoch from it.
//
// A leader calls SetLeaderEpoch when it takes over and then Append, which
// stamps that epoch. A follower calls AppendFollower with the leader's
// batches, which keeps their offsets and epochs: they must start at the log
// end, and their epochs may not fall below the log's latest. TruncateTo
// cuts a diverged tail (the cache with it) and wakes waiters at offsets it
// removed. With Options.ExternalHighWatermark, SetHighWatermark only moves
// forward within a leader epoch, and the high watermark restored from
// State at Open hides what was never committed.
//
// # Compaction
//
// With Options.Compact (Kafka's cleanup.policy=compact; compact,delete
// when retention is on too) a Cleaner keeps the latest record of each key.
// It sees the log as Kafka's cleaner does: the clean part below the cleaner
// checkpoint (State.FirstDirtyOffset), then the cleanable dirty part, then
// the uncleanable part, which starts at the first segment that is active,
// rolled past but not yet sealed, not wholly below the high watermark, or
// (MinCompactionLag) holding a record newer than the lag. A worker of the
// Cleaner cleans a log once its dirty ratio, the cleanable bytes over those
// plus the clean bytes, reaches MinCleanableDirtyRatio; Compact cleans on
// demand. Append refuses records without a key (ErrNoKey).
//
// A pass maps each key of the dirty part to the offset of its latest
// record, in a table of fixed size (24-byte slots: 16 bytes of the key's
// SHA-256 and the offset) within the Cleaner's memory budget; when it
// fills, the pass cleans only up to where it filled and the next pass goes
// on from there. The pass then recopies the log from its first segment up
// to that point, in groups of adjacent segments whose sizes add up to at
// most SegmentBytes and whose offsets fit 32 bits from the group's base, so
// small neighbours merge. A record goes if a later record of its key is in
// the map, if it is a tombstone whose retention ran out, or if it has no
// key; the others keep their offsets. A batch keeps its base offset, last
// offset delta, producer id, epoch and sequence range, leader epoch and
// codec; one that loses every record is kept empty if it is its producer's
// last data batch (as Kafka does) or the last batch of its group, so that a
// cleaned segment ends where the next begins: recovery tells a torn segment
// from a cleaned one by that. Readers see gaps in the offsets, never an
// error: a Read at an offset compacted away returns the next batch at or
// after it, which may be empty.
//
// Tombstones (null values) stay DeleteRetention after their segment was
// first cleaned, Kafka's delete-horizon rule in its form before KIP-534
// (which stamps the horizon in the batch; the record package cannot write
// that yet): each pass sets the modification time of every segment it
// writes to when it was last cleaned, the latest of its clean sources'
// times, or the pass's time if dirty data went in, and drops the tombstones
// of a clean segment whose time is DeleteRetention or more ago. A clean
// segment merged with newer data so restarts its tombstones' retention.
//
// The cleaned segments replace the old ones by Kafka's crash-safe sequence,
// the directory fsynced after each step: written as .cleaned files and
// fsynced; renamed to .swap (groups in descending offset order); the old
// segments renamed to .deleted; the .swap files renamed to their live
// names; the old segments closed and their files removed. Open finishes or
// undoes a sequence a crash cut short (see Recovery), so the log reads as
// before the pass or as after it. Readers of the previous snapshot go on
// reading the old segments from their open files, and views stay valid
// until released. The active segment is never touched.
//
// # Changing settings while open
//
// Reconfigure changes the settings Kafka changes live on a topic (segment
// size and age, batch limit, retention, compaction and its settings, flush
// policy, read path, log-append time) on the open log. The settings in
// force are one immutable Options value behind an atomic pointer: an
// append loads it once and goes wholly by it, so no lock is added to the
// append path. Each setting applies from its next use (the next append or
// roll check, retention or cleaning pass; a read path to segments opened
// from then on). A change to FlushSync keeps the records visible so far
// visible until the next fsync covers them. A reopen takes its settings
// from its Options again.
//
// # Resources
//
// A ResourceCaps, shared by all logs of a process, bounds how many sealed
// segments hold descriptors and mappings; idle ones not read lately are
// closed again (CLOCK, an approximation of least recently used, which lets
// a read of an open segment take no lock). Active segments always hold
// theirs.
//
// # Reading beside a writer
//
// Options.ReadOnly opens a log for reading only, for tools that read a
// directory while its writer, in another process, holds it (the data
// directory's owner takes the lock; the log takes none). A read-only log
// changes nothing: it opens files O_RDONLY, never recovers, cuts, creates,
// renames or removes a file, never calls BeforeFirstWrite and starts no
// goroutine. Its segments are package segment's, opened with
// segment.OpenReadOnly, which treats the index files as hints: an index
// that fails its checks against the .log is rebuilt in memory, never on
// disk, so a zeroed tail (the writer's active index is preallocated) or a
// damaged entry costs a scan, never a wrong answer. Reads then take the
// writable log's paths. Its end is the last complete batch of the last
// segment that passes recovery's checks (CRC included), scanning from the
// last index entry that checks out: a batch the writer is still writing
// becomes visible once it is whole, a torn tail never.
//
// A reader sees the files as of Open or its last Refresh, which lists the
// segments again and finds the last one's end again. Nothing tells one
// process of another's appends: a consumer that follows a live writer
// calls Refresh at an interval, and Wait and WaitChan wake when a Refresh
// moves the end. The reader's high watermark is the end of the valid
// batches whatever the writer's policy: it can see records the writer has
// not fsynced, so not yet acknowledged under FlushSync, and that a power
// cut may take back. A truncation by the writer (replication) can cut a
// file under a reader; as for any file cut from outside, touch mapped
// bytes inside readpath.Guard, or use the sendfile read path.
//
// # Caveats
//
//   - Append rewrites the caller's batches in place (base offset, leader
//     epoch, and for log-append time the timestamps and CRC).
//   - A view returned by Read aliases a mapping (mmap read path) or a pooled
//     buffer; its bytes are valid until Release. Touch mapped bytes inside
//     readpath.Guard if the file could be cut by something outside Folio.
//   - The first batch of a Read can start before the requested offset, and
//     a high watermark set inside a batch is rounded down to its start:
//     readers never see part of a batch.
//   - Recovery treats a gap between two scanned segments as loss. The
//     cleaner therefore never leaves one: a cleaned segment keeps its last
//     batch (empty if need be), so it ends where the next segment begins.
//   - A cleaned segment's modification time, which tombstone retention
//     reads, is set on the real file and fsynced outside the vfs layer
//     (which models contents and names, not times). Copying a log's files
//     without their times restarts the retention of its tombstones.
//   - A segment's age for rolling counts from when this Log created or
//     reopened it, not from its first record's timestamp.
//   - Damaged index files are rebuilt from the .log when a segment is
//     loaded, even before BeforeFirstWrite: they are derived data.
package log

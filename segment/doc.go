// Package segment implements one log segment in Kafka's layout: a .log of
// RecordBatch v2 batches with ascending offsets, and its sparse offset
// index (.index) and time index (.timeindex). A partition's log is a
// sequence of segments; this package knows nothing of the others.
//
// # Files
//
// A segment with base offset B lives in one directory as
// FileName(B, LogSuffix) and its two index files ("%020d.log",
// "%020d.index", "%020d.timeindex"). The .log holds whole batches back to
// back, byte for byte as Kafka writes them. Every offset in the segment is
// at least B and at most B+2^31-1, and the .log stays below 2 GiB, because
// index entries store offsets relative to B and positions in 4 bytes each.
//
// # The index rule
//
// Both indexes get entries at the same batches, as Kafka's LogSegment.append
// (3.x) adds them. With bytesSince = 0, maxTs = -1 and maxTsOffset = -1 at
// the start of the segment, for each batch appended at position pos:
//
//	if batch.MaxTimestamp > maxTs { maxTs, maxTsOffset = batch.MaxTimestamp, batch.LastOffset }
//	if bytesSince > IndexIntervalBytes {
//		offsetIndex.Append(batch.LastOffset, pos)
//		timeIndex.Append(maxTs, maxTsOffset) // skipped unless maxTs grew past its last entry
//		bytesSince = 0
//	}
//	bytesSince += batch.Size()
//
// So the first batch is never indexed (position 0 is the implicit entry),
// an offset entry maps a batch's last offset to its start, and a time entry
// (T, O) says that no batch up to the indexed one has a max timestamp above
// T, and that O's batch is the first to reach it. Seal (and Close of the
// active segment) adds a final time entry (maxTs, maxTsOffset). Recover and
// every rebuild apply the same rule to the batches on disk.
//
// Lookups translate with a forward scan of batch headers: for an offset,
// from the offset-index entry at or below it to the first batch whose last
// offset reaches it; for a timestamp, from the batch of the time-index
// entry at or below it to the first batch whose MaxTimestamp reaches it.
//
// # Untrusted indexes
//
// Indexes carry no checksum. At load they pass the index package's O(1)
// sanity check, and their last entries must match the .log (the offset
// entry's position holds a valid batch header whose last offset is the
// entry's offset; the time entry's offset is the last offset of a batch
// whose MaxTimestamp is the entry's timestamp). Every entry a lookup uses
// is checked the same way. An index that is missing or fails a check is
// rebuilt from the .log's headers (IndexRebuilds counts this), and the
// lookup retried. A clean reopen of an intact segment rebuilds nothing.
//
// # Recovery
//
// Recover scans the .log from position 0 and stops at the first batch that
// fails any of these checks, in order:
//
//   - at least 61 bytes (a header) remain;
//   - magic 2, length+12 >= 61, lastOffsetDelta >= 0, recordCount >= 0;
//   - length+12 <= the bytes remaining, and the batch ends within 2^31-1;
//   - base offset >= the segment's base and > the previous batch's last
//     offset;
//   - last offset - segment base <= 2^31-1;
//   - recordCount <= lastOffsetDelta+1: every record has its own offset
//     delta, so a batch cannot hold more records than offsets; compaction
//     may leave fewer, even none, so fewer is valid;
//   - the CRC-32C over attributes..end matches.
//
// The partition leader epoch lies outside the CRC and is not checked, so a
// batch whose epoch was damaged stays valid. The file is cut after the
// last valid batch and fsynced, both indexes are rebuilt, and the result
// reports what was cut. Recover reads the file with pread only and never
// panics. Append applies the same checks to every batch it is given.
//
// A rebuild (by Recover, or of an index that failed a check) computes the
// entries first and then compares them with the index file: a file that
// holds exactly them, as a sealed segment's usually does after a crash, is
// kept and only fsynced; any other is rewritten in place, under its own
// name and inode. Neither removes nor creates a file (only a missing one),
// which on ext4 costs far more than the scan of a small segment.
//
// # Verify
//
// Verify is the read-only form of these rules for tools beside a live
// writer: it reports every batch problem with Recover's checks (and the
// valid prefix Recover would keep) and every index entry that breaks the
// rule lookups check entries against (an offset entry names the start,
// other than position 0, and the last offset of a batch of the valid
// prefix; a time entry the last offset and MaxTimestamp of one), opening
// the files O_RDONLY and changing nothing.
//
// # Reading beside a writer
//
// OpenReadOnly opens a segment that a writer in another process owns, for
// reading only: files O_RDONLY, nothing ever written, writes refused with
// ErrReadOnly. The index files are hints. A segment the writer is done
// with loads as a sealed one, except that an index that fails its checks is
// rebuilt in memory (index.NewOffsetInMemory), not on disk. A followed
// segment (the writer's active one, whose preallocated index tail is
// zeros) reads the index files as far as their entries are in order, cuts
// back to the last offset entry that checks out against the .log, and from
// there walks the batches with Recover's checks (CRC included) to the end
// of the valid ones; Refresh walks on from that end as the writer appends,
// indexing in memory what it passes, and reads the file again from the
// start if the writer cut or replaced it.
//
// # Opening lazily
//
// Open touches no file: a log holds thousands of sealed segments and opens
// them all at startup. The first call that needs the files (Read,
// FindPosition, OffsetForTime, NextOffset, Size, MaxTimestamp, Activate,
// TruncateTo) opens the .log, checks the indexes and maps them, in O(1):
// the segment's end state comes from the indexes' last entries plus a scan
// of the batches after the last offset entry (about IndexIntervalBytes).
// Nothing of the .log is mapped before the first lookup or read. CloseIdle
// gives the files back; Loaded reports whether they are held.
//
// # Concurrency
//
// One goroutine writes (Append and the other methods that change the
// segment); any number read at the same time. Append writes the batch, then
// publishes the new size, next offset and maximum timestamp in one atomic
// store, then indexes the batch. Readers take no lock that Append holds:
// they load that state after their index lookups, so every entry they see
// points below the size they read up to, and they never read a byte beyond
// it. Sync (fsync) does not take the append lock either.
//
// With the Mmap read path, readers walk batch headers in the .log's read
// mapping (the active segment's covers MaxSegmentBytes, so it never moves
// as the file grows), inside readpath.Guard, below the published size: a
// lookup or read costs no system call. A .log cut behind the segment's
// back then faults, and the fault is an error wrapping ErrCorrupt. The
// Sendfile path, and the appender's own scans (loading, rebuilds,
// truncation), read headers with pread.
//
// Locks: appendMu serialises the writing methods and guards the appender's
// counter; resMu guards the open files, shared by readers for one call and
// held exclusively to load, replace or close files. Order: appendMu, then
// resMu. The index package and the read path guard themselves.
//
// # Views, truncation and deletion
//
// A read returns a *readpath.View of whole batches from the mmap or the
// sendfile read path (Options.ReadPath); both give byte-identical bytes.
// A view holds its file (and mapping) until released, so it stays
// readable after Close, Delete (the files are renamed to .deleted and
// unlinked; the inode lives on) and TruncateTo. A mapped file must never
// shrink under a reader, so TruncateTo truncates in place only when no view
// of the .log is outstanding; otherwise it writes the kept prefix to a new
// file and renames it over the .log, leaving the holders the old inode.
// TruncateTo never blocks on readers.
//
// # Durability
//
// Append leaves the batch in the page cache; Sync (or Seal) fsyncs the .log
// and then the indexes, SyncLog the .log alone (enough for a caller that
// recovers the segment holding its recovery point after an unclean start,
// as the log does: see SyncLog). A failed write or fsync of the .log makes the
// segment fail-stop: writes return ErrFailed until Recover. Create, Delete
// and the copy of TruncateTo fsync the directory. Close does not fsync.
//
// # Caveats
//
//   - OffsetForTime answers at batch granularity: the base offset of the
//     first batch whose MaxTimestamp reaches the target; records before the
//     target inside that batch are the consumer's to skip.
//   - The indexes have no checksum, so a damaged entry is caught only if it
//     does not match the log. In particular a time index cut at an entry
//     boundary (dropping its newest entries, final one included) passes
//     every check, and MaxTimestamp of such a sealed segment then reflects
//     only the kept entries and the batches after the last offset entry,
//     as in Kafka. Lookups stay correct: OffsetForTime never stops early on
//     MaxTimestamp. Recover restores it.
//   - Options are not persisted; reopening with a smaller MaxIndexBytes
//     makes a rebuilt index stop early (longer scans, same answers).
package segment

// Package index implements a segment's sparse offset index (.index) and time
// index (.timeindex) in Kafka's file formats, byte for byte.
//
// # Model
//
// An offset index maps some batch offsets to the byte position of their
// batch in the segment's .log: 8-byte entries of a 4-byte offset relative
// to the segment's base offset and a 4-byte position, big-endian. A time
// index maps a maximum timestamp to an offset: 12-byte entries of an 8-byte
// timestamp and a 4-byte relative offset. Both are sparse: the segment adds
// an entry every IndexIntervalBytes of log (the time entry only when the
// maximum timestamp grew), and a reader scans the .log forward from the
// position a lookup returns. Appends enforce the order lookups rely on:
// offsets strictly increasing, positions and time-index offsets never
// decreasing, timestamps strictly increasing (a time entry whose timestamp
// is not above the last one is silently skipped, as in Kafka).
//
// A lookup returns the largest entry at or below its target. It binary
// searches the last 8 KiB of entries (1024 offset entries, 682 time
// entries) first and the rest only when the target lies below them
// (Kafka's KAFKA-6432 "warm section"), so lookups near the end of the log,
// which are nearly all of them, touch only resident pages.
//
// # Files and memory
//
// The active segment's index is writable: it is mapped read-write at
// Options.MaxIndexBytes (10 MiB by default, so lookups never need a
// remap), but disk is allocated with fallocate in steps of
// AllocStepEntries entries ahead of the writer. Disk use follows the
// entries, and because every page the writer touches is allocated first, a
// full disk is an ErrNoSpace from Append rather than a SIGBUS. Only pages
// inside the allocated part are ever touched. Seal trims the file to its
// entries, fsyncs it and remaps it read-only at that size; a sealed index
// holds no file descriptor. Reactivate grows the mapping back.
//
// Readers never take a lock the writer holds. Each lookup pins the current
// mapping with a reference count; entries are written before the entry
// count that makes them visible is published, so a lookup sees only whole
// entries. Seal, Reactivate, TruncateTo and Close publish a new mapping and
// wait until the last reader of the old one has left before they unmap it,
// shrink the file below it, or reuse its dropped entries. A file is
// therefore never truncated while a mapping covering the cut part may be
// read. Lookups that still fault (someone else shrank the file, or the disk
// failed a read of a mapped page) are caught with debug.SetPanicOnFault and
// answer as if the index were empty.
//
// # Crash safety
//
// There is no checksum, as in Kafka: an index is rebuilt from its .log when
// in doubt. Open runs an O(1) sanity check (whole entries, last offset not
// below the base, first and last entries in order) and returns an error
// wrapping ErrCorrupt if it fails. Because disk is allocated in whole
// entries and dropped entries are zeroed, a crash leaves at worst a zeroed
// tail, whose last entry fails the ordering check. The check is cheap, not
// proof: after a power cut, pages written through the mapping since the
// last Sync or Seal may have reached the disk in any order, leaving holes
// it cannot see. So, as in Kafka, recovery rebuilds the indexes of every
// segment it scans (those not known to be flushed), and trusts the check
// only for sealed, synced ones.
//
// # Caveats
//
//   - Lookups after Close, on an entry index out of range, or on a faulted
//     mapping return the base entry ((baseOffset, 0), or (NoTimestamp,
//     baseOffset) for the time index), which is always a correct, if slow,
//     place to start scanning.
//   - The race detector cannot see accesses to mapped memory; the
//     publication order (bytes, then count) is what keeps readers safe.
//   - Each index costs one memory map (vm.max_map_count); open sealed
//     indexes lazily.
//   - Linux and macOS are supported. On Windows a mapping longer than the
//     file grows the file, which would defeat the allocation scheme.
//
// # Locks
//
// writeMu is the appender's lock (every change to entries and state);
// fileMu guards the file handle's lifetime so that Sync can fsync without
// blocking Append. Order: writeMu before fileMu. Readers take neither.
package index

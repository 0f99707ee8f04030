// Package faultfs is a vfs.FS for tests that knows what a power cut would
// take and can inject failures: pebble's errorfs and raft-wal's ALICE runs
// in one. It works on real files (typically a test's t.TempDir()), because
// Folio's index and read paths map and sendfile them.
//
// # What a power cut takes
//
// FS keeps the model of durability that POSIX promises and that
// careful storage engines assume (the rules Linux file systems honour at
// least):
//
//   - A file's bytes and size are durable as of its last successful Sync.
//     Writes, truncations and allocations after it are lost, and so are
//     writes made through a shared mapping of the file: File.Sync reads the
//     real file, so a mapped write is durable once a File.Sync follows it
//     (an msync alone is invisible to FS).
//   - A directory entry is durable as of the last successful SyncDir of
//     its directory. A created file, a new directory, a rename and a remove
//     change the real disk at once but are undone by a cut until the
//     directory holding the entry is synced: for a rename that is both
//     directories, for a new directory its parent. A file that was synced
//     but whose directory never was is lost entirely.
//   - Files and directories that existed before the FS first saw them
//     are durable as they were then.
//
// The model is per directory, weaker than ext4's journal, which commits
// metadata in order. One consequence: a file renamed from directory a to b
// with only b synced is durable under both names, and a cut leaves two
// independent copies; a directory in that situation keeps the first name in
// path order. Being weaker is the point: code that survives the model does
// not lean on a journal's ordering that another file system may not give.
//
// FS never fsyncs the real disk: the durability it reports is the
// model's, and real fsyncs would cost milliseconds each on a busy disk.
//
// Durable and DurableNames say what a cut would leave now; Unsynced says how
// many bytes of a file a Sync would still make durable.
//
// A cut undoes all of a directory's unsynced changes together, which hides
// code that leans on their order. UnsyncedEntries lists them and SyncEntry
// makes one durable alone, so a test can persist any part of them before a
// cut, as a file system that writes them out of order would.
//
// PowerCut then makes it so on the real disk: entries that were not durable
// are removed, durable ones renamed or removed since are put back, every
// file gets back its durable bytes and size. All handles open before the cut
// die: every later call on them returns an error wrapping ErrPowerCut and
// touches nothing. Their descriptors stay open until the handles are
// closed (Close still answers ErrPowerCut), because code still running in
// the dead process may be using them through OS() at that very moment: a
// cut that closed them would race with it, and could let it map whatever
// file was opened next under the same descriptor number. The FS stays
// usable, with the restored disk as its new durable baseline, so a test can
// reopen the log on the same FS and check what recovery makes of it.
// Crash kills the handles the same way (ErrCrashed) but keeps every byte
// written: the page cache survives a process crash; a later PowerCut still
// drops what was never synced.
//
// # Injecting failures
//
// SetHook installs a function called before every operation that changes
// something (Op: open, create, write, sync, syncdir, rename, remove,
// truncate, allocate, mkdir) with no FS lock held, so a hook may block
// one operation while others, on other files or the same one, go on. A
// non-nil error fails the operation without performing it; a
// *ShortWriteError makes a write store only its first N bytes and then fail
// (a torn write). FailNth, FailNthWhere, FailFromNthWhere and Chain build
// common hooks. A hook may itself call PowerCut or Crash: the operation it
// was called for then fails with ErrPowerCut (or ErrCrashed) without
// running, which cuts the power at an exact point of a sequence.
//
// # Caveats
//
//   - Everything the code under test does to the tree must go through the
//     FS. Entries created behind its back are adopted as durable when
//     it next looks at their directory; entries removed behind its back
//     cannot be restored (PowerCut then fails with ErrRestore).
//   - Mappings made before a cut are not invalidated. PowerCut rewrites and
//     truncates the real files, so an old mapping may see the restored
//     bytes, or fault past a shortened end, and a write through it after the
//     cut lands in the new baseline. The code under test must abandon its
//     mappings (and every other object of the dead process) at the cut.
//   - A dead handle that is never closed keeps its descriptor (and a
//     removed file's blocks) until the garbage collector finalizes its
//     *os.File; a test closes them, as the kernel would a dead process's.
//   - An operation still in its hook when the cut happens fails with
//     ErrPowerCut when the hook returns; one past its hook finishes first
//     (the cut waits for it).
//   - FS keeps the durable content of every file written through it
//     in memory until the next cut, and Sync reads the whole file: it is
//     meant for test-sized data.
//   - Symbolic links are not followed specially; hard links are not modelled.
package faultfs

// Package readpath implements Folio's two read paths over segment .log
// files: mmap and sendfile, behind one interface.
//
// # Model
//
// A Source owns one open file and hands out Views of byte ranges of it. A
// View exposes its bytes to an in-process consumer (Bytes) and writes them to
// any io.Writer (WriteTo, an io.WriterTo). Both kinds return byte-identical
// results; they differ in how bytes move:
//
//   - Mmap maps the file read-only and shared, lazily on the first View, and
//     views alias the mapping: Bytes costs no system call, and WriteTo is one
//     write(2) from mapped memory. A Source opened with the segment's maximum
//     size maps past EOF once; a View past the mapping maps a larger region
//     and older views keep theirs.
//   - Sendfile reads with pread into a pooled buffer for Bytes, and sends to a
//     *net.TCPConn with positional sendfile(2) inside the connection's
//     RawConn.Write: no user-space copy and no use of the file's shared
//     offset, so any number of goroutines may send ranges of one file at
//     once. Any other writer (*tls.Conn, a bytes.Buffer, a wrapped
//     connection) and every writer off Linux gets a pread + Write copy.
//
// # Lifetimes
//
// Every View holds a reference on its Source's file, and an Mmap View on the
// mapping it aliases. Close drops the Source's own reference; the file is
// closed and the mapping unmapped when the last reference goes. A segment
// can therefore be renamed and unlinked while readers hold views: they keep
// reading the old inode's bytes, and the descriptor and map area are freed
// by the last Release. Bytes returned by Bytes are valid until Release.
// ReadCounters and Stats report open files and live mappings for the log's
// resource caps.
//
// # Caveats
//
//   - The caller guarantees a View's range is written; View does not stat
//     the file. Mapped bytes past EOF raise SIGBUS when touched, so a reader
//     must never be handed unwritten ranges.
//   - A mapped file must not be truncated while mapped; Folio only unlinks.
//     If something truncates it anyway, touching the lost pages faults. Code
//     that touches mapped bytes runs inside Guard, which turns the fault into
//     an error wrapping ErrFault; WriteTo does so itself and first checks the
//     file's size (ErrTruncated). Guard protects the calling goroutine only:
//     mapped bytes handed to another goroutine are unprotected there.
//   - A page fault is not a system call: a goroutine faulting in cold mapped
//     pages keeps its P. For data larger than memory the sendfile kind avoids
//     the stall and the eviction costs of mmap.
//   - The race detector does not see accesses to mapped memory.
//   - WriteTo's size check and the send are not atomic; a file truncated in
//     between yields ErrTruncated (sendfile, pread) or ErrFault (mmap) with
//     the count of bytes already written, never a silent short send.
package readpath

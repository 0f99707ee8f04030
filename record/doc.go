// Package record encodes and decodes Kafka's RecordBatch v2 (magic 2), the
// unit Folio stores on disk and sends on the wire, byte for byte as Kafka
// does.
//
// # Model
//
// A Batch is the encoded bytes of one batch: a 61-byte big-endian header
// (base offset, length, partition leader epoch, magic, CRC-32C,
// attributes, last offset delta, base and max timestamps, producer id,
// epoch and base sequence, record count) followed by the records section,
// which is compressed as one blob when the codec (attribute bits 0-2) is
// gzip, snappy, lz4 or zstd. The CRC covers attributes through the end, so
// the base offset and partition leader epoch can be stamped in place
// without recomputing it. Each record is zigzag-varint framed: length,
// attributes, timestamp delta, offset delta, key, value (either may be null,
// length -1, or empty) and headers.
//
//   - Builder appends Records and builds a Batch, compressing as its
//     BuilderOptions say.
//   - Parse splits a byte stream (a segment file, a fetch response) into
//     validated batches without copying; ReadBatch reads one from an
//     io.Reader with its size capped.
//   - Batch.Records returns a RecordIter whose RecordViews alias the batch,
//     or a pooled decompression buffer that RecordIter.Close returns.
//
// # Why not franz-go's kmsg
//
// kmsg.RecordBatch and kmsg.Record decode into structs with slices of
// headers, which allocates per record; a log that scans batches on every
// fetch, index rebuild and recovery cannot afford that. This package reads
// in place: iterating an uncompressed batch allocates nothing. Its tests
// check every codec both ways against franz-go (kmsg, kgo's compressor and
// decompressor), so the format is verified by code no one here wrote.
//
// # Compression
//
// Batches are written in the forms Kafka's Java producer writes: gzip;
// snappy in snappy-java's xerial framing (raw snappy is also read); lz4 as
// a standard LZ4 frame with independent 64 KiB blocks and no checksums;
// zstd. Encoders, decoders and buffers are pooled.
//
// # Caveats
//
//   - Records checks the CRC unless DecodeOptions.SkipCRC is set; the
//     header accessors (BaseOffset, NumRecords, ...) read bytes in place and
//     need len(b) >= HeaderSize, so run CheckHeader, Validate or Parse on
//     untrusted bytes first.
//   - Record views are only valid until the iterator is closed (compressed
//     batches) or while the batch's bytes are (uncompressed): copy to keep.
//   - Decoding is stricter than Java's in a few places a conforming writer
//     never reaches: overlong varints, offset deltas that do not increase or
//     pass lastOffsetDelta, and bytes after the last record are ErrCorrupt.
//   - Memory is bounded by DecodeOptions: no length field makes the
//     decoder allocate more than MaxBatchBytes (ReadBatch) or
//     MaxDecompressedBytes (decompression), plus pooled codec state of
//     fixed size.
//   - Timestamps are int64 milliseconds; deltas wrap like Java's long
//     arithmetic, so any pair of timestamps round-trips in one batch.
//   - A batch with no records is built uncompressed whatever the codec, as
//     Kafka does.
//   - Control batches (transaction markers) and the transactional bit are
//     kept as given; interpreting control records is the caller's job.
package record

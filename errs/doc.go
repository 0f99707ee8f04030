// Package errs holds what every layer of Folio shares about errors: the
// classes a caller tests with errors.Is whichever package reported the
// error, the type that says where damage on disk was found, and the one
// mapping from Folio's errors to Kafka's error codes.
//
// # Classes
//
// ErrCorrupt is matched by every report of bytes on disk that are not what
// they should be: a batch, an index, a segment, a log, the topic catalog,
// a producer-state snapshot, the checkpoint and the other metadata files,
// the records of __consumer_offsets. ErrClosed is matched by every call on
// something already closed. Each package keeps its own sentinels
// (segment.ErrCorrupt, log.ErrClosed, ...), declared with New so that they
// also match the shared class:
//
//	ErrCorrupt = errs.New("segment: corrupt log", errs.ErrCorrupt)
//
// # Where damage is
//
// The first layer that knows the file a damaged byte came from reports it as
// a *Corruption (Corrupt, Corruptf): the file, the byte position and, where
// known, the offset of the batch or record. Layers above pass it on; errors.As
// finds it under any wrapping. Its text is one clause per layer, each said
// once:
//
//	/data/logs-0/00000000000000000000.log at byte 4096: record: corrupt batch at offset 17: crc 1a2b3c4d, computed 5e6f7a8b
//
// # Kafka error codes
//
// A sentinel declares its Kafka code where it is defined, as one more class:
//
//	ErrExists = errs.New("topic: topic already exists", kerr.TopicAlreadyExists)
//
// Kafka(err) is the code a Kafka endpoint answers with: the first
// *kerr.Error in err's chain (a sentinel's code, or a *kerr.Error itself),
// REQUEST_TIMED_OUT for an ended context, UNKNOWN_SERVER_ERROR otherwise.
// Because the code is a class, errors.Is(err, kerr.TopicAlreadyExists) holds
// too.
package errs

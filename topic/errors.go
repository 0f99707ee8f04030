package topic

import (
	"errors"

	"github.com/foliolog/folio/errs"
	"github.com/twmb/franz-go/pkg/kerr"
)

// Sentinels that have a Kafka equivalent are declared with its code (see
// errs.Kafka), named in the comment: the code a Kafka broker answers the
// same request with.

// Names and configuration.
var (
	// ErrInvalidName reports a topic name that breaks Kafka's rules: 1-249
	// characters of [a-zA-Z0-9._-], not "." or "..". Kafka:
	// INVALID_TOPIC_EXCEPTION.
	ErrInvalidName = errs.New("topic: invalid topic name", kerr.InvalidTopicException)
	// ErrReservedName reports a user topic name that starts with "__", the
	// prefix of Folio's own topics (such as __consumer_offsets), or an
	// internal name that lacks it. Kafka: INVALID_TOPIC_EXCEPTION.
	ErrReservedName = errs.New("topic: reserved topic name", kerr.InvalidTopicException)
	// ErrNameCollision reports a name that would share a directory or a
	// metric name with an existing topic: equal after folding case (on a
	// case-insensitive file system both use one directory) or after
	// replacing '.' with '_' (Kafka refuses those for its metric names).
	// Kafka: INVALID_TOPIC_EXCEPTION.
	ErrNameCollision = errs.New("topic: topic name collides with an existing topic", kerr.InvalidTopicException)
	// ErrInvalidConfig reports a configuration value out of range or that
	// does not parse; the message names the field. Kafka: INVALID_CONFIG.
	ErrInvalidConfig = errs.New("topic: invalid config", kerr.InvalidConfig)
)

// Catalog.
var (
	// ErrExists reports a create of a topic that already exists. Kafka:
	// TOPIC_ALREADY_EXISTS.
	ErrExists = errs.New("topic: topic already exists", kerr.TopicAlreadyExists)
	// ErrNotFound reports an operation on a topic the catalog does not hold.
	// Kafka: UNKNOWN_TOPIC_OR_PARTITION.
	ErrNotFound = errs.New("topic: unknown topic", kerr.UnknownTopicOrPartition)
	// ErrInvalidPartitions reports a partition count that is out of range or
	// that would shrink a topic (partitions are never removed). Kafka:
	// INVALID_PARTITIONS.
	ErrInvalidPartitions = errs.New("topic: invalid partition count", kerr.InvalidPartitions)
	// ErrCorrupt marks a catalog file or a producer-state snapshot that fails
	// its checksum or does not decode. Opening never treats a corrupt catalog
	// as empty. It matches errs.ErrCorrupt. A damaged catalog is an
	// *errs.Corruption naming the file; LoadSnapshot, given bytes, says the
	// byte position, and its caller names the file.
	ErrCorrupt = errs.New("topic: corrupt metadata", errs.ErrCorrupt)
	// ErrUnsupportedVersion reports a catalog written in a format version
	// this code does not know (written by a newer Folio).
	ErrUnsupportedVersion = errors.New("topic: unsupported catalog format version")
	// ErrFailed reports a catalog whose last write failed at its rename or
	// directory fsync: whether a restart finds the old or the new catalog is
	// unknown, so the Catalog refuses further calls until it is reopened.
	// Kafka: KAFKA_STORAGE_ERROR.
	ErrFailed = errs.New("topic: catalog write outcome unknown; reopen the catalog", kerr.KafkaStorageError)
	// ErrClosed reports a call on a closed catalog. It matches
	// errs.ErrClosed.
	ErrClosed = errs.New("topic: catalog closed", errs.ErrClosed)
	// ErrCleanupPending reports that a committed delete could not remove all
	// of the topic's partition directories. The topic is gone from the
	// catalog; the leftovers are removed when the catalog is next opened.
	ErrCleanupPending = errors.New("topic: partition directories left for removal")
	// ErrReadOnly reports a change asked of a catalog opened with
	// Options.ReadOnly.
	ErrReadOnly = errors.New("topic: catalog opened read-only")
	// ErrNoCatalog reports a read-only open of a data directory that does
	// not exist, is not a directory, or holds no catalog file yet. Only a
	// writable open creates them. When something is missing the error
	// wraps os.ErrNotExist too.
	ErrNoCatalog = errors.New("topic: no catalog in the data directory")
	// ErrProducerIDsExhausted reports that every producer id up to
	// math.MaxInt64 has been handed out.
	ErrProducerIDsExhausted = errors.New("topic: producer ids exhausted")
)

// Partitioners.
var (
	// ErrNoPartitions reports a partition count below 1.
	ErrNoPartitions = errors.New("topic: no partitions to choose from")
	// ErrPartitionOutOfRange reports an explicit partition outside [0, n).
	// Kafka: UNKNOWN_TOPIC_OR_PARTITION.
	ErrPartitionOutOfRange = errs.New("topic: partition out of range", kerr.UnknownTopicOrPartition)
)

// Producer state (idempotence). Each carries its Kafka error code, named in
// the comment, so a wire endpoint answers Kafka clients as a broker does.
var (
	// ErrOutOfOrderSequence (OUT_OF_ORDER_SEQUENCE_NUMBER): the batch's first
	// sequence does not follow the producer's last one, or a new epoch does
	// not start at 0. Records may have been lost between the two.
	ErrOutOfOrderSequence = errs.New("topic: out of order sequence number", kerr.OutOfOrderSequenceNumber)
	// ErrDuplicateSequence (DUPLICATE_SEQUENCE_NUMBER): the batch's sequences
	// were written before, but it is older than the batches whose offsets
	// are remembered, so its original offsets cannot be returned. A client
	// should treat the batch as written (the Java client does).
	ErrDuplicateSequence = errs.New("topic: duplicate sequence number", kerr.DuplicateSequenceNumber)
	// ErrProducerFenced (INVALID_PRODUCER_EPOCH, what a Kafka broker answers
	// an idempotent producer; PRODUCER_FENCED is for transactional ones):
	// the batch's epoch is older than the producer's current epoch; a newer
	// instance of the producer has taken over.
	ErrProducerFenced = errs.New("topic: producer fenced by a newer epoch", kerr.InvalidProducerEpoch)
	// ErrUnknownProducerID (UNKNOWN_PRODUCER_ID): with
	// ProducerStateOptions.RejectUnknownProducers, a producer the partition
	// holds no state for sent a batch that does not start at sequence 0.
	ErrUnknownProducerID = errs.New("topic: unknown producer id", kerr.UnknownProducerID)
	// ErrInvalidBatch (INVALID_RECORD): the batch header is too short, or
	// carries a producer id with a negative epoch or sequence, or offsets
	// that do not match its record count.
	ErrInvalidBatch = errs.New("topic: invalid producer batch", kerr.InvalidRecord)
)

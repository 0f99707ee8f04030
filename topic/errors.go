package topic

import "errors"

// Names and configuration.
var (
	// ErrInvalidName reports a topic name that breaks Kafka's rules: 1-249
	// characters of [a-zA-Z0-9._-], not "." or "..".
	ErrInvalidName = errors.New("topic: invalid topic name")
	// ErrReservedName reports a user topic name that starts with "__", the
	// prefix of Folio's own topics (such as __consumer_offsets), or an
	// internal name that lacks it.
	ErrReservedName = errors.New("topic: reserved topic name")
	// ErrNameCollision reports a name that would share a directory or a
	// metric name with an existing topic: equal after folding case (on a
	// case-insensitive file system both use one directory) or after
	// replacing '.' with '_' (Kafka refuses those for its metric names).
	ErrNameCollision = errors.New("topic: topic name collides with an existing topic")
	// ErrInvalidConfig reports a configuration value out of range or that
	// does not parse; the message names the field.
	ErrInvalidConfig = errors.New("topic: invalid config")
)

// Catalog.
var (
	// ErrExists reports a create of a topic that already exists.
	ErrExists = errors.New("topic: topic already exists")
	// ErrNotFound reports an operation on a topic the catalog does not hold.
	ErrNotFound = errors.New("topic: unknown topic")
	// ErrInvalidPartitions reports a partition count that is out of range or
	// that would shrink a topic (partitions are never removed).
	ErrInvalidPartitions = errors.New("topic: invalid partition count")
	// ErrCorrupt marks a catalog file or a producer-state snapshot that fails
	// its checksum or does not decode. Opening never treats a corrupt catalog
	// as empty.
	ErrCorrupt = errors.New("topic: corrupt metadata")
	// ErrUnsupportedVersion reports a catalog written in a format version
	// this code does not know (written by a newer Folio).
	ErrUnsupportedVersion = errors.New("topic: unsupported catalog format version")
	// ErrFailed reports a catalog whose last write failed at its rename or
	// directory fsync: whether a restart finds the old or the new catalog is
	// unknown, so the Catalog refuses further calls until it is reopened.
	ErrFailed = errors.New("topic: catalog write outcome unknown; reopen the catalog")
	// ErrClosed reports a call on a closed catalog.
	ErrClosed = errors.New("topic: catalog closed")
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
	ErrPartitionOutOfRange = errors.New("topic: partition out of range")
)

// Producer state (idempotence). Each maps to a Kafka error code, named in
// the comment, so a wire endpoint can answer Kafka clients as a broker does.
var (
	// ErrOutOfOrderSequence (OUT_OF_ORDER_SEQUENCE_NUMBER): the batch's first
	// sequence does not follow the producer's last one, or a new epoch does
	// not start at 0. Records may have been lost between the two.
	ErrOutOfOrderSequence = errors.New("topic: out of order sequence number")
	// ErrDuplicateSequence (DUPLICATE_SEQUENCE_NUMBER): the batch's sequences
	// were written before, but it is older than the batches whose offsets
	// are remembered, so its original offsets cannot be returned. A client
	// should treat the batch as written (the Java client does).
	ErrDuplicateSequence = errors.New("topic: duplicate sequence number")
	// ErrProducerFenced (INVALID_PRODUCER_EPOCH, PRODUCER_FENCED before Kafka
	// 2.7): the batch's epoch is older than the producer's current epoch; a
	// newer instance of the producer has taken over.
	ErrProducerFenced = errors.New("topic: producer fenced by a newer epoch")
	// ErrUnknownProducerID (UNKNOWN_PRODUCER_ID): with
	// ProducerStateOptions.RejectUnknownProducers, a producer the partition
	// holds no state for sent a batch that does not start at sequence 0.
	ErrUnknownProducerID = errors.New("topic: unknown producer id")
	// ErrInvalidBatch (INVALID_RECORD): the batch header is too short, or
	// carries a producer id with a negative epoch or sequence, or offsets
	// that do not match its record count.
	ErrInvalidBatch = errors.New("topic: invalid producer batch")
)

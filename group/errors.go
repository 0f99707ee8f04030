package group

import (
	"errors"

	"github.com/foliolog/folio/errs"
	"github.com/twmb/franz-go/pkg/kerr"
)

// The Kafka protocol errors the coordinator returns are franz-go's kerr
// values themselves (wrapped with %w and the group, member or partition
// they concern), so a caller tests them with errors.Is, the Kafka endpoint
// answers with errs.Kafka(err) (or errs.Code), and a code read off the
// wire turns back into the same value with kerr.ErrorForCode. Folio's
// other sentinels that mean one of these codes match it too: a
// topic.ErrNotFound matches ErrUnknownTopicOrPartition.
var (
	ErrUnknownServerError        = kerr.UnknownServerError
	ErrUnknownTopicOrPartition   = kerr.UnknownTopicOrPartition
	ErrOffsetMetadataTooLarge    = kerr.OffsetMetadataTooLarge
	ErrCoordinatorLoadInProgress = kerr.CoordinatorLoadInProgress
	ErrCoordinatorNotAvailable   = kerr.CoordinatorNotAvailable
	ErrNotCoordinator            = kerr.NotCoordinator
	ErrIllegalGeneration         = kerr.IllegalGeneration
	ErrInconsistentGroupProtocol = kerr.InconsistentGroupProtocol
	ErrInvalidGroupID            = kerr.InvalidGroupID
	ErrUnknownMemberID           = kerr.UnknownMemberID
	ErrInvalidSessionTimeout     = kerr.InvalidSessionTimeout
	ErrRebalanceInProgress       = kerr.RebalanceInProgress
	ErrInvalidCommitOffsetSize   = kerr.InvalidCommitOffsetSize
	ErrInvalidRequest            = kerr.InvalidRequest
	ErrNonEmptyGroup             = kerr.NonEmptyGroup
	ErrGroupIDNotFound           = kerr.GroupIDNotFound
	ErrMemberIDRequired          = kerr.MemberIDRequired
	ErrGroupMaxSizeReached       = kerr.GroupMaxSizeReached
	ErrFencedInstanceID          = kerr.FencedInstanceID
	ErrGroupSubscribedToTopic    = kerr.GroupSubscribedToTopic
)

// Errors of this package that are not Kafka protocol errors.
var (
	// ErrClosed is returned by a Coordinator or Member after Close, and by a
	// second Close. From a Coordinator it comes together with
	// ErrCoordinatorNotAvailable, the code a Kafka client sees. It matches
	// errs.ErrClosed.
	ErrClosed = errs.New("group: closed", errs.ErrClosed)

	// ErrCorrupt is the class of __consumer_offsets records that do not
	// decode. The coordinator skips such records at load (and counts them
	// in Stats). It matches errs.ErrCorrupt; a damaged record read from a
	// partition is an *errs.Corruption naming the partition's directory
	// and the record's offset.
	ErrCorrupt = errs.New("group: corrupt offsets record", errs.ErrCorrupt)

	// ErrInvalidOptions wraps every Options or MemberOptions validation
	// failure; the message names the field.
	ErrInvalidOptions = errors.New("group: invalid options")

	// ErrNoOffset is returned by Member.Poll for assigned partitions that
	// have no committed offset when the member's Reset is ResetNone (Kafka's
	// NoOffsetForPartitionException). Seek them to go on.
	ErrNoOffset = errors.New("group: no committed offset and reset policy none")

	// ErrCommitFailed wraps the protocol error of a commit the coordinator
	// refused because the member no longer owns its partitions in the
	// current generation (ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID,
	// FENCED_INSTANCE_ID, REBALANCE_IN_PROGRESS): Kafka's
	// CommitFailedException. The records may be delivered again to the
	// partition's next owner.
	ErrCommitFailed = errors.New("group: commit failed: the group rebalanced and the partitions may belong to another member")

	// ErrAssignment wraps a failure of the leader's assignor or an
	// assignment that does not decode.
	ErrAssignment = errors.New("group: assignment failed")
)

// fencingError reports whether err says that the member, or its
// generation, is no longer the one the coordinator knows.
func fencingError(err error) bool {
	return errors.Is(err, ErrUnknownMemberID) || errors.Is(err, ErrIllegalGeneration) ||
		errors.Is(err, ErrFencedInstanceID)
}

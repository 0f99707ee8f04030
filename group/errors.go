package group

import (
	"context"
	"errors"
	"strconv"
)

// Error is an error of the group protocol with its Kafka error code. The
// coordinator returns these values (wrapped with %w and the group, member
// or partition they concern), so a caller tests them with errors.Is and
// the Kafka endpoint turns them into wire codes with ErrorCode. They mirror
// franz-go's kerr.Error.
type Error struct {
	// Code is the Kafka protocol error code.
	Code int16
	// Name is Kafka's name of the code, e.g. "UNKNOWN_MEMBER_ID".
	Name string
	// Retriable says whether Kafka clients retry the request as it is.
	Retriable bool
	// Description is Kafka's explanation of the code.
	Description string
}

func (e *Error) Error() string { return "group: " + e.Name + ": " + e.Description }

// The Kafka error codes the group protocol uses. Each is one *Error value,
// so errors.Is matches it through any wrapping.
var (
	ErrUnknownServerError = &Error{-1, "UNKNOWN_SERVER_ERROR", false,
		"the server experienced an unexpected error when processing the request"}
	ErrUnknownTopicOrPartition = &Error{3, "UNKNOWN_TOPIC_OR_PARTITION", true,
		"this server does not host this topic-partition"}
	ErrOffsetMetadataTooLarge = &Error{12, "OFFSET_METADATA_TOO_LARGE", false,
		"the metadata field of the offset request was too large"}
	ErrCoordinatorLoadInProgress = &Error{14, "COORDINATOR_LOAD_IN_PROGRESS", true,
		"the coordinator is loading and hence can't process requests"}
	ErrCoordinatorNotAvailable = &Error{15, "COORDINATOR_NOT_AVAILABLE", true,
		"the coordinator is not available"}
	ErrNotCoordinator = &Error{16, "NOT_COORDINATOR", true,
		"this is not the correct coordinator"}
	ErrIllegalGeneration = &Error{22, "ILLEGAL_GENERATION", false,
		"specified group generation id is not valid"}
	ErrInconsistentGroupProtocol = &Error{23, "INCONSISTENT_GROUP_PROTOCOL", false,
		"the group member's supported protocols are incompatible with those of existing members or first group member tried to join with empty protocol type or empty protocol list"}
	ErrInvalidGroupID = &Error{24, "INVALID_GROUP_ID", false,
		"the configured groupId is invalid"}
	ErrUnknownMemberID = &Error{25, "UNKNOWN_MEMBER_ID", false,
		"the coordinator is not aware of this member"}
	ErrInvalidSessionTimeout = &Error{26, "INVALID_SESSION_TIMEOUT", false,
		"the session timeout is not within the range allowed by the broker (as configured by group.min.session.timeout.ms and group.max.session.timeout.ms)"}
	ErrRebalanceInProgress = &Error{27, "REBALANCE_IN_PROGRESS", false,
		"the group is rebalancing, so a rejoin is needed"}
	ErrInvalidCommitOffsetSize = &Error{28, "INVALID_COMMIT_OFFSET_SIZE", false,
		"the committing offset data size is not valid"}
	ErrInvalidRequest = &Error{42, "INVALID_REQUEST", false,
		"this most likely occurs because of a request being malformed by the client library or the message was sent to an incompatible broker"}
	ErrNonEmptyGroup = &Error{68, "NON_EMPTY_GROUP", false,
		"the group is not empty"}
	ErrGroupIDNotFound = &Error{69, "GROUP_ID_NOT_FOUND", false,
		"the group id does not exist"}
	ErrMemberIDRequired = &Error{79, "MEMBER_ID_REQUIRED", false,
		"the group member needs to have a valid member id before actually entering a consumer group"}
	ErrGroupMaxSizeReached = &Error{81, "GROUP_MAX_SIZE_REACHED", false,
		"the consumer group has reached its max size"}
	ErrFencedInstanceID = &Error{82, "FENCED_INSTANCE_ID", false,
		"the broker rejected this static consumer since another consumer with the same group.instance.id has registered with a different member.id"}
	ErrGroupSubscribedToTopic = &Error{86, "GROUP_SUBSCRIBED_TO_TOPIC", false,
		"the consumer group is actively subscribed to the topic"}
)

// kafkaErrors lists every *Error by code, for ErrorForCode.
var kafkaErrors = func() map[int16]*Error {
	m := map[int16]*Error{}
	for _, e := range []*Error{
		ErrUnknownServerError, ErrUnknownTopicOrPartition, ErrOffsetMetadataTooLarge,
		ErrCoordinatorLoadInProgress, ErrCoordinatorNotAvailable, ErrNotCoordinator,
		ErrIllegalGeneration, ErrInconsistentGroupProtocol, ErrInvalidGroupID,
		ErrUnknownMemberID, ErrInvalidSessionTimeout, ErrRebalanceInProgress,
		ErrInvalidCommitOffsetSize, ErrInvalidRequest, ErrNonEmptyGroup, ErrGroupIDNotFound,
		ErrMemberIDRequired, ErrGroupMaxSizeReached, ErrFencedInstanceID, ErrGroupSubscribedToTopic,
	} {
		m[e.Code] = e
	}
	return m
}()

// Errors of this package that are not Kafka protocol errors.
var (
	// ErrClosed is returned by a Coordinator or Member after Close, and by a
	// second Close. From a Coordinator it comes together with
	// ErrCoordinatorNotAvailable, the code a Kafka client sees.
	ErrClosed = errors.New("group: closed")

	// ErrCorrupt is the class of __consumer_offsets records that do not
	// decode. The coordinator skips such records at load (and counts them
	// in Stats); decoding functions wrap it with the partition and offset.
	ErrCorrupt = errors.New("group: corrupt offsets record")

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

// ErrorCode returns the Kafka error code for err: 0 for nil, the code of an
// *Error in err's chain, 7 (REQUEST_TIMED_OUT) for an ended context, and -1
// (UNKNOWN_SERVER_ERROR) for anything else.
func ErrorCode(err error) int16 {
	if err == nil {
		return 0
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return 7
	}
	return -1
}

// ErrorForCode returns the *Error for a Kafka error code, nil for 0, and a
// new *Error named by the number for a code this package does not use.
func ErrorForCode(code int16) error {
	if code == 0 {
		return nil
	}
	if e, ok := kafkaErrors[code]; ok {
		return e
	}
	return &Error{Code: code, Name: "CODE_" + strconv.Itoa(int(code)), Description: "a Kafka error code the group package does not use"}
}

// fencingError reports whether err says that the member, or its
// generation, is no longer the one the coordinator knows.
func fencingError(err error) bool {
	return errors.Is(err, ErrUnknownMemberID) || errors.Is(err, ErrIllegalGeneration) ||
		errors.Is(err, ErrFencedInstanceID)
}

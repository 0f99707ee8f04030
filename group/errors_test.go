package group

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

// TestErrorCodesAreKafkas pins every error to Kafka's code and name
// (org.apache.kafka.common.protocol.Errors), both ways.
func TestErrorCodesAreKafkas(t *testing.T) {
	for _, c := range []struct {
		err  *Error
		code int16
		name string
	}{
		{ErrUnknownServerError, -1, "UNKNOWN_SERVER_ERROR"},
		{ErrUnknownTopicOrPartition, 3, "UNKNOWN_TOPIC_OR_PARTITION"},
		{ErrOffsetMetadataTooLarge, 12, "OFFSET_METADATA_TOO_LARGE"},
		{ErrCoordinatorLoadInProgress, 14, "COORDINATOR_LOAD_IN_PROGRESS"},
		{ErrCoordinatorNotAvailable, 15, "COORDINATOR_NOT_AVAILABLE"},
		{ErrNotCoordinator, 16, "NOT_COORDINATOR"},
		{ErrIllegalGeneration, 22, "ILLEGAL_GENERATION"},
		{ErrInconsistentGroupProtocol, 23, "INCONSISTENT_GROUP_PROTOCOL"},
		{ErrInvalidGroupID, 24, "INVALID_GROUP_ID"},
		{ErrUnknownMemberID, 25, "UNKNOWN_MEMBER_ID"},
		{ErrInvalidSessionTimeout, 26, "INVALID_SESSION_TIMEOUT"},
		{ErrRebalanceInProgress, 27, "REBALANCE_IN_PROGRESS"},
		{ErrInvalidCommitOffsetSize, 28, "INVALID_COMMIT_OFFSET_SIZE"},
		{ErrInvalidRequest, 42, "INVALID_REQUEST"},
		{ErrNonEmptyGroup, 68, "NON_EMPTY_GROUP"},
		{ErrGroupIDNotFound, 69, "GROUP_ID_NOT_FOUND"},
		{ErrMemberIDRequired, 79, "MEMBER_ID_REQUIRED"},
		{ErrGroupMaxSizeReached, 81, "GROUP_MAX_SIZE_REACHED"},
		{ErrFencedInstanceID, 82, "FENCED_INSTANCE_ID"},
		{ErrGroupSubscribedToTopic, 86, "GROUP_SUBSCRIBED_TO_TOPIC"},
	} {
		if c.err.Code != c.code || c.err.Name != c.name {
			t.Errorf("%s: code %d name %s, want %d %s", c.name, c.err.Code, c.err.Name, c.code, c.name)
		}
		wrapped := fmt.Errorf("group %q: member %q: %w", "g", "m", c.err)
		if got := ErrorCode(wrapped); got != c.code {
			t.Errorf("ErrorCode(wrapped %s) = %d", c.name, got)
		}
		if back := ErrorForCode(c.code); back != error(c.err) {
			t.Errorf("ErrorForCode(%d) = %v, want %v", c.code, back, c.err)
		}
		if !errors.Is(wrapped, c.err) {
			t.Errorf("errors.Is(wrapped, %s) is false", c.name)
		}
	}
	if ErrorCode(nil) != 0 || ErrorForCode(0) != nil {
		t.Error("no error is code 0")
	}
	if ErrorCode(context.Canceled) != 7 || ErrorCode(fmt.Errorf("x: %w", context.DeadlineExceeded)) != 7 {
		t.Error("an ended context is REQUEST_TIMED_OUT")
	}
	if ErrorCode(errors.New("disk on fire")) != -1 {
		t.Error("an unknown error is UNKNOWN_SERVER_ERROR")
	}
	if e := ErrorForCode(999); ErrorCode(e) != 999 {
		t.Errorf("an unused code round-trips: %v", e)
	}
	closed := errClosed()
	if !errors.Is(closed, ErrClosed) || ErrorCode(closed) != 15 {
		t.Errorf("a closed coordinator: %v code %d", closed, ErrorCode(closed))
	}
}

package transport

import (
	"context"
	"errors"

	"github.com/foliolog/folio/errs"
	"github.com/foliolog/folio/group"
	"github.com/twmb/franz-go/pkg/kerr"
)

// The group APIs (FindCoordinator, JoinGroup, SyncGroup, Heartbeat,
// LeaveGroup, OffsetCommit, OffsetFetch, OffsetDelete, ListGroups,
// DescribeGroups, DeleteGroups; one file each) translate Kafka's messages
// to the group package's coordinator, which the in-process GroupConsumer
// uses too: a Kafka consumer and an in-process member can share a group.
// This broker coordinates every group.

// groupCode is the error code of a coordinator error: a closed
// coordinator (the Broker closing) is COORDINATOR_NOT_AVAILABLE, which
// makes clients look for the coordinator again; the rest carry theirs.
func groupCode(err error) int16 {
	if err != nil && errors.Is(err, errs.ErrClosed) {
		return kerr.CoordinatorNotAvailable.Code
	}
	return errs.Code(err)
}

// coordinator returns the Backend's group coordinator.
func (s *Server) coordinator() (*group.Coordinator, error) {
	c, err := s.b.GroupCoordinator()
	if err != nil && errs.Kafka(err) == kerr.UnknownServerError {
		// A coordinator that cannot start (its topic cannot open) is one
		// clients should look for again, as Kafka's loading coordinator.
		return nil, errors.Join(kerr.CoordinatorNotAvailable, err)
	}
	return c, err
}

// strOr returns *p, or "" for nil (the group package's null string).
func strOr(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// nullable returns nil for "", else &s.
func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// untilStopping returns ctx that also ends when the server shuts down,
// for requests that wait on others (a JoinGroup waits for the rebalance).
func (s *Server) untilStopping(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(s.stopCtx, cancel)
	return ctx, func() { stop(); cancel() }
}

// partitionCode is the error code of a partition error: a partition
// closed under the request (its Broker closing) is NOT_LEADER_OR_FOLLOWER,
// which makes clients refresh their metadata and retry, as they do when a
// Kafka broker stops leading; the rest carry theirs.
func partitionCode(err error) int16 {
	if err != nil && errors.Is(err, errs.ErrClosed) && errs.Kafka(err) == kerr.UnknownServerError {
		return kerr.NotLeaderForPartition.Code
	}
	return errs.Code(err)
}

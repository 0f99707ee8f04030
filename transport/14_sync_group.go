package transport

import (
	"context"
	"time"

	"github.com/foliolog/folio/group"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// SyncGroup v0..v5. A follower's SyncGroup waits for the leader's
// assignment, at most the rebalance timeout, which the coordinator
// enforces; the request is bounded by the larger of Options.RequestTimeout
// and the Java client's default rebalance timeout (5 minutes) plus 5 s,
// and ends at Shutdown.
func init() { register(kmsg.SyncGroup.Int16(), 0, 5, handleSyncGroup) }

func handleSyncGroup(_ context.Context, rc *reqCtx, kreq kmsg.Request) (response, error) {
	req := kreq.(*kmsg.SyncGroupRequest)
	resp := kmsg.NewPtrSyncGroupResponse()
	resp.Version = req.Version
	co, err := rc.s.coordinator()
	if err != nil {
		resp.ErrorCode = groupCode(err)
		return kmsgResp{resp}, nil
	}
	ctx, cancel := context.WithTimeout(rc.c.ctx, max(rc.s.opts.RequestTimeout, 5*time.Minute+5*time.Second))
	defer cancel()
	ctx, stop := rc.s.untilStopping(ctx)
	defer stop()
	gr := &group.SyncGroupRequest{
		Group: req.Group, GenerationID: req.Generation, MemberID: req.MemberID,
		InstanceID: strOr(req.InstanceID), ProtocolType: strOr(req.ProtocolType), ProtocolName: strOr(req.Protocol),
	}
	for _, a := range req.GroupAssignment {
		gr.Assignments = append(gr.Assignments, group.SyncGroupAssignment{MemberID: a.MemberID, Assignment: a.MemberAssignment})
	}
	out, err := co.SyncGroup(ctx, gr)
	if err != nil {
		resp.ErrorCode = groupCode(err)
		return kmsgResp{resp}, nil
	}
	resp.ProtocolType, resp.Protocol = nullable(out.ProtocolType), nullable(out.ProtocolName)
	resp.MemberAssignment = out.Assignment
	return kmsgResp{resp}, nil
}

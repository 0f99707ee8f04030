package transport

import (
	"context"
	"time"

	"github.com/foliolog/folio/group"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// JoinGroup v0..v9. The coordinator holds the request until the
// rebalance completes, which may take the member's rebalance timeout
// (Kafka's max.poll.interval.ms, 5 minutes in the Java client): the wait
// is bounded by that plus 5 s rather than by Options.RequestTimeout, and
// ends at Shutdown. From v4 a new member first gets its member id back
// with MEMBER_ID_REQUIRED (KIP-394).
func init() { register(kmsg.JoinGroup.Int16(), 0, 9, handleJoinGroup) }

func handleJoinGroup(_ context.Context, rc *reqCtx, kreq kmsg.Request) (response, error) {
	req := kreq.(*kmsg.JoinGroupRequest)
	resp := kmsg.NewPtrJoinGroupResponse()
	resp.Version = req.Version
	resp.Generation = -1
	co, err := rc.s.coordinator()
	if err != nil {
		resp.ErrorCode = groupCode(err)
		return kmsgResp{resp}, nil
	}
	session := time.Duration(req.SessionTimeoutMillis) * time.Millisecond
	rebalance := time.Duration(req.RebalanceTimeoutMillis) * time.Millisecond
	if req.Version == 0 {
		rebalance = session
	}
	ctx, cancel := context.WithTimeout(rc.c.ctx, max(rebalance, session)+5*time.Second)
	defer cancel()
	ctx, stop := rc.s.untilStopping(ctx)
	defer stop()
	gr := &group.JoinGroupRequest{
		Group: req.Group, SessionTimeout: session, RebalanceTimeout: rebalance,
		MemberID: req.MemberID, InstanceID: strOr(req.InstanceID), ProtocolType: req.ProtocolType,
		RequireKnownMemberID: req.Version >= 4, Reason: strOr(req.Reason),
		ClientID: rc.hdr.clientID, ClientHost: rc.c.clientHost(),
	}
	for _, p := range req.Protocols {
		gr.Protocols = append(gr.Protocols, group.JoinGroupProtocol{Name: p.Name, Metadata: p.Metadata})
	}
	out, err := co.JoinGroup(ctx, gr)
	if out != nil {
		resp.MemberID = out.MemberID
	}
	if err != nil {
		resp.ErrorCode = groupCode(err)
		return kmsgResp{resp}, nil
	}
	resp.Generation = out.GenerationID
	resp.ProtocolType = nullable(out.ProtocolType)
	resp.Protocol = nullable(out.ProtocolName)
	if resp.Protocol == nil && req.Version < 7 {
		empty := ""
		resp.Protocol = &empty
	}
	resp.LeaderID, resp.SkipAssignment = out.LeaderID, out.SkipAssignment
	for _, m := range out.Members {
		rm := kmsg.NewJoinGroupResponseMember()
		rm.MemberID, rm.InstanceID, rm.ProtocolMetadata = m.MemberID, nullable(m.InstanceID), m.Metadata
		resp.Members = append(resp.Members, rm)
	}
	return kmsgResp{resp}, nil
}

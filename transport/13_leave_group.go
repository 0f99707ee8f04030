package transport

import (
	"context"

	"github.com/foliolog/folio/group"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// LeaveGroup v0..v5 (v3+: several members, by member or instance id).
func init() { register(kmsg.LeaveGroup.Int16(), 0, 5, handleLeaveGroup) }

func handleLeaveGroup(ctx context.Context, rc *reqCtx, kreq kmsg.Request) (response, error) {
	req := kreq.(*kmsg.LeaveGroupRequest)
	resp := kmsg.NewPtrLeaveGroupResponse()
	resp.Version = req.Version
	co, err := rc.s.coordinator()
	if err != nil {
		resp.ErrorCode = groupCode(err)
		return kmsgResp{resp}, nil
	}
	gr := &group.LeaveGroupRequest{Group: req.Group}
	if req.Version < 3 {
		gr.Members = []group.LeaveGroupMember{{MemberID: req.MemberID}}
	}
	for _, m := range req.Members {
		gr.Members = append(gr.Members, group.LeaveGroupMember{MemberID: m.MemberID, InstanceID: strOr(m.InstanceID), Reason: strOr(m.Reason)})
	}
	out, err := co.LeaveGroup(ctx, gr)
	if err != nil {
		resp.ErrorCode = groupCode(err)
		return kmsgResp{resp}, nil
	}
	for _, m := range out.Members {
		if req.Version < 3 {
			resp.ErrorCode = groupCode(m.Err)
			break
		}
		rm := kmsg.NewLeaveGroupResponseMember()
		rm.MemberID, rm.InstanceID, rm.ErrorCode = m.MemberID, nullable(m.InstanceID), groupCode(m.Err)
		resp.Members = append(resp.Members, rm)
	}
	return kmsgResp{resp}, nil
}

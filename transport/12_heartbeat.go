package transport

import (
	"context"

	"github.com/foliolog/folio/group"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Heartbeat v0..v4.
func init() { register(kmsg.Heartbeat.Int16(), 0, 4, handleHeartbeat) }

func handleHeartbeat(ctx context.Context, rc *reqCtx, kreq kmsg.Request) (response, error) {
	req := kreq.(*kmsg.HeartbeatRequest)
	resp := kmsg.NewPtrHeartbeatResponse()
	resp.Version = req.Version
	co, err := rc.s.coordinator()
	if err == nil {
		err = co.Heartbeat(ctx, &group.HeartbeatRequest{Group: req.Group, GenerationID: req.Generation, MemberID: req.MemberID, InstanceID: strOr(req.InstanceID)})
	}
	resp.ErrorCode = groupCode(err)
	return kmsgResp{resp}, nil
}

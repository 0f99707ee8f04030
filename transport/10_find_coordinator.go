package transport

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// FindCoordinator v0..v5: this broker coordinates every group. A
// transaction coordinator is refused with
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED (transactions are not served; the
// error is fatal in Kafka's clients, so a transactional producer stops
// with it instead of retrying for ever).
func init() { register(kmsg.FindCoordinator.Int16(), 0, 5, handleFindCoordinator) }

func handleFindCoordinator(_ context.Context, rc *reqCtx, kreq kmsg.Request) (response, error) {
	req := kreq.(*kmsg.FindCoordinatorRequest)
	resp := kmsg.NewPtrFindCoordinatorResponse()
	resp.Version = req.Version
	var code int16
	var msg *string
	if req.CoordinatorType != 0 {
		code = kerr.TransactionalIDAuthorizationFailed.Code
		msg = nullable("transport: transactions are not served")
	}
	host, port := rc.c.adv.host, rc.c.adv.port
	if req.Version < 4 {
		resp.ErrorCode, resp.ErrorMessage = code, msg
		resp.NodeID, resp.Host, resp.Port = rc.s.opts.NodeID, host, port
		if code != 0 {
			resp.NodeID, resp.Host, resp.Port = -1, "", -1
		}
		return kmsgResp{resp}, nil
	}
	for _, key := range req.CoordinatorKeys {
		c := kmsg.NewFindCoordinatorResponseCoordinator()
		c.Key, c.ErrorCode, c.ErrorMessage = key, code, msg
		c.NodeID, c.Host, c.Port = rc.s.opts.NodeID, host, port
		if code != 0 {
			c.NodeID, c.Host, c.Port = -1, "", -1
		}
		resp.Coordinators = append(resp.Coordinators, c)
	}
	return kmsgResp{resp}, nil
}

package transport

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// FindCoordinator v0..v5: this broker coordinates every group, or in a
// cluster (ClusterBackend) the broker CoordinatorID names. A
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
	host, port, node := rc.c.adv.host, rc.c.adv.port, rc.s.opts.NodeID
	if cb, brokers, ok := rc.s.cluster(); ok {
		if b, ok := clusterBroker(brokers, cb.CoordinatorID()); ok {
			host, port, node = b.Host, b.Port, b.ID
		} else if code == 0 {
			code = kerr.CoordinatorNotAvailable.Code
			msg = nullable("transport: the coordinator is not in the address book")
		}
	}
	if req.Version < 4 {
		resp.ErrorCode, resp.ErrorMessage = code, msg
		resp.NodeID, resp.Host, resp.Port = node, host, port
		if code != 0 {
			resp.NodeID, resp.Host, resp.Port = -1, "", -1
		}
		return kmsgResp{resp}, nil
	}
	for _, key := range req.CoordinatorKeys {
		c := kmsg.NewFindCoordinatorResponseCoordinator()
		c.Key, c.ErrorCode, c.ErrorMessage = key, code, msg
		c.NodeID, c.Host, c.Port = node, host, port
		if code != 0 {
			c.NodeID, c.Host, c.Port = -1, "", -1
		}
		resp.Coordinators = append(resp.Coordinators, c)
	}
	return kmsgResp{resp}, nil
}

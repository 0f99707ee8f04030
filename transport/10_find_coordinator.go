package transport

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// FindCoordinator v0..v5: this broker coordinates every group, or in a
// cluster (ClusterBackend) the broker CoordinatorID names for the group:
// the leader of its partition of __consumer_offsets. A transaction
// coordinator is refused with TRANSACTIONAL_ID_AUTHORIZATION_FAILED
// (transactions are not served; the error is fatal in Kafka's clients, so
// a transactional producer stops with it instead of retrying for ever).
func init() { register(kmsg.FindCoordinator.Int16(), 0, 5, handleFindCoordinator) }

func handleFindCoordinator(_ context.Context, rc *reqCtx, kreq kmsg.Request) (response, error) {
	req := kreq.(*kmsg.FindCoordinatorRequest)
	resp := kmsg.NewPtrFindCoordinatorResponse()
	resp.Version = req.Version
	find := func(key string) kmsg.FindCoordinatorResponseCoordinator {
		c := kmsg.NewFindCoordinatorResponseCoordinator()
		c.Key = key
		if req.CoordinatorType != 0 {
			c.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
			c.ErrorMessage = nullable("transport: transactions are not served")
		}
		c.NodeID, c.Host, c.Port = rc.s.opts.NodeID, rc.c.adv.host, rc.c.adv.port
		if cb, brokers, ok := rc.s.cluster(); ok && c.ErrorCode == 0 {
			if b, ok := clusterBroker(brokers, cb.CoordinatorID(key)); ok {
				c.NodeID, c.Host, c.Port = b.ID, b.Host, b.Port
			} else {
				// No leader for the group's offsets partition yet:
				// the client asks again.
				c.ErrorCode = kerr.CoordinatorNotAvailable.Code
				c.ErrorMessage = nullable("transport: the group's offsets partition has no leader yet")
			}
		}
		if c.ErrorCode != 0 {
			c.NodeID, c.Host, c.Port = -1, "", -1
		}
		return c
	}
	if req.Version < 4 {
		c := find(req.CoordinatorKey)
		resp.ErrorCode, resp.ErrorMessage = c.ErrorCode, c.ErrorMessage
		resp.NodeID, resp.Host, resp.Port = c.NodeID, c.Host, c.Port
		return kmsgResp{resp}, nil
	}
	for _, key := range req.CoordinatorKeys {
		resp.Coordinators = append(resp.Coordinators, find(key))
	}
	return kmsgResp{resp}, nil
}

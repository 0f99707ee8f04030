package transport

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// DescribeCluster v0..v1: the cluster id, this broker as the controller
// and the only broker; a broker of a cluster (ClusterBackend) lists every
// broker, with the group coordinator as the controller.
func init() { register(kmsg.DescribeCluster.Int16(), 0, 1, handleDescribeCluster) }

func handleDescribeCluster(_ context.Context, rc *reqCtx, kreq kmsg.Request) (response, error) {
	req := kreq.(*kmsg.DescribeClusterRequest)
	s := rc.s
	resp := kmsg.NewPtrDescribeClusterResponse()
	resp.Version = req.Version
	resp.EndpointType = 1 // brokers
	resp.ClusterID = s.opts.ClusterID
	resp.ControllerID = s.opts.NodeID
	resp.ClusterAuthorizedOperations = -2147483648
	if cb, brokers, ok := s.cluster(); ok {
		resp.ControllerID = cb.ControllerID()
		for _, cbr := range brokers {
			b := kmsg.NewDescribeClusterResponseBroker()
			b.NodeID, b.Host, b.Port = cbr.ID, cbr.Host, cbr.Port
			resp.Brokers = append(resp.Brokers, b)
		}
		return kmsgResp{resp}, nil
	}
	b := kmsg.NewDescribeClusterResponseBroker()
	b.NodeID, b.Host, b.Port = s.opts.NodeID, rc.c.adv.host, rc.c.adv.port
	resp.Brokers = append(resp.Brokers, b)
	return kmsgResp{resp}, nil
}

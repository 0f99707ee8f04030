package transport

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// DescribeGroups v0..v5. A group the coordinator does not know is
// described as Dead with no members, as Kafka does.
func init() { register(kmsg.DescribeGroups.Int16(), 0, 5, handleDescribeGroups) }

func handleDescribeGroups(ctx context.Context, rc *reqCtx, kreq kmsg.Request) (response, error) {
	req := kreq.(*kmsg.DescribeGroupsRequest)
	resp := kmsg.NewPtrDescribeGroupsResponse()
	resp.Version = req.Version
	co, err := rc.s.coordinator()
	if err == nil {
		descs, derr := co.DescribeGroups(ctx, req.Groups)
		if derr == nil {
			for _, d := range descs {
				rg := kmsg.NewDescribeGroupsResponseGroup()
				rg.Group, rg.ErrorCode = d.Group, groupCode(d.Err)
				rg.State, rg.ProtocolType, rg.Protocol = d.State.String(), d.ProtocolType, d.Protocol
				rg.AuthorizedOperations = -2147483648
				for _, m := range d.Members {
					rm := kmsg.NewDescribeGroupsResponseGroupMember()
					rm.MemberID, rm.InstanceID, rm.ClientID, rm.ClientHost = m.MemberID, nullable(m.InstanceID), m.ClientID, m.ClientHost
					rm.ProtocolMetadata, rm.MemberAssignment = m.Metadata, m.Assignment
					rg.Members = append(rg.Members, rm)
				}
				resp.Groups = append(resp.Groups, rg)
			}
			return kmsgResp{resp}, nil
		}
		err = derr
	}
	for _, g := range req.Groups {
		rg := kmsg.NewDescribeGroupsResponseGroup()
		rg.Group, rg.ErrorCode = g, groupCode(err)
		resp.Groups = append(resp.Groups, rg)
	}
	return kmsgResp{resp}, nil
}

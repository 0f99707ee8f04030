package transport

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// DeleteGroups v0..v2: an empty group's offsets and metadata go
// (tombstones in __consumer_offsets); a group with members is
// NON_EMPTY_GROUP.
func init() { register(kmsg.DeleteGroups.Int16(), 0, 2, handleDeleteGroups) }

func handleDeleteGroups(ctx context.Context, rc *reqCtx, kreq kmsg.Request) (response, error) {
	req := kreq.(*kmsg.DeleteGroupsRequest)
	resp := kmsg.NewPtrDeleteGroupsResponse()
	resp.Version = req.Version
	co, err := rc.s.coordinator()
	if err == nil {
		res, derr := co.DeleteGroups(ctx, req.Groups)
		if derr == nil {
			for _, r := range res {
				rg := kmsg.NewDeleteGroupsResponseGroup()
				rg.Group, rg.ErrorCode = r.Group, groupCode(r.Err)
				resp.Groups = append(resp.Groups, rg)
			}
			return kmsgResp{resp}, nil
		}
		err = derr
	}
	for _, g := range req.Groups {
		rg := kmsg.NewDeleteGroupsResponseGroup()
		rg.Group, rg.ErrorCode = g, groupCode(err)
		resp.Groups = append(resp.Groups, rg)
	}
	return kmsgResp{resp}, nil
}

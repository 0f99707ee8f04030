package transport

import (
	"context"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ListGroups v0..v5, with the states filter (v4+) and the types filter
// (v5+: every group is "classic").
func init() { register(kmsg.ListGroups.Int16(), 0, 5, handleListGroups) }

func handleListGroups(ctx context.Context, rc *reqCtx, kreq kmsg.Request) (response, error) {
	req := kreq.(*kmsg.ListGroupsRequest)
	resp := kmsg.NewPtrListGroupsResponse()
	resp.Version = req.Version
	co, err := rc.s.coordinator()
	if err != nil {
		resp.ErrorCode = groupCode(err)
		return kmsgResp{resp}, nil
	}
	groups, err := co.ListGroups(ctx)
	if err != nil {
		resp.ErrorCode = groupCode(err)
		return kmsgResp{resp}, nil
	}
	for _, g := range groups {
		state := g.State.String()
		if len(req.StatesFilter) > 0 && !slices.ContainsFunc(req.StatesFilter, func(s string) bool { return strings.EqualFold(s, state) }) {
			continue
		}
		if len(req.TypesFilter) > 0 && !slices.ContainsFunc(req.TypesFilter, func(s string) bool { return strings.EqualFold(s, "classic") }) {
			continue
		}
		rg := kmsg.NewListGroupsResponseGroup()
		rg.Group, rg.ProtocolType, rg.GroupState, rg.GroupType = g.Group, g.ProtocolType, state, "classic"
		resp.Groups = append(resp.Groups, rg)
	}
	return kmsgResp{resp}, nil
}

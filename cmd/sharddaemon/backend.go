package main

import (
	"github.com/shardmesh/shardmesh/admin/adminpb"
	"github.com/shardmesh/shardmesh/node"
)

// backend answers admin calls from the member's state.
type backend struct{ n *node.Node }

func (b backend) Members() *adminpb.MembersResponse {
	v := b.n.View()
	resp := &adminpb.MembersResponse{Self: string(v.Self), Leader: string(v.Leader), Oldest: string(v.Oldest), Converged: v.Converged}
	unreachable := map[string]bool{}
	for _, u := range v.Unreachable {
		unreachable[string(u)] = true
	}
	for _, m := range v.Members {
		resp.Members = append(resp.Members, &adminpb.MemberInfo{
			Node:        string(m.Node),
			Incarnation: m.Incarnation,
			Addrs:       m.Addrs,
			Roles:       m.Roles,
			AppVersion:  string(m.AppVersion),
			Status:      m.Status.String(),
			UpNumber:    m.UpNumber,
			Reachable:   !unreachable[string(m.Node)],
			Oldest:      m.Node == v.Oldest,
			Leader:      m.Node == v.Leader,
		})
	}
	return resp
}

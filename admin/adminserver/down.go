package adminserver

import (
	"context"

	"github.com/shardmesh/shardmesh/admin/adminpb"
)

// down marks a member Down, as Akka's Cluster.down: the cluster removes it and its shards
// start elsewhere. Refused without force, because the member may well be running: a
// reachable member while this member is on the majority side (use leave for a member that
// should go), and any member while this member is not on the majority side (its view may
// be the stale one).
func (s *Server) down(ctx context.Context, req *adminpb.DownRequest) *adminpb.Response {
	view := s.backend.Members()
	var target *adminpb.MemberInfo
	counted, reachable := 0, 0
	for _, m := range view.GetMembers() {
		if m.Status == "Down" || m.Status == "Removed" {
			if m.Node == req.Node {
				return &adminpb.Response{Result: &adminpb.Response_Down{Down: &adminpb.DownResponse{Node: m.Node, Status: m.Status}}}
			}
			continue
		}
		counted++
		if m.Reachable {
			reachable++
		}
		if m.Node == req.Node {
			target = m
		}
	}
	if target == nil {
		return refuse(adminpb.Code_BAD_REQUEST, "unknown member %s: not a member of the cluster as %s sees it (shardctl members lists them)", req.Node, s.backend.Self())
	}
	majority := 2*reachable > counted
	if !req.Force {
		switch {
		case !majority:
			return refuse(adminpb.Code_REFUSED, "refused: %s reaches only %d of %d members, so it may be on the minority side and %s may be well; ask a member of the majority, or pass --force", s.backend.Self(), reachable, counted, req.Node)
		case target.Reachable:
			return refuse(adminpb.Code_REFUSED, "refused: %s is reachable and on the majority side; downing it stops a healthy member (use shardctl leave for a graceful exit, or pass --force)", req.Node)
		}
	}
	out := &adminpb.DownResponse{Node: target.Node, Status: target.Status, Reachable: target.Reachable}
	if req.Check {
		return &adminpb.Response{Result: &adminpb.Response_Down{Down: out}}
	}
	if err := s.backend.Down(ctx, target.Node); err != nil {
		return refuse(adminpb.Code_FAILED, "down %s: %v", target.Node, err)
	}
	s.log.Warn("member downed by an operator", "member", target.Node, "reachable", target.Reachable, "force", req.Force)
	out.Downed, out.Status = true, "Down"
	return &adminpb.Response{Result: &adminpb.Response_Down{Down: out}}
}

package adminserver

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/shardmesh/shardmesh/admin/adminpb"
)

// stats queries every member's regions at once (Akka's GetClusterShardingStats), each
// within the query timeout, and lists the members that did not answer with the shards the
// coordinators place on them: a smaller number is never passed off as the whole.
func (s *Server) stats(ctx context.Context, req *adminpb.StatsRequest) *adminpb.Response {
	types := req.EntityTypes
	if bad := s.checkTypes(types...); bad != nil {
		return bad
	}
	if len(types) == 0 {
		types = s.backend.Types()
	}
	timeout := s.queryTimeout(req.TimeoutMs)
	targets, resps, errs := s.askLiveMembers(ctx, &adminpb.Request{Call: &adminpb.Request_LocalStats{LocalStats: &adminpb.LocalStatsRequest{EntityTypes: types, WithAllocations: true}}},
		timeout, "regions", func(r *adminpb.Response) bool { return r.GetLocalStats() != nil })
	answers := make([]*adminpb.LocalStatsResponse, len(resps))
	for i, r := range resps {
		answers[i] = r.GetLocalStats()
	}

	out := &adminpb.StatsResponse{Node: s.backend.Self(), EntityTypes: types, TimeoutMs: uint64(timeout.Milliseconds())}
	// The allocations of every coordinator that answered: where the shards of the members
	// that did not answer are.
	homes := map[string]map[string][]string{} // type → node → shards
	for _, a := range answers {
		if a == nil {
			continue
		}
		for _, r := range a.Regions {
			if r.CoordinatorHere && homes[r.EntityType] == nil {
				homes[r.EntityType] = map[string][]string{}
				for _, al := range r.Allocations {
					homes[r.EntityType][al.Node] = append(homes[r.EntityType][al.Node], al.Shard)
				}
			}
			r.Allocations = nil
		}
		out.Members = append(out.Members, a)
	}
	var failed []string
	for i, node := range targets {
		if errs[i] == nil {
			continue
		}
		fm := &adminpb.FailedMember{Node: node, Error: errs[i].Error()}
		for _, t := range types {
			ts := &adminpb.TypeShards{EntityType: t}
			if h, ok := homes[t]; ok {
				ts.Shards = h[node] // in shard order, as the coordinator lists them
			} else {
				ts.Unknown = true
			}
			fm.Shards = append(fm.Shards, ts)
		}
		out.Failed = append(out.Failed, fm)
		failed = append(failed, node)
	}
	resp := &adminpb.Response{Result: &adminpb.Response_Stats{Stats: out}}
	if len(failed) > 0 {
		resp.Code = adminpb.Code_PARTIAL
		resp.Error = fmt.Sprintf("%d of %d members did not answer within %v: %s", len(failed), len(targets), timeout, strings.Join(failed, ", "))
	}
	return resp
}

// checkTypes refuses types this member does not run, naming them and those it runs; nil when
// all are known.
func (s *Server) checkTypes(types ...string) *adminpb.Response {
	known := s.backend.Types()
	for _, t := range types {
		if !slices.Contains(known, t) {
			return refuse(adminpb.Code_BAD_REQUEST, "unknown entity type %q (this member runs %s)", t, orNone(known))
		}
	}
	return nil
}

// liveMembers returns the members that take part in the cluster: not Down or Removed, nor
// Exiting — a member is Exiting once it has handed its shards and replicas off and left, and
// its process stops while the others still list it for a moment (a `stats` right after a
// `shutdown` asked it and came back partial).
func liveMembers(m *adminpb.MembersResponse) []string {
	var out []string
	for _, mi := range m.GetMembers() {
		if mi.Status != "Down" && mi.Status != "Removed" && mi.Status != "Exiting" {
			out = append(out, mi.Node)
		}
	}
	slices.Sort(out)
	return out
}

func orNone(ss []string) string {
	if len(ss) == 0 {
		return "none"
	}
	return strings.Join(ss, ", ")
}

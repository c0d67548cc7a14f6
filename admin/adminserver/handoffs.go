package adminserver

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/shardmesh/shardmesh/admin"
	"github.com/shardmesh/shardmesh/admin/adminpb"
)

// handoffs answers every handoff in progress: the coordinators' view, with what every member
// buffers for each shard and which entities the old home still waits for. Members that do
// not answer are listed (PARTIAL), never silently left out.
func (s *Server) handoffs(ctx context.Context, req *adminpb.HandoffsRequest) *adminpb.Response {
	if bad := s.checkTypes(req.EntityTypes...); bad != nil {
		return bad
	}
	timeout := s.queryTimeout(req.TimeoutMs)
	targets, resps, errs := s.askLiveMembers(ctx, &adminpb.Request{Call: &adminpb.Request_LocalHandoffs{LocalHandoffs: &adminpb.LocalHandoffsRequest{EntityTypes: req.EntityTypes}}},
		timeout, "handoffs", func(r *adminpb.Response) bool { return r.GetLocalHandoffs() != nil })
	answers := make([]*adminpb.LocalHandoffsResponse, len(resps))
	for i, r := range resps {
		answers[i] = r.GetLocalHandoffs()
	}
	out := &adminpb.HandoffsResponse{Node: s.backend.Self()}
	type key struct{ typ, shard string }
	local := map[key][]*adminpb.LocalHandoff{}
	forceAfter := map[string]uint64{}
	for _, a := range answers {
		for _, t := range a.GetTypes() {
			forceAfter[t.EntityType] = t.ForceStopAfterMs
			for _, l := range t.Local {
				k := key{t.EntityType, l.Shard}
				local[k] = append(local[k], l)
			}
		}
	}
	for _, a := range answers {
		for _, t := range a.GetTypes() {
			for _, h := range t.Coordinated {
				info := &adminpb.HandoffInfo{EntityType: t.EntityType, Shard: h.Shard, From: h.From, Epoch: h.Epoch, Cause: h.Cause,
					ElapsedMs: h.ElapsedMs, PhaseElapsedMs: h.PhaseElapsedMs, Coordinator: a.Node, Phase: admin.HandoffBegun}
				if h.Phase == "begun" {
					info.WaitingRegions = h.Waiting
				}
				stoppedAtHome := true
				for _, l := range local[key{t.EntityType, h.Shard}] {
					info.Buffered += l.Buffered
					if l.Hosted {
						stoppedAtHome = len(l.Stragglers) == 0
						info.Stragglers = append(info.Stragglers, l.Stragglers...)
						info.ForceStopInMs = int64(forceAfter[t.EntityType]) - int64(l.StoppingForMs)
					}
				}
				if h.Phase == "stopping" {
					info.Phase = admin.HandoffStopping
					if stoppedAtHome {
						info.Phase = admin.HandoffStopped
					}
				}
				out.Handoffs = append(out.Handoffs, info)
			}
		}
	}
	slices.SortFunc(out.Handoffs, func(a, b *adminpb.HandoffInfo) int {
		if c := strings.Compare(a.EntityType, b.EntityType); c != 0 {
			return c
		}
		return strings.Compare(a.Shard, b.Shard)
	})
	var failed []string
	for i, node := range targets {
		if errs[i] != nil {
			out.Failed = append(out.Failed, &adminpb.FailedMember{Node: node, Error: errs[i].Error()})
			failed = append(failed, node)
		}
	}
	resp := &adminpb.Response{Result: &adminpb.Response_Handoffs{Handoffs: out}}
	if len(failed) > 0 {
		resp.Code = adminpb.Code_PARTIAL
		resp.Error = fmt.Sprintf("%d of %d members did not answer within %v: %s", len(failed), len(targets), timeout, strings.Join(failed, ", "))
	}
	return resp
}

func (s *Server) localHandoffs(ctx context.Context, req *adminpb.LocalHandoffsRequest) *adminpb.Response {
	ctx, cancel := context.WithTimeout(ctx, askTimeout)
	defer cancel()
	lh, err := s.backend.LocalHandoffs(ctx, req.EntityTypes)
	if err != nil {
		return callError(err)
	}
	return &adminpb.Response{Result: &adminpb.Response_LocalHandoffs{LocalHandoffs: lh}}
}

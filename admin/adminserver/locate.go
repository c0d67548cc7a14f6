package adminserver

import (
	"context"
	"fmt"
	"strings"

	"github.com/shardmesh/shardmesh/admin/adminpb"
)

// locate finds an entity: its shard by the type's extractor, the shard's home as the
// coordinator allocated it (or, when the coordinator does not answer, as this member's
// region last heard), and whether the entity runs there. Nothing is allocated or started:
// a shard no message has reached yet has no home.
func (s *Server) locate(ctx context.Context, req *adminpb.LocateRequest) *adminpb.Response {
	shardID, err := s.backend.ShardOf(req.EntityType, req.Entity)
	if err != nil {
		return callError(err)
	}
	out := &adminpb.LocateResponse{EntityType: req.EntityType, Entity: req.Entity, Shard: shardID}
	info := func(node, entity string) (*adminpb.ShardInfoResponse, error) {
		qctx, cancel := context.WithTimeout(ctx, s.cfg.QueryTimeout)
		defer cancel()
		resp, err := s.ask(qctx, node, &adminpb.Request{Call: &adminpb.Request_ShardInfo{ShardInfo: &adminpb.ShardInfoRequest{EntityType: req.EntityType, Shard: shardID, Entity: entity}}})
		switch {
		case err != nil && qctx.Err() != nil:
			return nil, fmt.Errorf("%s did not answer within %v", node, s.cfg.QueryTimeout)
		case err != nil:
			return nil, fmt.Errorf("%s: %w", node, err)
		case resp.GetShardInfo() == nil:
			return nil, fmt.Errorf("%s answered without the shard", node)
		}
		return resp.GetShardInfo(), nil
	}
	here, err := info(s.backend.Self(), req.Entity)
	if err != nil {
		return callError(err)
	}
	out.Coordinator = here.Coordinator
	switch {
	case here.CoordinatorHere:
		out.Allocated, out.Home, out.Epoch, out.Source = here.Allocated, here.Home, here.Epoch, "coordinator"
	case here.Coordinator == "":
		out.Problems = append(out.Problems, "no coordinator is known yet")
	default:
		c, err := info(here.Coordinator, "")
		switch {
		case err != nil:
			out.Problems = append(out.Problems, "coordinator "+err.Error())
		case !c.CoordinatorHere:
			out.Problems = append(out.Problems, "coordinator "+here.Coordinator+" no longer runs the coordinator")
		default:
			out.Allocated, out.Home, out.Epoch, out.Source = c.Allocated, c.Home, c.Epoch, "coordinator"
		}
	}
	if out.Source == "" && here.Cached {
		out.Allocated, out.Home, out.Epoch, out.Source = true, here.CachedHome, here.CachedEpoch, "region cache"
	}
	if out.Allocated {
		at := here
		if out.Home != s.backend.Self() {
			if at, err = info(out.Home, req.Entity); err != nil {
				out.Problems = append(out.Problems, "home "+err.Error())
			}
		}
		if at != nil {
			out.Alive, out.EntityState, out.AliveKnown = at.Alive, at.EntityState, true
		}
	}
	resp := &adminpb.Response{Result: &adminpb.Response_Locate{Locate: out}}
	if len(out.Problems) > 0 {
		resp.Code, resp.Error = adminpb.Code_PARTIAL, "partial answer: "+strings.Join(out.Problems, "; ")
	}
	return resp
}

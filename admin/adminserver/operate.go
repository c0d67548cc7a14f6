package adminserver

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/shardmesh/shardmesh/admin"
	"github.com/shardmesh/shardmesh/admin/adminpb"
	"github.com/shardmesh/shardmesh/datadir"
	"github.com/shardmesh/shardmesh/node"
	"github.com/shardmesh/shardmesh/shard"
)

// Directive kinds of DirectiveRequest, and the shardctl commands that make them.
var directiveNames = map[string][2]string{
	"drain": {"drain", "undrain"},
	"pause": {"rebalance-pause", "rebalance-resume"},
	"pin":   {"shard-pin", "shard-unpin"},
	"stop":  {"types-stop", "types-start"},
}

func directiveCallName(d *adminpb.DirectiveRequest) string {
	names, ok := directiveNames[d.GetKind()]
	if !ok {
		return "directive"
	}
	if d.GetUndo() {
		return names[1]
	}
	return names[0]
}

// directive validates and stores a change of the operator's directives and answers with the
// directives in force afterwards.
func (s *Server) directive(ctx context.Context, req *adminpb.DirectiveRequest) *adminpb.Response {
	if bad := s.checkDirective(req); bad != nil {
		return bad
	}
	ctx, cancel := context.WithTimeout(ctx, askTimeout)
	defer cancel()
	if req.Kind == "pin" && req.Undo {
		if d, err := s.backend.Directives(ctx); err == nil && d.Known && !pinned(d, req.EntityType, req.Shard) {
			return refuse(adminpb.Code_REFUSED, "refused: shard %s of %s is not pinned: nothing to unpin (shardctl rebalance status lists the pins)", req.Shard, req.EntityType)
		}
	}
	if err := s.backend.ChangeDirective(ctx, req); err != nil {
		return callError(err)
	}
	return s.directives(ctx)
}

// checkDirective refuses a directive that names an unknown member, type or shard, or a
// member that cannot take shards.
func (s *Server) checkDirective(req *adminpb.DirectiveRequest) *adminpb.Response {
	if _, ok := directiveNames[req.Kind]; !ok {
		return refuse(adminpb.Code_BAD_REQUEST, "unknown directive %q (drain, pause, pin or stop)", req.Kind)
	}
	if req.Kind == "pin" || req.Kind == "stop" {
		if bad := s.checkTypes(req.EntityType); bad != nil {
			return bad
		}
	}
	if req.Kind == "pin" {
		if err := admin.CheckShardID(req.Shard); err != nil {
			return refuse(adminpb.Code_BAD_REQUEST, "%v", err)
		}
		if err := s.backend.CheckShard(req.EntityType, req.Shard); err != nil {
			return refuse(adminpb.Code_BAD_REQUEST, "%s: %v", req.EntityType, err)
		}
	}
	needsNode := req.Kind == "drain" || (req.Kind == "pin" && !req.Undo)
	if !needsNode {
		return nil
	}
	for _, m := range s.backend.Members().GetMembers() {
		if m.Node != req.Node {
			continue
		}
		if req.Kind == "pin" && m.Status != "Up" {
			return refuse(adminpb.Code_REFUSED, "member %s is %s: a shard can be pinned only to an Up member", req.Node, m.Status)
		}
		if req.Kind == "drain" && !req.Undo && (m.Status == "Down" || m.Status == "Removed") {
			return refuse(adminpb.Code_REFUSED, "member %s is %s: there is nothing to drain", req.Node, m.Status)
		}
		return nil
	}
	if req.Kind == "drain" && req.Undo {
		return nil // undraining a member that is gone cleans its directive up
	}
	return refuse(adminpb.Code_BAD_REQUEST, "unknown member %q (shardctl members lists them)", req.Node)
}

func pinned(d *adminpb.DirectivesResponse, typ, shard string) bool {
	return slices.ContainsFunc(d.Pins, func(p *adminpb.Pin) bool { return p.EntityType == typ && p.Shard == shard })
}

func (s *Server) directives(ctx context.Context) *adminpb.Response {
	d, err := s.backend.Directives(ctx)
	if err != nil {
		return callError(err)
	}
	return &adminpb.Response{Result: &adminpb.Response_Directives{Directives: d}}
}

// plan answers a rebalance dry run: from the type's coordinator (asked on its member when it
// runs elsewhere), with the live entities of each moved shard from its region and the
// remembered ones from the store.
func (s *Server) plan(ctx context.Context, req *adminpb.PlanRequest) *adminpb.Response {
	if bad := s.checkTypes(req.EntityType); bad != nil {
		return bad
	}
	ctx, cancel := context.WithTimeout(ctx, askTimeout)
	defer cancel()
	p, err := s.backend.Plan(ctx, req.EntityType, int(req.IfJoin), req.IfLeave)
	var elsewhere *node.NotCoordinatorError
	switch {
	case errors.As(err, &elsewhere) && elsewhere.Coordinator != "" && string(elsewhere.Coordinator) != s.backend.Self():
		resp, err := s.ask(ctx, string(elsewhere.Coordinator), &adminpb.Request{Call: &adminpb.Request_Plan{Plan: req}})
		if err != nil {
			return callError(fmt.Errorf("ask the coordinator on %s: %w", elsewhere.Coordinator, err))
		}
		return resp
	case err != nil:
		if req.IfLeave != "" && !errors.As(err, &elsewhere) {
			return refuse(adminpb.Code_BAD_REQUEST, "%v", err)
		}
		return callError(err)
	}
	s.countEntities(ctx, p)
	resp := &adminpb.Response{Result: &adminpb.Response_Plan{Plan: p}}
	if len(p.Problems) > 0 {
		resp.Code, resp.Error = adminpb.Code_PARTIAL, "partial answer: entity counts missing"
	}
	return resp
}

// countEntities fills in the live and remembered entities of each planned move.
func (s *Server) countEntities(ctx context.Context, p *adminpb.PlanResponse) {
	if len(p.Moves) == 0 {
		return
	}
	remembered, err := s.backend.RememberedCounts(ctx, p.EntityType)
	if err != nil {
		p.Problems = append(p.Problems, "remembered entities: "+err.Error())
	}
	live := map[string]uint64{}
	from := map[string]bool{}
	for _, m := range p.Moves {
		from[m.From] = true
	}
	nodes := make([]string, 0, len(from))
	for n := range from {
		nodes = append(nodes, n)
	}
	sort.Strings(nodes)
	for _, n := range nodes {
		qctx, cancel := context.WithTimeout(ctx, s.cfg.QueryTimeout)
		resp, err := s.ask(qctx, n, &adminpb.Request{Call: &adminpb.Request_LocalStats{LocalStats: &adminpb.LocalStatsRequest{EntityTypes: []string{p.EntityType}}}})
		cancel()
		if err != nil {
			p.Problems = append(p.Problems, fmt.Sprintf("live entities on %s: %v", n, err))
			continue
		}
		for _, r := range resp.GetLocalStats().GetRegions() {
			for _, sh := range r.Shards {
				live[sh.Shard] = sh.Entities
			}
		}
	}
	for _, m := range p.Moves {
		m.LiveEntities, m.RememberedEntities = live[m.Shard], remembered[m.Shard]
	}
}

// dataRemove removes the stored data of stopped entity types, streaming progress. It is
// refused unless each type is stopped cluster-wide: stopped by directive, and no member that
// answers still hosts a shard of it. Members that do not answer are listed: their replicas
// catch up from the tombstones when they return.
func (s *Server) dataRemove(ctx context.Context, req *adminpb.DataRemoveRequest, emit emitter) error {
	if len(req.EntityTypes) == 0 {
		return emit(refuse(adminpb.Code_BAD_REQUEST, "data remove: name at least one entity type"))
	}
	if (req.Shard != "" || req.Entity != "") && (len(req.EntityTypes) != 1 || req.Shard != "" && req.Entity != "") {
		return emit(refuse(adminpb.Code_BAD_REQUEST, "data remove: --shard or --entity narrows the removal of one entity type: name one type, and a shard or an entity, not both"))
	}
	if bad := s.checkTypes(req.EntityTypes...); bad != nil {
		return emit(bad)
	}
	qctx, cancel := context.WithTimeout(ctx, askTimeout)
	d, err := s.backend.Directives(qctx)
	cancel()
	if err != nil {
		return emit(callError(err))
	}
	for _, typ := range req.EntityTypes {
		if !slices.Contains(d.StoppedTypes, typ) {
			return emit(refuse(adminpb.Code_REFUSED, "entity type %s is in service: stop it first with `shardctl types stop %s` (nothing was removed)", typ, typ))
		}
	}
	running, unreachable := s.hostingMembers(ctx, req.EntityTypes)
	for _, typ := range req.EntityTypes {
		if len(running[typ]) > 0 {
			return emit(refuse(adminpb.Code_REFUSED, "entity type %s still runs shards on %v: wait until its handoffs finish (shardctl stats --type %s; nothing was removed)", typ, running[typ], typ))
		}
	}
	for _, typ := range req.EntityTypes {
		last := time.Time{}
		report := func(found, removed int, done bool) error {
			if !done && time.Since(last) < progressInterval {
				return nil
			}
			last = time.Now()
			return emit(&adminpb.Response{More: true, Result: &adminpb.Response_DataRemove{DataRemove: &adminpb.DataRemoveProgress{
				EntityType: typ, Records: uint64(found), Removed: uint64(removed), Done: done, Unreachable: unreachable,
				Prefixes: prefixes(typ, req.IncludeState, node.DataScope{Shard: shard.ID(req.Shard), Entity: shard.EntityID(req.Entity)})}}})
		}
		var emitErr error
		scope := node.DataScope{Shard: shard.ID(req.Shard), Entity: shard.EntityID(req.Entity)}
		found, removed, err := s.backend.RemoveTypeData(ctx, typ, scope, req.IncludeState, req.DryRun, func(found, removed int) {
			if emitErr == nil {
				emitErr = report(found, removed, false)
			}
		})
		if err != nil {
			return emit(callError(err))
		}
		if emitErr != nil {
			return emitErr
		}
		if err := report(found, removed, true); err != nil {
			return err
		}
	}
	return emit(&adminpb.Response{})
}

// prefixes describes what a removal reads: the type's key prefixes, or its scope below the
// type.
func prefixes(typ string, state bool, scope node.DataScope) []string {
	if scope != (node.DataScope{}) {
		return []string{fmt.Sprintf("%s of %s", scope, typ)}
	}
	ps := datadir.TypeDataPrefixes(typ, state)
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = fmt.Sprintf("%q", p)
	}
	return out
}

// hostingMembers asks every member, at once, which of types it hosts shards of; members
// that do not answer within the query timeout are returned apart.
func (s *Server) hostingMembers(ctx context.Context, types []string) (running map[string][]string, unreachable []string) {
	running = map[string][]string{}
	targets, resps, errs := s.askLiveMembers(ctx, &adminpb.Request{Call: &adminpb.Request_LocalStats{LocalStats: &adminpb.LocalStatsRequest{EntityTypes: types}}},
		s.cfg.QueryTimeout, "regions", func(r *adminpb.Response) bool { return r.GetLocalStats() != nil })
	for i, node := range targets {
		if errs[i] != nil {
			unreachable = append(unreachable, node)
			continue
		}
		for _, r := range resps[i].GetLocalStats().GetRegions() {
			if len(r.Shards) > 0 {
				running[r.EntityType] = append(running[r.EntityType], node)
			}
		}
	}
	return running, unreachable
}

package adminserver

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/shardmesh/shardmesh/admin"
	"github.com/shardmesh/shardmesh/admin/adminpb"
	"github.com/shardmesh/shardmesh/datadir"
	"github.com/shardmesh/shardmesh/node"
	"github.com/shardmesh/shardmesh/shard"
)

// directive validates and stores a change of the operator's directives, as the admin
// signed it (signed: every member checks the signature before it follows the directive),
// and answers with the directives in force afterwards.
func (s *Server) directive(ctx context.Context, req *adminpb.DirectiveRequest, signed []byte) *adminpb.Response {
	if bad := s.checkDirective(req); bad != nil {
		return bad
	}
	ctx, cancel := context.WithTimeout(ctx, askTimeout)
	defer cancel()
	if req.Kind == "pin" && req.Undo {
		// Read now, not this member's last copy: that may not be read yet (a member that
		// just started) or predate a pin stored a moment ago by another member.
		d, err := s.backend.ReadDirectives(ctx)
		if err != nil {
			return refuse(adminpb.Code_FAILED, "nothing changed: whether shard %s of %s is pinned is unknown, as the directives could not be read (%v); "+
				"try again once the cluster metadata answers (shardctl store status names the members that hold it)", req.Shard, req.EntityType, err)
		}
		if !pinned(d, req.EntityType, req.Shard) {
			return refuse(adminpb.Code_REFUSED, "refused: shard %s of %s is not pinned: nothing to unpin (shardctl rebalance status lists the pins)", req.Shard, req.EntityType)
		}
	}
	if err := s.backend.ChangeDirective(ctx, signed); err != nil {
		return callError(err)
	}
	not := s.awaitFollowed(ctx, req)
	resp := s.directives(ctx)
	if d := resp.GetDirectives(); d != nil && len(not) > 0 {
		d.NotFollowing = not
		resp.Code, resp.Error = adminpb.Code_PARTIAL, fmt.Sprintf("stored, but not followed within %v by %s: they take its signer for no admin of theirs (their logs say \"ignored an operator directive\"; shardctl audit), have not read it yet, or a later change superseded it",
			s.followWait, strings.Join(not, ", "))
	}
	return resp
}

// Waiting for the members to follow a directive change: each reads the directives at once
// when a member announces a change, and every 5 s in any case (Server.followWait).
const (
	defaultFollowWait = 6 * time.Second
	followPoll        = 100 * time.Millisecond
)

// awaitFollowed waits, up to s.followWait, until every member that answers follows the change
// req, so that a change has taken effect cluster-wide when the call returns (traffic sent
// right after a types start is served). It returns the members that answered but do not
// follow it; members that do not answer are not waited for.
func (s *Server) awaitFollowed(ctx context.Context, req *adminpb.DirectiveRequest) []string {
	deadline := time.Now().Add(s.followWait)
	ask := &adminpb.Request{Call: &adminpb.Request_Directives{Directives: &adminpb.DirectivesRequest{}}}
	for {
		targets, answers, errs := s.askLiveMembers(ctx, ask, s.cfg.QueryTimeout, "directives",
			func(r *adminpb.Response) bool { return r.GetDirectives() != nil })
		var not []string
		for i, node := range targets {
			if errs[i] == nil && !follows(answers[i].GetDirectives(), req) {
				not = append(not, node)
			}
		}
		if len(not) == 0 || time.Now().After(deadline) {
			return not
		}
		select {
		case <-time.After(followPoll):
		case <-ctx.Done():
			return not
		}
	}
}

// follows reports whether directives d are as change req makes them.
func follows(d *adminpb.DirectivesResponse, req *adminpb.DirectiveRequest) bool {
	set := !req.Undo
	switch req.Kind {
	case "drain":
		return slices.Contains(d.Draining, req.Node) == set
	case "pause":
		return d.RebalancePaused == set
	case "stop":
		return slices.Contains(d.StoppedTypes, req.EntityType) == set
	case "pin":
		pinned := slices.ContainsFunc(d.Pins, func(p *adminpb.Pin) bool {
			return p.EntityType == req.EntityType && p.Shard == req.Shard && (req.Undo || p.Node == req.Node)
		})
		return pinned == set
	}
	return true
}

// checkDirective refuses a directive that names an unknown member, type or shard, or a
// member that cannot take shards.
func (s *Server) checkDirective(req *adminpb.DirectiveRequest) *adminpb.Response {
	if !admin.IsDirectiveKind(req.Kind) {
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

// dataRemove removes the stored data of stopped entity types, streaming progress. signed is
// the request as the admin signed it. It is refused unless every member that answers
// consents: each checks the signature against its own admin set, and that every type is
// out of service there by a directive it follows and runs no shard there
// (dataRemoveCheck). Members that do not answer are listed: their replicas catch up from
// the tombstones when they return.
func (s *Server) dataRemove(ctx context.Context, req *adminpb.DataRemoveRequest, signed []byte, emit emitter) error {
	if len(req.EntityTypes) == 0 {
		return emit(refuse(adminpb.Code_BAD_REQUEST, "data remove: name at least one entity type"))
	}
	if (req.Shard != "" || req.Entity != "") && (len(req.EntityTypes) != 1 || req.Shard != "" && req.Entity != "") {
		return emit(refuse(adminpb.Code_BAD_REQUEST, "data remove: --shard or --entity narrows the removal of one entity type: name one type, and a shard or an entity, not both"))
	}
	if bad := s.checkTypes(req.EntityTypes...); bad != nil {
		return emit(bad)
	}
	check := &adminpb.Request{Call: &adminpb.Request_DataRemoveCheck{DataRemoveCheck: &adminpb.DataRemoveCheckRequest{Signed: signed}}}
	targets, answers, errs := s.askLiveMembers(ctx, check, s.cfg.QueryTimeout, "consent",
		func(r *adminpb.Response) bool { return r.GetDataRemoveCheck() != nil })
	var unreachable []string
	for i, node := range targets {
		switch a := answers[i].GetDataRemoveCheck(); {
		case errs[i] != nil:
			unreachable = append(unreachable, node)
		case !a.Consents:
			return emit(refuse(adminpb.Code_REFUSED, "member %s refuses: %s (nothing was removed)", node, a.Reason))
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

// dataRemoveCheck answers whether this member consents to a data remove: the request must
// be signed by an admin of this member, and every type it names must be out of service here
// by a directive this member follows, with no shard of it here. Changes nothing.
func (s *Server) dataRemoveCheck(ctx context.Context, req *adminpb.DataRemoveCheckRequest) *adminpb.Response {
	out := &adminpb.DataRemoveCheckResponse{Node: s.backend.Self()}
	resp := &adminpb.Response{Result: &adminpb.Response_DataRemoveCheck{DataRemoveCheck: out}}
	refuse := func(format string, args ...any) *adminpb.Response {
		out.Reason = fmt.Sprintf(format, args...)
		s.log.Warn("no consent to a data remove", "reason", out.Reason)
		return resp
	}
	a, err := s.policy.VerifyRequest(time.Now(), req.Signed)
	if err != nil {
		return refuse("%v", err)
	}
	inner, err := admin.DecodeSignedBody(a.Body)
	if err != nil || inner.GetDataRemove() == nil {
		return refuse("the signed request is not a data remove (%v)", err)
	}
	types := inner.GetDataRemove().EntityTypes
	ctx, cancel := context.WithTimeout(ctx, askTimeout)
	defer cancel()
	d, err := s.backend.Directives(ctx)
	if err != nil {
		return refuse("its directives cannot be read: %v", err)
	}
	for _, typ := range types {
		if !slices.Contains(d.StoppedTypes, typ) {
			return refuse("entity type %s is in service here: stop it first with `shardctl types stop %s` (a stop directive signed by an admin of every member)", typ, typ)
		}
	}
	st, err := s.backend.LocalStats(ctx, types, false)
	if err != nil {
		return refuse("its regions cannot be read: %v", err)
	}
	for _, r := range st.Regions {
		if len(r.Shards) > 0 {
			return refuse("entity type %s still runs %d shards here: wait until its handoffs finish (shardctl stats --type %s)", r.EntityType, len(r.Shards), r.EntityType)
		}
	}
	out.Consents = true
	s.log.Info("consents to a data remove", "caller", a.Signer.String(), "types", types)
	return resp
}

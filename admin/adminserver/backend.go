package adminserver

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/shardmesh/shardmesh/admin/adminpb"
	"github.com/shardmesh/shardmesh/coordinator"
	"github.com/shardmesh/shardmesh/engine"
	"github.com/shardmesh/shardmesh/membership"
	"github.com/shardmesh/shardmesh/node"
	"github.com/shardmesh/shardmesh/shard"
	"github.com/shardmesh/shardmesh/wire"
)

// Backend answers admin calls from a running member. Its answers are in the protocol's
// terms, so a test can stand in for a member.
type Backend interface {
	// Self is the member's node id.
	Self() string
	Members() *adminpb.MembersResponse
	Types() []string
	Tell(typ, entity string, payload []byte) error
	Ask(ctx context.Context, typ, entity string, payload []byte) ([]byte, error)
	// RegionState returns the shards of type typ here and their live entities (node.ErrUnknownType).
	RegionState(ctx context.Context, typ string) (*adminpb.RegionStateResponse, error)
	// LocalStats returns this member's status and its regions of types (all when empty;
	// types not registered here are left out).
	LocalStats(ctx context.Context, types []string, withAllocations bool) (*adminpb.LocalStatsResponse, error)
	// ShardOf returns the shard of an entity by its type's extractor (node.ErrUnknownType).
	ShardOf(typ, entity string) (string, error)
	// CheckShard returns an error when shard cannot be a shard of type typ.
	CheckShard(typ, shard string) error
	// ShardInfo returns what this member knows of one shard (and entity, when set).
	ShardInfo(ctx context.Context, typ, shard, entity string) (*adminpb.ShardInfoResponse, error)
	// Ping returns nil once the member's loop took a turn: liveness.
	Ping(ctx context.Context) error
	// Subscribe returns the member's events (membership.Event, wire.ShardingEvent, …) and
	// a function to stop them.
	Subscribe() (<-chan node.Event, func())
	// Shutdown begins a graceful shutdown (hand off every shard, then leave); false when
	// it had begun already.
	Shutdown() bool
	// Down marks a member Down.
	Down(ctx context.Context, node string) error
	// ChangeDirective stores a change of the operator's directives cluster-wide: signed is
	// the request that makes it, as the admin signed it (every member verifies it).
	ChangeDirective(ctx context.Context, signed []byte) error
	// Directives returns the directives in force on this member.
	Directives(ctx context.Context) (*adminpb.DirectivesResponse, error)
	// ReadDirectives reads the directives from the store now (never a copy older than a
	// change stored before the call); it fails when the store does not answer.
	ReadDirectives(ctx context.Context) (*adminpb.DirectivesResponse, error)
	// Plan is the dry run of a rebalance of type typ by its coordinator, which must run
	// here (else a *node.NotCoordinatorError); the moves come without entity counts.
	Plan(ctx context.Context, typ string, join int, leave string) (*adminpb.PlanResponse, error)
	// RememberedCounts counts the remembered entities of each shard of type typ; with an
	// error, the counts it has (those of the members that answered), or nil.
	RememberedCounts(ctx context.Context, typ string) (map[string]uint64, error)
	// RemoveTypeData removes (or with dryRun counts) the stored data of a stopped type.
	RemoveTypeData(ctx context.Context, typ string, scope node.DataScope, state, dryRun bool, progress func(found, removed int)) (found, removed int, err error)
	// LocalHandoffs returns what this member knows of handoffs of types (all when empty).
	LocalHandoffs(ctx context.Context, types []string) (*adminpb.LocalHandoffsResponse, error)
	// History returns placement records, filtered as req says.
	History(ctx context.Context, req *adminpb.HistoryRequest) (*adminpb.HistoryResponse, error)
	// RecordAudit stores an audit record (adminpb.AuditRecord) of a call taken at at.
	RecordAudit(ctx context.Context, at time.Time, record []byte) error
	// AuditRecords returns the stored audit records.
	AuditRecords(ctx context.Context) ([][]byte, error)
	// Warnings are what is unsafe about how the member is set up (shardctl health).
	Warnings() []string
	// Reminders returns the durable reminders of type typ (of entity, when set).
	Reminders(ctx context.Context, typ, entity string) ([]node.Reminder, error)
	// Done is closed when the member has stopped; StopReason then says why ("left",
	// "downed", …; "" while it runs or when it was closed).
	Done() <-chan struct{}
	StopReason() string
	// Store returns the state of the member's replica of the store: its disk, its refill.
	Store() *adminpb.StoreHealth
	// LocalStoreStatus returns the member's part of the replicated store: the units it
	// hosts, summed up per type (types: all when empty), their moves, what it holds.
	LocalStoreStatus(types []string) *adminpb.LocalStoreStatusResponse
}

// NodeBackend answers admin calls from a member's runtime.
func NodeBackend(n *node.Node) Backend { return &nodeBackend{n: n} }

type nodeBackend struct {
	n        *node.Node
	shutdown sync.Once
}

func (b *nodeBackend) Self() string { return string(b.n.ID()) }

func (b *nodeBackend) Members() *adminpb.MembersResponse {
	v := b.n.View()
	resp := &adminpb.MembersResponse{Self: string(v.Self), Leader: string(v.Leader), Oldest: string(v.Oldest), Converged: v.Converged,
		RestartNeed: uint32(v.RestartNeed), RestartJoined: uint32(v.RestartJoined)}
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
			// A Removed member is watched by no failure detector: not "reachable".
			Reachable: m.Status != membership.Removed && !unreachable[string(m.Node)],
			Oldest:    m.Node == v.Oldest,
			Leader:    m.Node == v.Leader,
		})
	}
	return resp
}

func (b *nodeBackend) Types() []string { return b.n.TypeNames() }

func (b *nodeBackend) Tell(typ, entity string, payload []byte) error {
	return b.n.TellEncoded(typ, entity, payload)
}

func (b *nodeBackend) Ask(ctx context.Context, typ, entity string, payload []byte) ([]byte, error) {
	return b.n.AskEncoded(ctx, typ, entity, payload)
}

func (b *nodeBackend) RegionState(ctx context.Context, typ string) (*adminpb.RegionStateResponse, error) {
	state, err := b.n.RegionState(ctx, typ)
	if err != nil {
		return nil, err
	}
	stats, err := b.n.LocalStats(ctx, []string{typ}, false)
	if err != nil {
		return nil, err
	}
	resp := &adminpb.RegionStateResponse{Node: string(b.n.ID()), EntityType: typ}
	for _, r := range stats.Regions {
		resp.Proxy = r.Proxy
	}
	for _, s := range state {
		ss := &adminpb.ShardState{Shard: string(s.Shard), Stopping: s.Stopping, EntityCount: uint64(len(s.Entities))}
		for _, e := range s.Entities {
			ss.Entities = append(ss.Entities, string(e))
		}
		resp.Shards = append(resp.Shards, ss)
	}
	return resp, nil
}

func (b *nodeBackend) LocalStats(ctx context.Context, types []string, withAllocations bool) (*adminpb.LocalStatsResponse, error) {
	st, err := b.n.LocalStats(ctx, types, withAllocations)
	if err != nil {
		return nil, err
	}
	holdings, _ := b.n.StoreHoldings()
	held := typeHoldings(holdings, func(string) bool { return true })
	resp := &adminpb.LocalStatsResponse{Node: string(b.n.ID()), Status: st.Status.String(), Serving: st.Serving, MessagesDelivered: st.Delivered}
	for _, r := range st.Regions {
		rs := &adminpb.RegionStats{EntityType: r.Type, Proxy: r.Proxy, Registered: r.Registered, NoNewShards: r.NoNewShards, Coordinator: string(r.Coordinator),
			CoordinatorHere: r.CoordinatorHere, Buffered: uint64(r.Buffered), Holding: &adminpb.TypeHolding{EntityType: r.Type}}
		for _, h := range held {
			if h.EntityType == r.Type {
				rs.Holding = h
			}
		}
		for _, s := range r.Shards {
			rs.Shards = append(rs.Shards, &adminpb.ShardStats{Shard: string(s.Shard), Entities: uint64(s.Entities), Stopping: s.Stopping})
		}
		for home, shards := range r.Allocations {
			for _, s := range shards {
				rs.Allocations = append(rs.Allocations, &adminpb.Allocation{Shard: string(s), Node: string(home)})
			}
		}
		resp.Regions = append(resp.Regions, rs)
	}
	return resp, nil
}

func (b *nodeBackend) CheckShard(typ, s string) error { return b.n.CheckShard(typ, shard.ID(s)) }

func (b *nodeBackend) ShardOf(typ, entity string) (string, error) {
	s, err := b.n.ShardOf(typ, shard.EntityID(entity))
	return string(s), err
}

func (b *nodeBackend) ShardInfo(ctx context.Context, typ, s, entity string) (*adminpb.ShardInfoResponse, error) {
	info, err := b.n.ShardInfo(ctx, typ, shard.ID(s), shard.EntityID(entity))
	if err != nil {
		return nil, err
	}
	resp := &adminpb.ShardInfoResponse{
		Node: string(b.n.ID()), Coordinator: string(info.Coordinator),
		CoordinatorHere: info.CoordinatorHere, Allocated: info.Allocated, Home: string(info.Home), Epoch: uint64(info.Epoch),
		Cached: info.Cached, CachedHome: string(info.CachedHome), CachedEpoch: uint64(info.CachedEpoch),
		Hosted: info.Hosted, LocalEpoch: uint64(info.LocalEpoch), Stopping: info.Stopping, Alive: info.Alive,
	}
	if info.Alive {
		resp.EntityState = info.EntityState.String()
	}
	return resp, nil
}

func (b *nodeBackend) Ping(ctx context.Context) error { return b.n.Ping(ctx) }

func (b *nodeBackend) Subscribe() (<-chan node.Event, func()) { return b.n.Subscribe() }

func (b *nodeBackend) Shutdown() bool {
	started := false
	b.shutdown.Do(func() {
		started = true
		go func() { _ = b.n.Leave(context.Background()) }() // returns once the member has left
	})
	return started
}

func (b *nodeBackend) Down(ctx context.Context, id string) error {
	return b.n.Down(ctx, membership.NodeID(id))
}

func (b *nodeBackend) Done() <-chan struct{} { return b.n.Done() }

func (b *nodeBackend) StopReason() string {
	if r := b.n.StopReason(); r != nil {
		return r.Reason.String()
	}
	return ""
}

func (b *nodeBackend) ChangeDirective(ctx context.Context, signed []byte) error {
	return b.n.StoreDirective(ctx, signed)
}

func (b *nodeBackend) RecordAudit(ctx context.Context, at time.Time, record []byte) error {
	return b.n.RecordAudit(ctx, at, record)
}

func (b *nodeBackend) AuditRecords(ctx context.Context) ([][]byte, error) {
	return b.n.AuditRecords(ctx)
}

func (b *nodeBackend) Warnings() []string { return b.n.Warnings() }

func (b *nodeBackend) Directives(ctx context.Context) (*adminpb.DirectivesResponse, error) {
	d, known, err := b.n.Directives(ctx)
	if err != nil {
		return nil, err
	}
	return b.directivesResponse(d, known), nil
}

func (b *nodeBackend) ReadDirectives(ctx context.Context) (*adminpb.DirectivesResponse, error) {
	d, err := b.n.ReadDirectives(ctx)
	if err != nil {
		return nil, err
	}
	return b.directivesResponse(d, true), nil
}

func (b *nodeBackend) directivesResponse(d engine.Directives, known bool) *adminpb.DirectivesResponse {
	resp := &adminpb.DirectivesResponse{Node: b.Self(), Known: known, RebalancePaused: d.RebalancePaused}
	for _, id := range slices.Sorted(maps.Keys(d.Draining)) {
		resp.Draining = append(resp.Draining, string(id))
	}
	for _, typ := range slices.Sorted(maps.Keys(d.Pins)) {
		for _, s := range slices.Sorted(maps.Keys(d.Pins[typ])) {
			resp.Pins = append(resp.Pins, &adminpb.Pin{EntityType: typ, Shard: string(s), Node: string(d.Pins[typ][s])})
		}
	}
	resp.StoppedTypes = slices.Sorted(maps.Keys(d.Stopped))
	return resp
}

func (b *nodeBackend) Plan(ctx context.Context, typ string, join int, leave string) (*adminpb.PlanResponse, error) {
	moves, paused, err := b.n.Plan(ctx, typ, coordinator.PlanChange{Join: join, Leave: membership.NodeID(leave)})
	if err != nil {
		return nil, err
	}
	resp := &adminpb.PlanResponse{EntityType: typ, Coordinator: b.Self(), RebalancePaused: paused}
	for _, m := range moves {
		resp.Moves = append(resp.Moves, &adminpb.PlanMove{Shard: string(m.Shard), From: string(m.From), To: string(m.To)})
	}
	return resp, nil
}

func (b *nodeBackend) RememberedCounts(ctx context.Context, typ string) (map[string]uint64, error) {
	counts, err := b.n.RememberedCounts(ctx, typ) // with a *node.PartialError, the counts of those that answered
	if counts == nil {
		return nil, err
	}
	out := make(map[string]uint64, len(counts))
	for s, n := range counts {
		out[string(s)] = uint64(n)
	}
	return out, err
}

func (b *nodeBackend) RemoveTypeData(ctx context.Context, typ string, scope node.DataScope, state, dryRun bool, progress func(found, removed int)) (int, int, error) {
	return b.n.RemoveTypeData(ctx, typ, scope, state, dryRun, progress)
}

func (b *nodeBackend) LocalHandoffs(ctx context.Context, types []string) (*adminpb.LocalHandoffsResponse, error) {
	views, err := b.n.Handoffs(ctx, types)
	if err != nil {
		return nil, err
	}
	resp := &adminpb.LocalHandoffsResponse{Node: b.Self()}
	for _, v := range views {
		th := &adminpb.TypeHandoffs{EntityType: v.Type, CoordinatorHere: v.Coordinated != nil, ForceStopAfterMs: uint64(v.ForceStopAfter.Milliseconds())}
		for _, h := range v.Coordinated {
			ch := &adminpb.CoordinatorHandoff{Shard: string(h.Shard), From: string(h.From), Epoch: uint64(h.Epoch), Phase: h.Phase.String(),
				Cause: string(h.Cause), ElapsedMs: uint64(h.Elapsed.Milliseconds()), PhaseElapsedMs: uint64(h.PhaseElapsed.Milliseconds())}
			for _, w := range h.Waiting {
				ch.Waiting = append(ch.Waiting, string(w))
			}
			th.Coordinated = append(th.Coordinated, ch)
		}
		for _, l := range v.Local {
			lh := &adminpb.LocalHandoff{Shard: string(l.Shard), Buffered: uint64(l.Buffered), Hosted: l.Hosted, StoppingForMs: uint64(l.StoppingFor.Milliseconds())}
			for _, e := range l.Stragglers {
				lh.Stragglers = append(lh.Stragglers, string(e))
			}
			th.Local = append(th.Local, lh)
		}
		resp.Types = append(resp.Types, th)
	}
	return resp, nil
}

func (b *nodeBackend) History(ctx context.Context, req *adminpb.HistoryRequest) (*adminpb.HistoryResponse, error) {
	q := node.HistoryQuery{Types: req.EntityTypes, Shard: shard.ID(req.Shard)}
	if req.SinceUnixMs != 0 {
		q.Since = time.UnixMilli(req.SinceUnixMs)
	}
	recs, err := b.n.History(ctx, q)
	var partial *node.PartialError
	if errors.As(err, &partial) {
		err = nil
	}
	if err != nil {
		return nil, err
	}
	resp := &adminpb.HistoryResponse{}
	if partial != nil {
		resp.Missing = nodeIDs(partial.Missing)
	}
	for _, r := range recs {
		resp.Records = append(resp.Records, &adminpb.PlacementRecord{AtUnixMs: r.At.UnixMilli(), EntityType: r.Type, Shard: string(r.Shard),
			From: string(r.From), To: string(r.To), Epoch: uint64(r.Epoch), Cause: string(r.Cause), HandoffMs: uint64(r.Handoff.Milliseconds()),
			Entities: wire.Count32(r.Entities), Coordinator: string(r.Coordinator)})
	}
	return resp, nil
}

func (b *nodeBackend) Reminders(ctx context.Context, typ, entity string) ([]node.Reminder, error) {
	return b.n.Reminders(ctx, typ, entity)
}

// callError classifies an error of a backend call.
func callError(err error) *adminpb.Response {
	switch {
	case errors.Is(err, node.ErrUnknownType), errors.Is(err, node.ErrUndecodable):
		return refuse(adminpb.Code_BAD_REQUEST, "%v", err)
	case errors.Is(err, context.DeadlineExceeded):
		return refuse(adminpb.Code_FAILED, "no answer in time: %v", err)
	}
	return refuse(adminpb.Code_FAILED, "%v", err)
}

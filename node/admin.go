package node

import (
	"context"
	"slices"
	"time"

	"github.com/shardmesh/shardmesh/coordinator"
	"github.com/shardmesh/shardmesh/membership"
	"github.com/shardmesh/shardmesh/shard"
)

// Read-only queries for the admin protocol. Each runs on the loop goroutine (the machines'
// owner) and changes nothing.

// RegionStats is one entity type's region on this member.
type RegionStats struct {
	Type string
	// Proxy: the region only routes (this member lacks the type's role).
	Proxy bool
	// Registered: the coordinator the region follows acknowledged it.
	Registered bool
	// NoNewShards: the coordinator acknowledged that the region takes no new shards (the
	// store's disk is full).
	NoNewShards bool
	// Coordinator is the member the region takes for the coordinator ("" none yet).
	Coordinator membership.NodeID
	// CoordinatorHere: the type's coordinator runs on this member.
	CoordinatorHere bool
	// Buffered counts the messages waiting for a shard's home.
	Buffered int
	// Shards are the shards hosted here, in shard order.
	Shards []ShardStats
	// Allocations are the coordinator's shard homes, when it runs here and they were asked
	// for: the shards allocated to each member, in shard order.
	Allocations map[membership.NodeID][]shard.ID
}

// ShardStats is one hosted shard.
type ShardStats struct {
	Shard    shard.ID
	Entities int // live entities
	Stopping bool
}

// MemberStats is this member's own state and its regions.
type MemberStats struct {
	Status  membership.Status
	Serving bool // holds the majority lease
	Regions []RegionStats
	// Delivered counts the messages handed to entities here since the member started.
	Delivered uint64
}

// LocalStats returns this member's status and the regions of types (every registered type
// when empty); types not registered here are left out.
func (n *Node) LocalStats(ctx context.Context, types []string, withAllocations bool) (MemberStats, error) {
	return onLoop(ctx, n, func(now time.Time, c *Core) (MemberStats, error) {
		m := c.eng.Membership()
		out := MemberStats{Status: m.Self().Status, Serving: m.Serving(now), Delivered: c.delivered}
		names := types
		if len(names) == 0 {
			names = c.eng.Types()
		}
		for _, typ := range names {
			r := c.eng.Region(typ)
			if r == nil {
				continue
			}
			rs := RegionStats{Type: typ, Proxy: r.Proxy(), Registered: r.Registered(), NoNewShards: r.NoNewShards(), Coordinator: r.Coordinator(), Buffered: r.Buffered()}
			shards := c.eng.Shards(typ)
			for id, stopping := range r.LocalShards() {
				ss := ShardStats{Shard: id, Stopping: stopping}
				if sh := shards[id]; sh != nil {
					ss.Entities = sh.EntityCount()
				}
				rs.Shards = append(rs.Shards, ss)
			}
			slices.SortFunc(rs.Shards, func(a, b ShardStats) int { return compareShardIDs(a.Shard, b.Shard) })
			if co := c.eng.Coordinator(typ); co != nil {
				rs.CoordinatorHere = true
				if withAllocations {
					rs.Allocations = map[membership.NodeID][]shard.ID{}
					for s, home := range co.Allocations() {
						rs.Allocations[home] = append(rs.Allocations[home], s)
					}
					for _, ss := range rs.Allocations {
						slices.SortFunc(ss, compareShardIDs)
					}
				}
			}
			out.Regions = append(out.Regions, rs)
		}
		return out, nil
	})
}

// ShardInfo is what one member knows of one shard.
type ShardInfo struct {
	// Coordinator is the member this member's region takes for the coordinator.
	Coordinator membership.NodeID
	// CoordinatorHere: the type's coordinator runs here; Allocated, Home and Epoch are its
	// allocation of the shard.
	CoordinatorHere bool
	Allocated       bool
	Home            membership.NodeID
	Epoch           coordinator.Epoch
	// Cached: the region knows a home for the shard (CachedHome, CachedEpoch).
	Cached      bool
	CachedHome  membership.NodeID
	CachedEpoch coordinator.Epoch
	// Hosted: the shard runs here, with LocalEpoch; Stopping while it hands off.
	Hosted     bool
	LocalEpoch coordinator.Epoch
	Stopping   bool
	// Alive: the entity asked about lives in the hosted shard, in EntityState.
	Alive       bool
	EntityState shard.EntityState
}

// ShardInfo returns what this member knows of shard s of type typ and, when entity is set,
// whether that entity lives here.
func (n *Node) ShardInfo(ctx context.Context, typ string, s shard.ID, entity shard.EntityID) (ShardInfo, error) {
	return onLoop(ctx, n, func(_ time.Time, c *Core) (ShardInfo, error) {
		r := c.eng.Region(typ)
		if r == nil {
			return ShardInfo{}, unknownType(typ)
		}
		info := ShardInfo{Coordinator: r.Coordinator()}
		if co := c.eng.Coordinator(typ); co != nil {
			info.CoordinatorHere = true
			info.Home, info.Epoch, info.Allocated = co.Allocation(s)
		}
		info.CachedHome, info.CachedEpoch, info.Cached = r.Home(s)
		info.LocalEpoch, info.Stopping, info.Hosted = r.LocalEpoch(s)
		if sh := c.eng.Shards(typ)[s]; sh != nil && entity != "" {
			var known bool
			info.EntityState, known = sh.EntityState(entity)
			info.Alive = known && info.EntityState.Live()
		}
		return info, nil
	})
}

// ShardOf returns the shard of entity id of type typ, by the type's extractor.
func (n *Node) ShardOf(typ string, id shard.EntityID) (shard.ID, error) {
	t, err := n.core.Sender(typ)
	if err != nil {
		return "", err
	}
	return t.spec.Extractor.ShardID(id), nil
}

// CheckShard returns an error when id cannot be a shard of type typ, for extractors that
// know their shard ids (shard.IDChecker); any id passes a custom extractor.
func (n *Node) CheckShard(typ string, id shard.ID) error {
	t := n.core.Registered(typ)
	if t == nil {
		return unknownType(typ)
	}
	if c, ok := t.spec.Extractor.(shard.IDChecker); ok {
		return c.CheckShard(id)
	}
	return nil
}

// Ping waits for one turn of the member's loop: the member is live if it returns nil.
func (n *Node) Ping(ctx context.Context) error {
	_, err := onLoop(ctx, n, func(time.Time, *Core) (struct{}, error) { return struct{}{}, nil })
	return err
}

// onLoop runs fn on the loop goroutine with read access to the core (a Query) and waits for
// its result, ctx, or the member's stop.
func onLoop[T any](ctx context.Context, n *Node, fn func(time.Time, *Core) (T, error)) (T, error) {
	type result struct {
		v   T
		err error
	}
	var zero T
	res := make(chan result, 1)
	if err := n.input(ctx, Query{Fn: func(now time.Time, c *Core) {
		v, err := fn(now, c)
		res <- result{v, err}
	}}); err != nil {
		return zero, err
	}
	select {
	case r := <-res:
		return r.v, r.err
	case <-ctx.Done():
		return zero, ctx.Err()
	case <-n.done:
		return zero, ErrStopped
	}
}

package coordinator

import (
	"fmt"
	"slices"

	"github.com/shardmesh/shardmesh/allocation"
	"github.com/shardmesh/shardmesh/membership"
)

// PlanChange is a membership change `shardctl rebalance plan` previews.
type PlanChange struct {
	// Join adds that many new Up members with a region of the type (and no shards).
	Join int
	// Leave hands off every shard of that member's region, as a graceful shutdown does.
	Leave membership.NodeID
}

// Plan is the dry run of `shardctl rebalance plan`: the moves the coordinator would make now
// or, with a change, right after it. For a leave, the member's shards are allocated one after
// the other in allocation order, each to where the strategy puts it (as their handoffs
// complete); otherwise it is the next rebalance round (allocation.Plan) — while rebalancing
// is paused, the round that would run once it is resumed. Pinned shards are never moved by
// the strategy. Nothing changes.
func (c *Coordinator) Plan(change PlanChange) ([]allocation.Move, error) {
	if !c.active() {
		return nil, fmt.Errorf("the coordinator of %s is not serving yet (recovering)", c.cfg.TypeName)
	}
	v := c.view()
	if change.Join < 0 || change.Join > 1000 {
		return nil, fmt.Errorf("join %d members: must be between 0 and 1000", change.Join)
	}
	if change.Join > 0 {
		var up uint64
		var version membership.Version
		for _, r := range v.Regions {
			up = max(up, r.UpNumber)
			if r.AppVersion.Compare(version) > 0 {
				version = r.AppVersion
			}
		}
		for i := range change.Join {
			v.Regions = append(v.Regions, allocation.Region{Node: membership.NodeID(fmt.Sprintf("new-member-%d", i+1)),
				Status: membership.Up, AppVersion: version, UpNumber: up + uint64(i) + 1})
		}
	}
	if change.Leave != "" {
		return c.planLeave(v, change.Leave)
	}
	moves := allocation.Plan(c.cfg.Strategy, v)
	return slices.DeleteFunc(moves, func(m allocation.Move) bool {
		_, pinned := c.dir.Pins[m.Shard]
		return pinned
	}), nil
}

func (c *Coordinator) planLeave(v allocation.View, node membership.NodeID) ([]allocation.Move, error) {
	r := c.regions[node]
	if r == nil {
		return nil, fmt.Errorf("%s runs no region of %s", node, c.cfg.TypeName)
	}
	v.Regions = slices.DeleteFunc(v.Regions, func(x allocation.Region) bool { return x.Node == node })
	var moves []allocation.Move
	for _, s := range c.inAllocationOrder(r.shards) {
		m := allocation.Move{Shard: s, From: node}
		target := c.cfg.Strategy.Allocate(c.self, s, v)
		if p, ok := c.pinned(s); ok && p.node != node {
			target = p.node
		}
		if i := slices.IndexFunc(v.Regions, func(x allocation.Region) bool { return x.Node == target }); i >= 0 {
			v.Regions[i].Shards = append(v.Regions[i].Shards, s)
			m.To = target
		}
		moves = append(moves, m)
	}
	return moves, nil
}

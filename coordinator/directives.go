package coordinator

import (
	"slices"
	"time"

	"github.com/shardmesh/shardmesh/membership"
	"github.com/shardmesh/shardmesh/shard"
)

// Directives are an operator's standing orders for one entity type, read from the replicated
// store (so they survive a coordinator failover) and given to the coordinator with
// SetDirectives. Until it has been given them once, a coordinator allocates and answers
// nothing: a pin or a stopped type must not be ignored for a moment after a failover.
type Directives struct {
	// Draining members keep their regions but get no shards; theirs are handed off.
	Draining map[membership.NodeID]bool
	// RebalancePaused stops automatic rebalancing (operator moves, drains and shutdowns go on).
	RebalancePaused bool
	// Pins are external allocations (`shardctl shard move|pin`): a pinned shard is allocated
	// to its member when that member can take it, moved there when it lives elsewhere, and
	// never moved away by the strategy. Unpinned shards follow the strategy.
	Pins map[shard.ID]membership.NodeID
	// Stopped takes the type out of service: every shard is handed off and none allocated.
	Stopped bool
}

// SetDirectives gives the coordinator the operator's directives; handoffs they call for start
// now (and on later ticks, as members become able to take shards).
func (c *Coordinator) SetDirectives(now time.Time, d Directives) {
	c.now = now
	if d.Stopped && !c.dir.Stopped {
		// Requests are dropped (senders fail fast on a stopped type); remembered shards are
		// read again when the type starts, since its data may have been removed meanwhile.
		clear(c.waiting)
		c.shardsLoaded = false
	}
	c.dir, c.dirKnown = d, true
	c.progress()
	c.enforce()
}

// Directives returns the directives the coordinator follows, and whether it was given any.
func (c *Coordinator) Directives() (Directives, bool) { return c.dir, c.dirKnown }

// enforce starts the handoffs the directives call for: every shard of a stopped type, the
// shards of draining members, and pinned shards away from their pins when the pin can take
// them. A shard not yet acknowledged by its region is left until it is.
func (c *Coordinator) enforce() {
	if !c.active() || (!c.dir.Stopped && len(c.dir.Draining) == 0 && len(c.dir.Pins) == 0) {
		return
	}
	for _, s := range c.sortedShards() {
		a := c.shards[s]
		if c.handoffs[s] != nil || !a.started {
			continue
		}
		switch {
		case c.dir.Stopped:
			c.startHandoff(s, CauseStopType)
		case c.dir.Draining[a.region]:
			c.startHandoff(s, CauseDrain)
		default:
			if r, ok := c.pinned(s); ok && r.node != a.region {
				c.startHandoff(s, CauseOperator)
			}
		}
	}
}

// pinned returns the region a pin sends shard s to, if it is pinned to a region that can
// take it now.
func (c *Coordinator) pinned(s shard.ID) (*region, bool) {
	pin, ok := c.dir.Pins[s]
	if !ok {
		return nil, false
	}
	r := c.regions[pin]
	if r == nil || !c.candidate(r) {
		return nil, false
	}
	return r, true
}

// unpinned filters a strategy's rebalance picks: pinned shards stay where their pin is.
func (c *Coordinator) unpinned(moves []shard.ID) []shard.ID {
	if len(c.dir.Pins) == 0 {
		return moves
	}
	return slices.DeleteFunc(moves, func(s shard.ID) bool {
		_, ok := c.dir.Pins[s]
		return ok
	})
}

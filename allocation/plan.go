package allocation

import (
	"maps"
	"slices"

	"github.com/shardmesh/shardmesh/membership"
	"github.com/shardmesh/shardmesh/shard"
)

// Move is one shard handed off by a rebalance and where it is allocated next.
type Move struct {
	// Shard is the shard handed off.
	Shard shard.ID
	// From is the region it leaves.
	From membership.NodeID
	// To is the region Allocate picks for it afterwards: possibly From again (the shard is
	// then only restarted), or "" when the strategy names no region of the view (the shard
	// stays without a home until one can take it).
	To membership.NodeID
}

// Plan is the dry run of one rebalance round (`shardctl rebalance plan`): the shards
// s.Rebalance(v) picks, in its order, each with the region s.Allocate then gives it. It
// replays what the coordinator does when the handoffs complete one after the other: the
// shard leaves its region (the others picked are still in progress on theirs), the region
// it left asks for its home again, and the shard joins the end of its new region's list.
// Shards that Rebalance names twice, that are already in progress or that no region holds
// are skipped, as the coordinator skips them. Plan does not modify v; it is deterministic
// when the strategy is.
func Plan(s Strategy, v View) []Move {
	moves, _ := plan(s, v)
	return moves
}

// plan is Plan, also returning the view after the moves (for tests and round-by-round
// simulations).
func plan(s Strategy, v View) ([]Move, View) {
	// One private copy: the strategies must not modify their view (Strategy's contract), and
	// if one does it only spoils this copy.
	w := cloneView(v)
	picked := s.Rebalance(w)
	if len(picked) == 0 {
		return nil, w
	}
	owner := make(map[shard.ID]int, len(picked))
	for _, id := range picked {
		owner[id] = -1
	}
	for i := range w.Regions {
		for _, id := range w.Regions[i].Shards {
			if _, ok := owner[id]; ok {
				owner[id] = i
			}
		}
	}
	inProgress := maps.Clone(w.InProgress)
	if inProgress == nil {
		inProgress = make(map[shard.ID]bool, len(picked))
	}
	var todo []shard.ID
	for _, id := range picked {
		if owner[id] >= 0 && !inProgress[id] {
			inProgress[id] = true
			todo = append(todo, id)
		}
	}
	w.InProgress = inProgress
	moves := make([]Move, 0, len(todo))
	for _, id := range todo {
		from := owner[id]
		r := &w.Regions[from]
		r.Shards = without(r.Shards, id)
		delete(inProgress, id)
		node := s.Allocate(r.Node, id, w)
		m := Move{Shard: id, From: r.Node}
		if to := regionIndex(w.Regions, node); to >= 0 {
			w.Regions[to].Shards = append(w.Regions[to].Shards, id)
			m.To = node
		}
		moves = append(moves, m)
	}
	if len(w.InProgress) == 0 {
		w.InProgress = nil
	}
	return moves, w
}

// without removes id from shards, keeping the order. The shards rebalanced first are
// usually the oldest, at the front, and cost nothing to drop.
func without(shards []shard.ID, id shard.ID) []shard.ID {
	switch i := slices.Index(shards, id); i {
	case -1:
		return shards
	case 0:
		return shards[1:]
	default:
		return slices.Delete(shards, i, i+1)
	}
}

// regionIndex returns the index of node's region in regions, or -1.
func regionIndex(regions []Region, node membership.NodeID) int {
	if node == "" {
		return -1
	}
	for i := range regions {
		if regions[i].Node == node {
			return i
		}
	}
	return -1
}

// cloneView returns a deep copy of v, so that a strategy cannot change the caller's view.
func cloneView(v View) View {
	c := v
	c.Regions = slices.Clone(v.Regions)
	for i := range c.Regions {
		c.Regions[i].Shards = slices.Clone(c.Regions[i].Shards)
		c.Regions[i].Roles = slices.Clone(c.Regions[i].Roles)
	}
	c.InProgress = maps.Clone(v.InProgress)
	return c
}

package node

import (
	"context"
	"slices"
	"time"

	"github.com/shardmesh/shardmesh/shard"
)

// ShardState is one local shard and its live entities.
type ShardState struct {
	Shard    shard.ID
	Entities []shard.EntityID
	Stopping bool
}

// RegionState returns the shards of entity type typ hosted here and their live entities
// (Akka's GetShardRegionState).
func (n *Node) RegionState(ctx context.Context, typ string) ([]ShardState, error) {
	return onLoop(ctx, n, func(_ time.Time, c *Core) ([]ShardState, error) {
		r := c.eng.Region(typ)
		if r == nil {
			return nil, unknownType(typ)
		}
		var out []ShardState
		for id, stopping := range r.LocalShards() {
			st := ShardState{Shard: id, Stopping: stopping}
			if sh := c.eng.Shards(typ)[id]; sh != nil {
				for e, state := range sh.Entities() {
					if state.Live() {
						st.Entities = append(st.Entities, e)
					}
				}
				slices.Sort(st.Entities)
			}
			out = append(out, st)
		}
		slices.SortFunc(out, func(a, b ShardState) int { return compareShardIDs(a.Shard, b.Shard) })
		return out, nil
	})
}

// TypeNames returns the entity types registered on this member, sorted.
func (n *Node) TypeNames() []string { return n.core.TypeNames() }

// compareShardIDs orders numeric shard ids numerically, others as strings.
func compareShardIDs(a, b shard.ID) int {
	if len(a) != len(b) && isDigits(a) && isDigits(b) {
		return len(a) - len(b)
	}
	if a < b {
		return -1
	}
	if a > b {
		return 1
	}
	return 0
}

func isDigits(s shard.ID) bool {
	for i := range len(s) {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return len(s) > 0
}

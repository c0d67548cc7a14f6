package allocation_test

import (
	"fmt"
	"slices"

	"github.com/shardmesh/shardmesh/allocation"
	"github.com/shardmesh/shardmesh/membership"
	"github.com/shardmesh/shardmesh/shard"
)

// pinned is a custom strategy: some shards must live on a chosen member (say, next to a
// Kafka partition or a device gateway) whenever that member hosts the entity type; the
// others are left to another strategy.
type pinned struct {
	pins map[shard.ID]membership.NodeID
	rest allocation.Strategy
}

// Allocate puts a pinned shard on its member if that member has a region, and asks the
// other strategy otherwise.
func (p pinned) Allocate(requester membership.NodeID, s shard.ID, v allocation.View) membership.NodeID {
	if node, ok := p.pins[s]; ok && hasRegion(v, node) {
		return node
	}
	return p.rest.Allocate(requester, s, v)
}

// Rebalance hands off the pinned shards that are away from their member, and whatever the
// other strategy picks among the rest. Like every strategy it is a pure function of the
// view: the same view gives the same answer, and it never picks a shard in progress.
func (p pinned) Rebalance(v allocation.View) []shard.ID {
	var picked []shard.ID
	for _, r := range v.Regions {
		for _, s := range r.Shards {
			if node, ok := p.pins[s]; ok && node != r.Node && hasRegion(v, node) && !v.InProgress[s] {
				picked = append(picked, s)
			}
		}
	}
	for _, s := range p.rest.Rebalance(v) {
		if _, ok := p.pins[s]; !ok {
			picked = append(picked, s)
		}
	}
	return picked
}

func hasRegion(v allocation.View, node membership.NodeID) bool {
	return slices.ContainsFunc(v.Regions, func(r allocation.Region) bool { return r.Node == node })
}

// A custom strategy implements Strategy's two methods. Plan shows what a rebalance round
// would do with it, as `shardctl rebalance plan` does.
func Example_customStrategy() {
	least, err := allocation.NewLeastShard(allocation.LeastShardConfig{RebalanceAbsoluteLimit: 20})
	if err != nil {
		panic(err)
	}
	s := pinned{pins: map[shard.ID]membership.NodeID{"7": "gateway"}, rest: least}

	v := allocation.View{Regions: []allocation.Region{
		{Node: "worker-1", Status: membership.Up, UpNumber: 1, Shards: []shard.ID{"1", "2", "3", "7"}},
		{Node: "worker-2", Status: membership.Up, UpNumber: 2, Shards: []shard.ID{"4", "5"}},
		{Node: "gateway", Status: membership.Up, UpNumber: 3},
	}}
	fmt.Println("shard 7 goes to", s.Allocate("worker-2", "7", v))
	fmt.Println("shard 8 goes to", s.Allocate("worker-2", "8", v))
	for _, m := range allocation.Plan(s, v) {
		fmt.Printf("move shard %s from %s to %s\n", m.Shard, m.From, m.To)
	}
	// Output:
	// shard 7 goes to gateway
	// shard 8 goes to gateway
	// move shard 7 from worker-1 to gateway
	// move shard 1 from worker-1 to gateway
}

package allocation_test

import (
	"fmt"

	"github.com/shardmesh/shardmesh/allocation"
	"github.com/shardmesh/shardmesh/membership"
	"github.com/shardmesh/shardmesh/shard"
)

// The external strategy puts an unpinned shard on the region that asked for it and never
// rebalances; pins (shardctl shard move, System.PinShard) move shards, applied by the
// coordinator before any strategy is asked.
func ExampleExternal() {
	v := allocation.View{Regions: []allocation.Region{
		{Node: "a", Status: membership.Up, UpNumber: 1, Shards: []shard.ID{"1", "2", "3", "4"}},
		{Node: "b", Status: membership.Up, UpNumber: 2},
	}}
	s := allocation.NewExternal()
	fmt.Println("shard 5 asked for by a goes to", s.Allocate("a", "5", v))
	fmt.Println("shard 6 asked for by a proxy goes to", s.Allocate("proxy", "6", v))
	fmt.Println("rebalance moves", allocation.Plan(s, v))
	// Output:
	// shard 5 asked for by a goes to a
	// shard 6 asked for by a proxy goes to b
	// rebalance moves []
}

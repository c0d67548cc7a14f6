package passivation_test

import (
	"fmt"
	"time"

	"github.com/shardmesh/shardmesh/passivation"
	"github.com/shardmesh/shardmesh/shard"
)

// A region with an active-entity limit of 4, least recently used: how its shards call the
// policies per message and when shards come and go.
func Example() {
	settings, err := passivation.Parse(map[string]any{
		"strategy": "small",
		"small": map[string]any{
			"active-entity-limit": 4,
			"replacement":         map[string]any{"policy": "least-recently-used"},
		},
	})
	if err != nil {
		panic(err)
	}
	region, err := passivation.NewRegion(settings, passivation.StringHash[shard.EntityID])
	if err != nil {
		panic(err)
	}
	now := time.Unix(0, 0)

	// Shard "1" becomes active: it may hold all 4.
	one, _ := region.StartShard("1", nil)
	var stop []shard.EntityID // reused for every message: no allocation per message
	for _, id := range []shard.EntityID{"a", "b", "c", "d", "a", "e"} {
		stop = one.Access(id, now, stop[:0])
		if len(stop) > 0 {
			fmt.Println("message to", id, "→ passivate", stop)
		}
	}

	// Shard "2" becomes active: each shard's share is now 2.
	_, passivate := region.StartShard("2", nil)
	for _, p := range passivate {
		fmt.Println("shard", p.Shard, "passivates", p.Entity)
	}
	fmt.Println("shard 1 holds", one.Len(), "of", one.Limit())
	// Output:
	// message to e → passivate [b]
	// shard 1 passivates c
	// shard 1 passivates d
	// shard 1 holds 2 of 2
}

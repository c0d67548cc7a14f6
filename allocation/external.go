package allocation

import (
	"github.com/shardmesh/shardmesh/membership"
	"github.com/shardmesh/shardmesh/shard"
)

// External is Akka's ExternalShardAllocationStrategy: shard locations are decided outside
// the strategy, by an operator (`shardctl shard move|pin|unpin`) or by a program
// (shardmesh.System.PinShard), and stored as pins in the replicated store. The coordinator
// applies the pins itself, before it consults any strategy: a pinned shard is allocated to
// its member whenever that member can take it, and is moved there when it lives elsewhere.
// External decides only for the shards without a pin:
//
//   - Allocate gives an unpinned shard to the region that asked for it (Akka: "unallocated
//     shards go to the requesting member"), so a shard starts where its first message was
//     sent from. When the requester cannot take shards (a proxy, a draining or departing
//     member) it falls back to LeastShard's choice, where Akka would leave the shard
//     unallocated until another region asks.
//   - Rebalance never picks anything: shards stay where they are until a pin moves them.
//
// A shard the coordinator allocates on its own behalf (remembered entities after a member
// was lost, a handed-off shard that nobody asked for in the meantime) counts as requested by
// the coordinator's member. External has no state and is safe for concurrent use.
type External struct{}

// NewExternal returns the external allocation strategy.
func NewExternal() External { return External{} }

// String names the strategy, for logs and `shardctl`.
func (External) String() string { return "External" }

// Allocate returns the requester when it is one of v's regions and is not on its way out of
// the cluster, and LeastShard's most suitable region otherwise.
func (External) Allocate(requester membership.NodeID, s shard.ID, v View) membership.NodeID {
	if i := regionIndex(v.Regions, requester); i >= 0 && !leaving(v.Regions[i].Status) {
		return requester
	}
	return LeastShard{}.Allocate(requester, s, v)
}

// Rebalance returns nothing: only pins move shards.
func (External) Rebalance(View) []shard.ID { return nil }

package allocation

import (
	"github.com/shardmesh/shardmesh/membership"
	"github.com/shardmesh/shardmesh/shard"
)

// Region is what a strategy knows of one shard region: a member hosting the entity type.
type Region struct {
	// Node is the member the region runs on.
	Node membership.NodeID
	// Status is the member's status. Regions on members that are Leaving, Exiting or Down
	// are the last choice for new shards.
	Status membership.Status
	// AppVersion is the member's application version. During a rolling update the newest
	// version is preferred for new shards, and nothing is rebalanced.
	AppVersion membership.Version
	// UpNumber is the member's age: lower is older; 0 (not yet Up) is the youngest. It only
	// breaks ties, then Node.
	UpNumber uint64
	// Roles are the member's roles, sorted (the `roles` setting). The built-in strategies
	// ignore them; a custom strategy may read a zone, a rack or a capability from them.
	Roles []string
	// Shards are the shards allocated to the region, in the order they were allocated
	// (oldest first), including those whose handoff is in progress. The new LeastShard
	// algorithm moves the oldest first, as Akka does.
	Shards []shard.ID
}

// View is the input of a strategy: the coordinator's allocation state and what it knows of
// the cluster at the moment of the call.
type View struct {
	// Regions are the regions that may host shards. The caller leaves out proxies and
	// regions that are shutting down gracefully or terminating (their shards are in
	// progress). Akka's coordinator leaves those out of allocation only and still shows them
	// to rebalance; leaving them out of both gives Allocate and Rebalance the same picture
	// (for consistent hashing, the same ring). The order of the regions does not matter.
	Regions []Region
	// InProgress are the shards whose handoff has started and not yet completed.
	InProgress map[shard.ID]bool
	// MemberJoining reports that some member of the cluster (with a region, a proxy, or of
	// another role) is Joining or WeaklyUp. As in Akka, nothing is rebalanced until it is Up: it will
	// soon want shards of its own.
	MemberJoining bool
	// MemberUnreachable reports that some member of the cluster is unreachable. As in Akka,
	// nothing is rebalanced then: a handoff needs an answer from every region and proxy.
	MemberUnreachable bool
}

// Strategy decides where shards live. Implementations must not keep or modify the View,
// and should be deterministic functions of their arguments: Plan's preview is only as good
// as that. A Strategy may be called from several goroutines (the coordinator and an admin
// request running Plan).
type Strategy interface {
	// Allocate picks the region for shard s, which has no home; requester is the region that
	// asked for it. It returns the Node of one of v.Regions, or "" when there is none to
	// choose from (the coordinator then keeps the request and asks again later).
	Allocate(requester membership.NodeID, s shard.ID, v View) membership.NodeID
	// Rebalance picks the shards to hand off now, each allocated to a region of v and none in
	// v.InProgress. They are re-allocated with Allocate once their handoff completes. An
	// empty result means there is nothing to do this round.
	Rebalance(v View) []shard.ID
}

var (
	_ Strategy = LeastShard{}
	_ Strategy = (*ConsistentHashing)(nil)
	_ Strategy = External{}
)

// leaving reports whether a member with status s is on its way out of the cluster
// (Akka: Leaving, Exiting or Down).
func leaving(s membership.Status) bool { return s >= membership.Leaving }

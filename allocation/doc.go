// Package allocation holds the shard allocation strategies: where a shard without a home
// goes, and which shards to hand off to even out the load. The coordinator calls them; they
// are pure functions of a View (no goroutines, clocks, I/O or randomness), so the same view
// always gives the same answer and every decision is easy to table-test and to preview with
// Plan (`shardctl rebalance plan`).
//
// The strategies follow Akka/Pekko Cluster Sharding:
//
//   - LeastShard is Akka's LeastShardAllocationStrategy with both of its rebalance
//     algorithms: the one of Akka 2.6.10+ (rebalance-absolute-limit > 0: optimal balance in
//     one or two rounds) and the older, default one (rebalance-threshold,
//     max-simultaneous-rebalance). Optionally it follows Shardcake and never moves a shard
//     between regions that differ by one shard.
//   - ConsistentHashing is Akka's ConsistentHashingShardAllocationStrategy: a hash ring of the
//     members, so shards with the same id of different entity types end up on the same
//     member, and a membership change moves only about 1/N of the shards.
//   - External is Akka's ExternalShardAllocationStrategy: shards are placed by pins, set by
//     an operator (`shardctl shard move|pin|unpin`) or a program (shardmesh.System.PinShard)
//     and stored in the replicated store; an unpinned shard goes to the region that asked
//     for it, and nothing is ever rebalanced.
//
// sharding.allocation-strategy selects one of them (least-shard, consistent-hashing or
// external) for every entity type.
//
// # Custom strategies
//
// Anything implementing Strategy can be used instead, for one entity type, by giving it in
// shardmesh.Entity's Strategy field. The coordinator calls Allocate for a shard without a
// home (requester is the region that asked for it) and Rebalance every
// sharding.rebalance-interval; both get a View of the regions that can take shards now,
// with each member's status, app version, age, roles and shards. Return "" from Allocate to
// decide later, and nothing from Rebalance while View.MemberJoining or
// View.MemberUnreachable is set or for a shard in View.InProgress. The coordinator applies
// the operator's directives around any strategy: pinned shards are never given to it and
// never moved by its Rebalance, and draining members are left out of the View. The examples
// of this package (a zone-aware strategy reading zones from the members' roles) and
// examples/custom-allocation (a runnable cluster with a "prefer members with a role"
// strategy) show how.
//
// As in Akka, a rebalance only chooses shards: the coordinator hands them off, and when a
// region asks for a shard's home again it calls Allocate, which may well pick a region other
// than the one Rebalance had in mind. Plan replays that sequence to show the moves in
// advance.
package allocation

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
//
// Anything implementing Strategy can be used instead; see the example.
//
// As in Akka, a rebalance only chooses shards: the coordinator hands them off, and when a
// region asks for a shard's home again it calls Allocate, which may well pick a region other
// than the one Rebalance had in mind. Plan replays that sequence to show the moves in
// advance.
package allocation

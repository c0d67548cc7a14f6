// Package remember is shardmesh's replicated durable store: keyed, versioned records
// persisted in Badger on every member, written to and read from a quorum of members over
// /shardmesh/replica/1, kept in sync by anti-entropy. Coordinator state, remembered
// entities and durable entity state live in it.
//
// # Versions and the merge rule
//
// Every write gets a Version: the writer's fencing epoch, a counter from the writing
// member's Lamport clock (one more than the highest counter it has seen), and the writer's
// peer id. Every replica keeps, per key, the record with the highest version (see newer), so
// replicas that have seen the same writes hold the same record, whatever the order. Equal
// versions (which only a reused counter could produce) fall back to tombstone first, then
// the value. Deletes are tombstones and replicate like records.
//
// # Quorums
//
// With N members (Config.Members, this one included), a write is acknowledged once
// Required(N, WriteMajorityPlus, MajorityMinCap) replicas hold it on disk, and a read
// merges the answers of Required(N, ReadMajorityPlus, MajorityMinCap) replicas:
// min(N, max(N/2+1+plus, minCap)), Akka's calculateMajority. With the reference.conf
// defaults (plus 3 and 5, min-cap 5) every member of a cluster of up to 5 must answer: a
// member that is unreachable but not yet Down blocks writes until it is downed.
//
// # Fencing
//
// A write carries an epoch (the shard allocation epoch of the writing incarnation). A
// replica refuses a write whose epoch is below the key's fence floor or below the epoch of
// the record it holds. GetFenced raises the floor on a read quorum, durably, in the same
// round that reads the key, so an older incarnation's later writes cannot reach a write
// quorum, and every write it had acknowledged is in what GetFenced returns.
//
// # Batching
//
// Concurrent Write calls are group-committed: a round takes every write queued while the
// previous rounds were in flight, sends one frame per replica, and each replica stores the
// batch (with whatever else it has queued) in one Badger WriteBatch with one fsync. Get and
// GetFenced calls batch the same way.
//
// # Anti-entropy
//
// See antientropy.go: bucketed digests exchanged with a random member every
// AntiEntropyInterval, then the differing buckets' records pushed and pulled. A member that
// was down catches up; tombstones are not collected.
package remember

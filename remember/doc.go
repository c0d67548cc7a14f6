// Package remember is shardmesh's replicated durable store: keyed, versioned records
// persisted in Badger on every member, written to and read from a quorum of members over
// /shardmesh/replica/1, kept in sync by read repair and anti-entropy. Coordinator state,
// remembered entities and durable entity state live in it.
//
// # Versions and the merge rule
//
// Every write gets a Version: the writer's fencing epoch, a counter from the writing
// member's Lamport clock (one more than the highest counter it has seen), and the writer's
// peer id. Every replica keeps, per key, the record with the highest version (see newer),
// so replicas that have seen the same writes hold the same record, whatever order they saw
// them in: concurrent writers converge. Equal versions (only a reused counter could produce
// them) fall back to the tombstone, then the value. Deletes are tombstones and replicate
// like records.
//
// # Quorums
//
// With N members (Config.Members, this one included), a write is acknowledged once
// Required(N, WriteMajorityPlus, MajorityMinCap) replicas hold it on disk, and a read
// merges the answers of Required(N, ReadMajorityPlus, MajorityMinCap) replicas:
// min(N, max(N/2+1+plus, minCap)), Akka's calculateMajority. Both are majorities, so every
// read quorum holds every acknowledged write. With the reference.conf defaults (plus 3 and
// 5, min-cap 5) every member of a cluster of up to 5 must answer: a member that is
// unreachable but not yet Down (still in Members) blocks writes and reads until it is
// downed, as in Akka.
//
// Keys under Config.VoterPrefixes take a plain majority of Config.Voters instead, the handful
// of members the membership's majorities are taken of: the split-brain resolver's lease,
// which the side that holds their majority must take while the others are unreachable.
//
// Keys under Config.MajorityPrefixes take plain majorities (still at least MajorityMinCap):
// the member uses them for remembered entities and entity state, as Pekko writes remembered
// entities with WriteMajority(majority-min-cap) and keeps the plus for coordinator state.
// The plus protects a read against members that joined after a write (a majority of the new
// set may miss a majority of the old); without it, a read right after many members joined
// can miss a write that anti-entropy has not spread yet. The min-cap narrows that in small
// clusters.
//
// A write that fails (no quorum, fenced, ctx ended) may still be stored on some replicas,
// and then spreads from there; callers retry or overwrite.
//
// # Fencing
//
// A write carries an epoch (the shard allocation epoch of the writing incarnation). A
// replica refuses a write whose epoch is below the key's fence floor or below the epoch of
// the record it holds. GetFenced raises the floor on a read quorum, durably, in the same
// round that reads the key, so an older incarnation's later writes cannot reach a write
// quorum, and every write it had acknowledged is in what GetFenced returns. Each replica
// applies writes and fences one commit at a time, in order (the disk contract in disk.go),
// which is what makes the two ordered on every replica.
//
// # A machine with its disk and network at the edges
//
// Machine decides everything the store decides — quorums, batching, read repair,
// anti-entropy — as a deterministic state machine; applyOps decides what a replica stores
// (fencing, the merge rule) on whichever disk carries the machine's disk operations out.
// Store drives a Machine from one goroutine, with its disk on Badger (badgerDisk) and its
// peers over libp2p; internal/sim drives one per simulated member on a MemDisk, with
// crashes that lose what was not yet on disk.
//
// # Batching
//
// Concurrent Write calls are group-committed: a round takes every write queued while the
// previous rounds were in flight and sends one frame per replica; each replica's disk
// stores what it has queued (its own rounds and its peers') in one Badger transaction with
// one fsync, and acknowledges each round once. Get and GetFenced calls batch the same way.
//
// # Anti-entropy and tombstones
//
// See machine_sync.go: bucketed digests exchanged with a random member every
// AntiEntropyInterval, then the records of the differing buckets pushed and pulled. A
// member that was down catches up. Tombstones are never collected.
//
// # Offline
//
// OpenLocal opens a stopped member's directory for inspection, removal of internal data
// and backups; it refuses a directory a daemon holds.
package remember

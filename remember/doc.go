// Package remember is shardmesh's replicated durable store: keyed, versioned records
// persisted in Badger, each on the replica set of its unit, written to and read from a
// majority of that set over /shardmesh/replica/1, kept in sync by read repair and
// anti-entropy. Coordinator state, remembered entities, reminders and durable entity state
// live in it.
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
// # Replica sets and quorums
//
// Keys belong to units (Layout): the records of one shard — its remembered entities,
// reminders and entities' durable state — are a unit kept on a replica set of
// ReplicationFactor members (Placement.Target: the shard's host first, then rendezvous
// hashing over its type's role, spread over zones); every other key is the cluster
// metadata, kept on the voters (the membership's bounded set whose majority grants the
// serving lease and which the split-brain resolver keeps; Placement.Meta), through a stored
// configuration changed by joint quorums (metaconfig.go). The split-brain resolver's lease
// is metadata, so the side holding a majority of the voters takes it. Every quorum is a
// majority of its set (of both sets while a set changes: units.go, machine_move.go), so one
// stopped member is a minority of every set it is in.
//
// A read does without a replica that answers that it refills (machine_refill.go) when its
// set may: while every write majority of the set still meets a majority of the others
// (quorum.go's excusable); otherwise it asks it again until its timeout.
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
// Machine decides everything the store decides — placement, quorums, batching, read repair,
// anti-entropy, moves of replica sets, admission of the peers' frames — as a deterministic state machine; applyOps decides what a replica stores
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
// See machine_sync.go: bucketed digests of the metadata exchanged with a random member of
// its set every AntiEntropyInterval, then the records of the differing buckets pushed and
// pulled; a shard unit's host compares the unit's digest with its other replicas
// (machine_unitsync.go), and tombstones are collected once every replica holds them. A
// member that was down catches up.
//
// # Offline
//
// OpenLocal opens a stopped member's directory for inspection, removal of internal data
// and backups; it refuses a directory a daemon holds.
package remember

// Package node runs one shardmesh member.
//
// Core is the member's decisions: the pure state machines (engine: membership,
// coordinators, regions, shards) and what the member decides around them — which store
// requests to make for remembered entities, coordinator terms, the operator's directives
// and the placement history, and what to do with the answers; when it serves; what it
// sends where. It is driven one input at a time (Step, Tick, Flush) from a sealed set of
// inputs (inputs.go), and acts on the world only through its Env.
//
// Node is the real member: it owns the data directory, the libp2p host and the gossip
// topics, the replicated store (remember.Store on Badger) and the entity workers, and
// drives its Core from one loop goroutine. internal/sim drives a Core per simulated member
// on its own network, disks and virtual clock: the same code decides in both.
package node

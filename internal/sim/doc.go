// Package sim is shardmesh's deterministic multi-node simulation of the whole runtime: each
// member is the real node.Core (membership, coordinators, regions, shards, and the member's
// own decisions about its store requests, terms, directives and serving) with the real
// replicated store machine (remember.Machine) on a disk that outlives its processes
// (remember.MemDisk), wired through an in-memory network that can delay, drop, duplicate,
// reorder and partition messages, under a virtual clock and a seeded random source. The
// same seed always gives the same run, so a failing random schedule can be replayed from
// its seed.
//
// Faults: kill -9 (a crash lands the disk apply in progress or not, and loses the rest),
// full-cluster restarts, SIGSTOP pauses, partitions and one-way cuts, message loss,
// duplication and reordering, disk faults (Sim.DiskFailRate), and partitions timed to a
// leader's action (PartitionAtLeaderAction).
//
// Invariants are checked after every delivered message and every tick, not only at the end:
// statuses only move forward, a removed member runs nothing, downing takes a quorum, a
// shard runs on at most one member, at most one live instance of an entity handles
// messages, no member runs more entities than its limit, every message is handled,
// rejected with an error or lost with a cause; with durable counters (Options.Durable), no
// acknowledged write is lost, a stale incarnation's save never reaches a quorum after a
// newer incarnation's fenced load, and each counter ends between its acknowledged and its
// acknowledged-plus-unknown increments (durable.go).
//
// Scenario scripts in testdata/ drive it through datadriven (go test ./internal/sim -rewrite
// regenerates their expected output); the soaks run random schedules and print the seed and
// the fault timeline of any failure.
package sim

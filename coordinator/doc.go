// Package coordinator is the shard coordinator of one entity type as a pure state machine:
// it registers the regions, allocates shards through an allocation strategy, rebalances
// them, and orchestrates every handoff (BeginHandOff to all regions → all acknowledge and
// buffer → HandOff to the owner → ShardStopped → re-allocate → the buffers flush).
//
// One coordinator per entity type runs as a singleton on the oldest Up member with the
// type's role. It keeps no durable state of its own: when it starts, every region registers
// and reports the shards it hosts (with their epochs), and the coordinator answers nothing
// until every reachable member with the role has reported, so it never allocates a shard
// that some region still hosts.
//
// # Epochs
//
// Every allocation carries an epoch: the up-number of the coordinator's member in the high
// 32 bits and a sequence in the low 32. A newer coordinator always runs on a younger member
// (the oldest one left), so its epochs compare higher than every earlier one without any
// stored counter. Every handoff message, acknowledgement and timeout names the epoch it
// answers; stale ones are ignored.
package coordinator

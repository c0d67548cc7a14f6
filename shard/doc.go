// Package shard holds the shard: the group of entities that is allocated, moved and
// handed off as one unit. It defines the identifiers every sharding component shares
// (ID, EntityID), the message extractors that map an entity id to its shard, and the
// pure shard state machine that starts, buffers for and stops entities.
package shard

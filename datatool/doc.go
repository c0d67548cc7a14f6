// Package datatool works on the data directories of stopped members: it inventories their
// stores per entity type, family and shard unit, backs a store up and restores it, moves a
// store of the layout before replica sets to this release's (Upgrade), and removes the
// internal sharding data of named entity types (Akka's RemoveInternalClusterShardingData),
// refusing while a daemon holds a directory or a member of the cluster answers.
//
// It opens stores (Badger, through remember.Local), so it belongs to the binary that owns
// the disk: sharddaemon runs these tools (sharddaemon data …, sharddaemon
// remove-internal-data), and shardctl's commands of the same names hand over to it, so that
// shardctl links no store. What a data directory holds, and how the store's keys are laid
// out, is package datadir's; which keys form a shard's unit on its replica set is
// node.StoreLayout's.
package datatool

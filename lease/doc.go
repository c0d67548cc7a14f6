// Package lease is the per-shard lease of sharding (Akka's use-lease): a final safeguard
// that a shard runs on at most one member even when the cluster cannot tell — two clusters
// formed by mistake from one set of machines, a partition without a downing provider. A
// shard creates no entity until it holds the lease named for it, and stops its entities when
// it loses the lease.
//
// Lease and Provider are the interface an implementation plugs into (shardmesh.WithLease
// for an external one: a lock service the clusters share). StoreProvider is the built-in
// implementation, which needs no other infrastructure: a lease is a record in the cluster's
// replicated store, taken with a fenced majority read and write and renewed before it
// expires.
package lease

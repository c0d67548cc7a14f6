package config

import "strings"

// Pekko's sharding keys (reference.conf, pekko.cluster.sharding) that have no meaning in
// shardmesh, each with the reason; docs/configuration.md lists them. A config that sets one
// is refused with that reason, so an operator porting a Pekko configuration learns what to
// do instead of reading "unknown key". Keys are matched as written or as the prefix of a
// block ("sharding.coordinator-singleton" covers every key under it).
var pekkoOnly = []struct{ key, reason string }{
	{"sharding.guardian-name", "Akka names the actor that supervises the regions; shardmesh has no actor hierarchy (a member's regions live in its core)"},
	{"sharding.use-dispatcher", "Akka's thread pool for the sharding actors; Go schedules goroutines itself (a member has one loop goroutine, and entity workers sized by GOMAXPROCS)"},
	{"sharding.journal-plugin-id", "an Akka Persistence plugin (state-store-mode = persistence); shardmesh keeps coordinator state and remembered entities in its own replicated store (store.*)"},
	{"sharding.snapshot-plugin-id", "an Akka Persistence plugin (state-store-mode = persistence); shardmesh keeps coordinator state and remembered entities in its own replicated store (store.*)"},
	{"sharding.state-store-mode", "shardmesh has one store for coordinator state: the replicated Badger store, with majority quorums as Pekko's ddata mode (sharding.coordinator-state.*)"},
	{"sharding.remember-entities-store", "shardmesh has one store for remembered entities: the replicated Badger store, with majority quorums as Pekko's ddata store"},
	{"sharding.event-sourced-remember-entities-store", "the event-sourced remember-entities store of Akka Persistence; shardmesh writes remembered entities in batches to its replicated store"},
	{"sharding.snapshot-after", "snapshots of the persistence state-store-mode; shardmesh's store needs none"},
	{"sharding.keep-nr-of-batches", "journal batches of the persistence state-store-mode; shardmesh's store needs none"},
	{"sharding.coordinator-singleton", "Akka's cluster-singleton settings; a shardmesh coordinator runs on the oldest Up member with the type's role (sharding.role) and moves with membership, without a singleton manager"},
	{"sharding.coordinator-singleton-role-override", "Akka's cluster-singleton settings; the coordinator always runs on a member with the type's role (sharding.role)"},
	{"sharding.coordinator-failure-backoff", "the pause before Akka restarts a crashed coordinator actor; a shardmesh coordinator is a state machine that does not crash, and a new one starts as soon as the member running it leaves"},
	{"sharding.passivate-idle-entity-after", "deprecated in Pekko; set sharding.passivation.default-idle-strategy.idle-entity.timeout"},
	{"sharding.verbose-debug-logging", "set the log level instead (--log-level debug): sharding's debug logs are then on"},
	{"sharding.fail-on-invalid-entity-state-transition", "a switch of Akka's shard actor; shardmesh's shard machine always treats an invalid transition as a broken invariant (tests and the simulator check it)"},
	{"sharding.healthcheck", "shardmesh's readiness (/readyz, shardctl health) checks every registered entity type's region, not a configured list, and answers within the admin call's timeout"},
	{"sharding.external-shard-allocation-strategy", "external allocation is set with shardctl shard move/pin through the admin protocol, bounded by shardctl's --timeout"},
	{"sharding.distributed-data", "Akka Distributed Data's settings; shardmesh's store is not DData (only majority-min-cap has a meaning here: sharding.distributed-data.majority-min-cap)"},
}

// pekkoReason returns why Pekko key path has no meaning here ("" for any other key).
func pekkoReason(path string) string {
	for _, k := range pekkoOnly {
		if path == k.key || strings.HasPrefix(path, k.key+".") {
			return k.reason
		}
	}
	return ""
}

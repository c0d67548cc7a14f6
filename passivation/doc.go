// Package passivation decides which entities of a shard to stop ("passivate") so that a
// shard region keeps its memory bounded, following Akka/Pekko Cluster Sharding's automatic
// passivation: an idle-entity timeout, an active-entity limit per region divided evenly
// among its active shards, and the replacement policies that choose whom to passivate when
// the limit is reached — least recently used (optionally segmented: S-LRU, S4LRU), most
// recently used, least frequently used (optionally with dynamic aging) — and the composite
// Window-TinyLFU strategy: an admission window with an optional hill-climbing optimizer in
// front of a main area, guarded by a frequency-sketch admission filter.
//
// The package is a pure state machine: no goroutines, no clock, no I/O. Time comes in as a
// value on each call. A shard owns one [Policy] and calls [Policy.Access] for every message
// routed to one of its entities; a region owns a [Region] that divides the active-entity
// limit among its active shards. Settings come from [Parse] (the `passivation` block of a
// YAML/TOML configuration, keys and defaults as in Akka's reference.conf), from
// [DefaultSettings] and [DefaultStrategy], or are built in Go and checked with
// [Settings.Validate].
//
// The trace simulator in the simulator sub-package replays access traces through this very
// code and reproduces the active rates Akka publishes for its own simulator.
package passivation

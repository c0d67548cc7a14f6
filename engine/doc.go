// Package engine composes one member's state machines: membership, and for every entity
// type its region, the region's shards, and — on the oldest Up member with the type's role —
// its coordinator. The engine routes messages between them on the same member and hands
// everything addressed elsewhere, or to entities, to its driver.
//
// Like the machines it holds, the engine is pure: no goroutines, sockets, disks or clocks.
// The real runtime (package node) and the deterministic simulation (internal/sim) drive the
// same engine, so what the simulation proves is what runs.
package engine

package engine

import "time"

// SetStoreFull tells the engine whether this member's store refuses writes for want of disk
// space: its regions then register with their coordinators as taking no new shards
// (coordinator.Register.NoNewShards) until it is cleared. The shards here stay: their
// entities' state lives on a quorum of members, not on this disk alone.
func (e *Engine) SetStoreFull(now time.Time, full bool) {
	e.now = now
	e.storeFull = full
	for _, n := range e.names {
		e.types[n].region.SetNoNewShards(now, full)
	}
	e.settle()
}

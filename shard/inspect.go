package shard

import "time"

// EntityCount returns how many entities live in the shard (running, passivating or
// stopping), without copying them as Entities does.
func (s *Shard[M]) EntityCount() int {
	if !s.cfg.Remember.Enabled {
		return len(s.entities) // every entity has an incarnation
	}
	n := 0
	for _, e := range s.entities {
		if e.state.Live() {
			n++
		}
	}
	return n
}

// EntityState returns the state of one live entity; false when it does not live here.
func (s *Shard[M]) EntityState(id EntityID) (EntityState, bool) {
	e, ok := s.entities[id]
	if !ok {
		return 0, false
	}
	return e.state, true
}

// DrainingSince returns when the handoff began stopping the shard's entities (zero unless
// StateDraining).
func (s *Shard[M]) DrainingSince() time.Time {
	if s.state != StateDraining {
		return time.Time{}
	}
	return s.drainFrom
}

package shard

import (
	"maps"
	"slices"
	"time"
)

// Lease configures the shard's lease (use-lease), a final safeguard against a shard running
// on two members at once (two clusters formed by mistake, a network partition without a
// downing provider): the shard creates no entity until it holds the lease of its name,
// messages wait meanwhile, and a shard that loses its lease stops its entities at once and
// waits for the lease again.
type Lease struct {
	Enabled bool
	// RetryInterval is lease-retry-interval: how long after a failed acquisition the shard
	// tries again. Default 5 s.
	RetryInterval time.Duration
}

// Outputs of a shard that uses a lease.
type (
	// AcquireLease asks the runtime to acquire the shard's lease; answer with LeaseAcquired,
	// and report a lease lost later with LeaseLost.
	AcquireLease struct{}
	// ReleaseLease asks the runtime to release the shard's lease (no answer).
	ReleaseLease struct{}
)

func (AcquireLease) isOutput() {}
func (ReleaseLease) isOutput() {}

// UsesLease reports whether the shard holds its entities under a lease.
func (s *Shard[M]) UsesLease() bool { return s.cfg.Lease.Enabled }

// acquire asks for the lease (the shard is in StateAcquiring).
func (s *Shard[M]) acquire() {
	s.state, s.leaseOut = StateAcquiring, true
	s.emit(AcquireLease{})
}

// LeaseAcquired answers AcquireLease: with the lease the shard goes on (loading its
// remembered entities first, if it remembers them) and delivers what waited; without, it
// asks again after RetryInterval.
func (s *Shard[M]) LeaseAcquired(now time.Time, ok bool) {
	if s.state != StateAcquiring || !s.leaseOut {
		if ok {
			s.emit(ReleaseLease{}) // stopped meanwhile: give it back
		}
		return
	}
	s.leaseOut = false
	if !ok {
		s.leaseAt = now.Add(s.cfg.Lease.RetryInterval)
		return
	}
	s.leased = true
	if s.cfg.Remember.Enabled {
		s.state, s.loadOut = StateLoading, true
		s.emit(LoadEntities{})
		return
	}
	s.state = StateActive
	held := s.held
	s.held = nil
	for _, h := range held {
		s.deliver(now, h.id, h.msg)
	}
}

// LeaseLost reports that the shard no longer holds its lease: every live entity is stopped
// at once (what it had queued waits for the next incarnation), and the shard acquires the
// lease again after RetryInterval once they have stopped. A shard handing off goes on
// stopping, by force.
func (s *Shard[M]) LeaseLost(now time.Time) {
	if !s.leased {
		return
	}
	s.leased = false
	for _, id := range slices.Sorted(maps.Keys(s.entities)) {
		e := s.entities[id]
		if !e.state.Live() {
			for _, msg := range e.held() {
				s.held = append(s.held, heldMsg[M]{id, msg})
			}
			delete(s.entities, id)
			continue
		}
		s.emit(ForceStop{Entity: id})
	}
	if s.state == StateDraining {
		return
	}
	s.recovering, s.recoveringSet, s.later = nil, nil, nil
	s.state, s.leaseOut, s.leaseAt = StateAcquiring, false, now.Add(s.cfg.Lease.RetryInterval)
}

// tickLease asks for the lease again when due (and no incarnation of the last tenure is
// left).
func (s *Shard[M]) tickLease(now time.Time) {
	if s.state == StateAcquiring && !s.leaseOut && !now.Before(s.leaseAt) && len(s.entities) == 0 {
		s.acquire()
	}
}

// releaseLease gives the lease back once the shard has stopped.
func (s *Shard[M]) releaseLease() {
	if s.leased {
		s.leased = false
		s.emit(ReleaseLease{})
	}
}

package shard

import (
	"slices"
	"time"
)

// Remember configures remembered entities (Akka's remember-entities = on). The shard then
// keeps the set of its entities in a durable store through the runtime: an entity's first
// message waits until the entity is stored (RememberEntity → Remembered), a passivated entity
// is removed from the set (ForgetEntity), and a shard that starts (after a rebalance, a crash
// or a full-cluster restart) first loads the set (LoadEntities → Loaded) and starts every
// entity in it, holding messages meanwhile. An entity that stops by itself, without
// passivating, is started again after RestartBackoff or on its next message, whichever comes
// first. Automatic passivation does not apply (the seeds disable it for such types).
type Remember struct {
	Enabled bool
	// RestartBackoff is entity-restart-backoff. Default 10 s.
	RestartBackoff time.Duration
	// FailureBackoff is shard-failure-backoff: how long after a failed store read or write
	// the shard tries again. Default 10 s. Akka stops the shard and may lose the messages
	// sent meanwhile; here they wait in the shard (bounded by the sender's credits).
	FailureBackoff time.Duration
	// RecoveryFrequency and RecoveryBatch are entity-recovery-strategy = constant
	// (frequency, number-of-entities): that many remembered entities start per frequency.
	// A zero RecoveryFrequency is the strategy "all": every entity starts at once.
	RecoveryFrequency time.Duration
	RecoveryBatch     int
	// Adaptive is entity-recovery-strategy = adaptive: remembered entities start when the
	// runtime grants them (Recover), from a budget shared by the member's shards (see
	// RecoveryBudget). It takes precedence over RecoveryFrequency.
	Adaptive Adaptive
}

func (r Remember) withDefaults() Remember {
	if r.RestartBackoff <= 0 {
		r.RestartBackoff = 10 * time.Second
	}
	if r.FailureBackoff <= 0 {
		r.FailureBackoff = 10 * time.Second
	}
	if r.RecoveryFrequency > 0 && r.RecoveryBatch <= 0 {
		r.RecoveryBatch = 5
	}
	if r.Adaptive.Enabled {
		r.Adaptive = r.Adaptive.withDefaults()
	}
	return r
}

// Outputs of a shard that remembers entities; the runtime answers the first two.
type (
	// LoadEntities asks for the stored set of the shard's entities; answer with Loaded.
	LoadEntities struct{}
	// RememberEntity asks to store that the entity runs; answer with Remembered. The
	// runtime batches these (one store write for many). NewShard: nothing of this shard is
	// stored yet, so the shard itself must be stored too (for the coordinator to find it
	// after a full-cluster restart).
	RememberEntity struct {
		Entity   EntityID
		NewShard bool
	}
	// ForgetEntity asks to remove a passivated entity from the stored set (no answer).
	ForgetEntity struct{ Entity EntityID }
)

func (LoadEntities) isOutput()   {}
func (RememberEntity) isOutput() {}
func (ForgetEntity) isOutput()   {}

// heldMsg is a message that arrived while the shard was loading its remembered entities.
type heldMsg[M any] struct {
	id  EntityID
	msg M
}

// Loaded answers LoadEntities with the stored set, or the error that kept it from being read
// (the shard asks again after FailureBackoff). The entities start (all at once, or at the
// constant recovery rate), then the messages held meanwhile are delivered.
func (s *Shard[M]) Loaded(now time.Time, ids []EntityID, err error) {
	if s.state != StateLoading || !s.loadOut {
		return // stopped meanwhile, or a stale answer
	}
	s.loadOut = false
	if err != nil {
		s.loadAt = now.Add(s.cfg.Remember.FailureBackoff)
		return
	}
	s.state = StateActive
	s.stored = len(ids) > 0
	ids = slices.Clone(ids)
	slices.Sort(ids)
	if s.cfg.Remember.RecoveryFrequency > 0 || s.cfg.Remember.Adaptive.Enabled {
		s.recovering = ids
		s.recoveringSet = make(map[EntityID]bool, len(ids))
		for _, id := range ids {
			s.recoveringSet[id] = true
		}
		s.recoverAt = now
		s.recoverBatch(now)
	} else {
		for _, id := range ids {
			s.startRemembered(id)
		}
	}
	held := s.held
	s.held = nil
	for _, h := range held {
		s.deliver(now, h.id, h.msg)
	}
}

// Remembered answers RememberEntity for ids: stored (they start, and get the messages that
// waited), or not (the shard writes again after FailureBackoff; the messages keep waiting).
func (s *Shard[M]) Remembered(now time.Time, ids []EntityID, err error) {
	for _, id := range ids {
		e := s.entities[id]
		if e == nil || e.state != Remembering || !e.requested {
			continue // handed off meanwhile, or a duplicate answer
		}
		e.requested = false
		if err != nil {
			e.retryAt = now.Add(s.cfg.Remember.FailureBackoff).UnixNano()
			s.later = append(s.later, id)
			continue
		}
		e.state, s.stored = Running, true
		s.emit(StartEntity{Entity: id, Slot: &e.slot})
		for _, msg := range e.takeHeld() {
			s.emit(DeliverToEntity[M]{Entity: id, Msg: msg, Slot: &e.slot})
		}
	}
}

// remember holds the first message of an entity until the entity is stored.
func (s *Shard[M]) remember(id EntityID, msg M) {
	e := &entity[M]{state: Remembering, requested: true}
	e.hold(msg)
	s.entities[id] = e
	s.emit(RememberEntity{Entity: id, NewShard: !s.stored})
}

// startRemembered starts a stored entity without a message.
func (s *Shard[M]) startRemembered(id EntityID) {
	if s.entities[id] != nil {
		return // a message started it already
	}
	e := &entity[M]{state: Running}
	s.entities[id] = e
	s.emit(StartEntity{Entity: id, Slot: &e.slot})
}

// rememberedStop handles the end of an incarnation of a remembered entity in an active
// shard, and reports whether it did: a passivated entity leaves the stored set unless
// messages wait for it (then its next incarnation starts at once, still remembered); one
// that stopped by itself restarts after RestartBackoff, or at once when messages wait.
func (s *Shard[M]) rememberedStop(now time.Time, id EntityID, e *entity[M], unhandled []M) bool {
	if e.state != Passivating && e.state != Running {
		return false
	}
	pending := slices.Concat(unhandled, e.takeHeld())
	switch {
	case len(pending) > 0:
		e.state, e.slot = Running, Slot{}
		s.emit(StartEntity{Entity: id, Slot: &e.slot})
		for _, msg := range pending {
			s.emit(DeliverToEntity[M]{Entity: id, Msg: msg, Slot: &e.slot})
		}
	case e.state == Passivating:
		delete(s.entities, id)
		s.emit(ForgetEntity{Entity: id})
	default:
		e.state, e.retryAt = Restarting, now.Add(s.cfg.Remember.RestartBackoff).UnixNano()
		s.later = append(s.later, id)
	}
	return true
}

// tickRemember retries the store when due, restarts entities whose backoff ran out and
// starts the next batch of a constant-rate recovery.
func (s *Shard[M]) tickRemember(now time.Time) {
	if s.state == StateLoading && !s.loadOut && !now.Before(s.loadAt) {
		s.loadOut = true
		s.emit(LoadEntities{})
	}
	if s.state != StateActive {
		return
	}
	keep := s.later[:0]
	for _, id := range s.later {
		e := s.entities[id]
		switch {
		case e == nil || (e.state != Remembering && e.state != Restarting) || (e.state == Remembering && e.requested):
			// settled meanwhile
		case now.UnixNano() < e.retryAt:
			keep = append(keep, id)
		case e.state == Remembering:
			e.requested = true
			s.emit(RememberEntity{Entity: id, NewShard: !s.stored})
		default:
			e.state, e.slot = Running, Slot{}
			s.emit(StartEntity{Entity: id, Slot: &e.slot})
		}
	}
	clear(s.later[len(keep):])
	s.later = keep
	s.recoverBatch(now)
}

// recoverBatch starts the next RecoveryBatch remembered entities when due (constant rate).
func (s *Shard[M]) recoverBatch(now time.Time) {
	if len(s.recovering) == 0 || now.Before(s.recoverAt) || s.cfg.Remember.Adaptive.Enabled {
		return
	}
	n := min(s.cfg.Remember.RecoveryBatch, len(s.recovering))
	for _, id := range s.recovering[:n] {
		if s.recoveringSet[id] {
			delete(s.recoveringSet, id)
			s.startRemembered(id)
		}
	}
	s.recovering = s.recovering[n:]
	// On the frequency's cadence, not from now: a tick that comes a little late (the
	// runtime's loop was busy) must not push every later batch back by a whole tick.
	freq := s.cfg.Remember.RecoveryFrequency
	s.recoverAt = s.recoverAt.Add(freq)
	if !s.recoverAt.After(now.Add(-freq)) {
		s.recoverAt = now.Add(freq) // far behind (a long pause): no burst to catch up
	}
}

// RecoveryPending returns how many remembered entities wait to be started by Recover (the
// adaptive strategy): an upper bound, since a message may have started some meanwhile.
func (s *Shard[M]) RecoveryPending() int {
	if !s.cfg.Remember.Adaptive.Enabled || s.state != StateActive {
		return 0
	}
	return len(s.recovering)
}

// Recover starts up to n of the remembered entities still waiting (the adaptive strategy:
// n is what the member's RecoveryBudget granted) and returns how many it started; entities
// a message started meanwhile cost nothing.
func (s *Shard[M]) Recover(n int) int {
	if !s.cfg.Remember.Adaptive.Enabled || s.state != StateActive {
		return 0
	}
	started, i := 0, 0
	for ; i < len(s.recovering) && started < n; i++ {
		id := s.recovering[i]
		if s.recoveringSet[id] {
			delete(s.recoveringSet, id)
			s.startRemembered(id)
			started++
		}
	}
	s.recovering = s.recovering[i:]
	if len(s.recovering) == 0 {
		s.recovering, s.recoveringSet = nil, nil
	}
	return started
}

// bounceHeld gives back what waited for the stored set (the shard hands off while loading).
func (s *Shard[M]) bounceHeld() {
	if len(s.held) == 0 {
		return
	}
	msgs := make([]M, len(s.held))
	for i, h := range s.held {
		msgs[i] = h.msg
	}
	s.held = nil
	s.emit(Bounce[M]{Msgs: msgs})
}

// Remembers reports whether the shard remembers its entities.
func (s *Shard[M]) Remembers() bool { return s.cfg.Remember.Enabled }

package shard

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"time"
)

// Config configures a shard.
type Config struct {
	// HandoffTimeout is the handoff-timeout of the entity type; entities that have not
	// stopped max(HandoffTimeout-5s, 1s) after a handoff began are stopped by force, as Akka
	// does. Default 60 s.
	HandoffTimeout time.Duration
	// Remember turns on remembered entities (remember-entities): see Remember.
	Remember Remember
	// Lease makes the shard hold a lease before it creates entities (use-lease): see Lease.
	Lease Lease
}

// ForceStopAfter returns how long a handoff waits for entities to stop before forcing them.
func (c Config) ForceStopAfter() time.Duration {
	t := c.HandoffTimeout
	if t == 0 {
		t = 60 * time.Second
	}
	return max(t-5*time.Second, time.Second)
}

// EntityState is the lifecycle state of an entity in its shard.
type EntityState uint8

// Entity states.
const (
	Running     EntityState = iota // handling messages
	Passivating                    // asked to stop (passivation); new messages wait in the shard
	Stopping                       // stopping for a handoff
	Remembering                    // being stored as remembered; messages wait until it is
	Restarting                     // remembered, stopped by itself; restarts after entity-restart-backoff
)

// Live reports whether an incarnation of the entity exists (running, passivating or
// stopping); a remembered entity being stored or waiting to restart has none.
func (s EntityState) Live() bool { return s <= Stopping }

func (s EntityState) String() string {
	return [...]string{"running", "passivating", "stopping", "remembering", "restarting"}[s]
}

// State is the state of the shard.
type State uint8

// Shard states.
const (
	StateActive    State = iota // delivering
	StateDraining               // handing off: stopping every entity
	StateStopped                // every entity stopped
	StateLoading                // remembering entities: waiting for the stored set; messages wait
	StateAcquiring              // waiting for the shard's lease (use-lease); messages wait
)

// Output is something the shard wants done. The set is sealed.
type Output[M any] interface{ isOutput() }

// Outputs of a shard; M is the runtime's message type.
type (
	// StartEntity creates a new incarnation of an entity (before its first delivery); the
	// runtime may keep its own data for the incarnation in Slot.
	StartEntity struct {
		Entity EntityID
		Slot   *Slot
	}
	// DeliverToEntity enqueues a message in the entity's mailbox.
	DeliverToEntity[M any] struct {
		Entity EntityID
		Msg    M
		Slot   *Slot
	}
	// StopEntity sends the entity its stop message, after what is already queued; the
	// runtime reports EntityStopped when it has stopped.
	StopEntity struct{ Entity EntityID }
	// ForceStop stops an entity at once (handoff timeout); what it had queued comes back in
	// EntityStopped.
	ForceStop struct{ Entity EntityID }
	// Bounce returns messages the shard cannot deliver because it is handing off; the
	// region routes them to the shard's next home.
	Bounce[M any] struct{ Msgs []M }
	// Stopped reports that every entity stopped after Stop; Entities is how many incarnations
	// the handoff stopped.
	Stopped struct{ Entities int }
)

func (StartEntity) isOutput()        {}
func (DeliverToEntity[M]) isOutput() {}
func (StopEntity) isOutput()         {}
func (ForceStop) isOutput()          {}
func (Bounce[M]) isOutput()          {}
func (Stopped) isOutput()            {}

// entity is a shard's record of one entity: kept small (48 bytes), since a member may hold
// millions of idle ones.
type entity[M any] struct {
	state     EntityState
	requested bool  // Remembering: a write is out
	reported  int64 // when passivation last heard of a message for it (unix nanoseconds)
	retryAt   int64 // Remembering after a failed write, Restarting: when to try again (unix nanoseconds)
	waiting   *[]M  // messages that arrived while it could not take them: for the next incarnation
	slot      Slot
}

// hold keeps msg for the entity's next incarnation.
func (e *entity[M]) hold(msg M) {
	if e.waiting == nil {
		e.waiting = new([]M)
	}
	*e.waiting = append(*e.waiting, msg)
}

// held returns the messages kept for the next incarnation.
func (e *entity[M]) held() []M {
	if e.waiting == nil {
		return nil
	}
	return *e.waiting
}

// takeHeld returns the messages kept for the next incarnation and forgets them.
func (e *entity[M]) takeHeld() []M {
	w := e.held()
	e.waiting = nil
	return w
}

// Slot holds the runtime's own data for one entity incarnation (its mailbox, say). The shard
// keeps it with the incarnation and never reads it; handing it out with every delivery
// spares the runtime a lookup of its own per message.
type Slot struct{ Runtime any }

// Passivator decides which entities to passivate automatically: an idle timeout, an
// active-entity limit with a replacement policy, or both. Package passivation implements it
// (*passivation.Policy[shard.EntityID]); the shard calls it only for messages routed through
// sharding, so nothing an entity sends itself counts as activity.
type Passivator interface {
	// Access records a message for entity id at now and appends to out the entities to
	// passivate (possibly id itself).
	Access(id EntityID, now time.Time, out []EntityID) []EntityID
	// Remove forgets an entity that stopped.
	Remove(id EntityID)
	// Sweep appends the entities idle for too long at now.
	Sweep(now time.Time, out []EntityID) []EntityID
	// Interval is how often Sweep is due; 0 when there is no idle timeout.
	Interval() time.Duration
	// Resolution is how soon after a reported access another access to the same entity may
	// go unreported; 0 when every access counts.
	Resolution() time.Duration
}

// Shard is the lifecycle state machine of one shard's entities. It is not safe for
// concurrent use: the runtime serialises calls (one lock per shard).
type Shard[M any] struct {
	cfg       Config
	id        ID
	state     State
	entities  map[EntityID]*entity[M]
	drainFrom time.Time
	forced    bool
	drained   int // incarnations the handoff stops

	// The lease (see lease.go).
	leased   bool      // the shard holds its lease
	leaseOut bool      // an AcquireLease is out
	leaseAt  time.Time // StateAcquiring: when to ask again
	out      []Output[M]

	passivator Passivator
	resolution time.Duration // the passivator's Resolution, or the idle timeout's
	victims    []EntityID    // scratch for the passivator's answers
	lastSweep  time.Time
	// Idle passivation alone (SetIdleTimeout): the shard sweeps its own records, whose
	// last reported message is all the strategy needs, instead of a Passivator's.
	idle, idleEvery time.Duration

	// Remembered entities (see remember.go).
	held          []heldMsg[M]      // messages that arrived while loading
	stored        bool              // the store holds an entity of this shard (so the shard too)
	loadAt        time.Time         // StateLoading: when to ask for the stored set (again)
	loadOut       bool              // StateLoading: a load is out
	recovering    []EntityID        // remembered entities still to start (constant-rate recovery)
	recoveringSet map[EntityID]bool // the same, as a set
	recoverAt     time.Time         // when the next batch starts
	later         []EntityID        // entities with a retryAt to watch (failed writes, restarts)
}

// SetPassivator turns on automatic passivation with p (nil turns it off).
func (s *Shard[M]) SetPassivator(p Passivator) {
	s.passivator = p
	if p != nil {
		s.resolution = p.Resolution()
	}
}

// SetIdleTimeout turns on idle passivation alone — Akka's default-idle-strategy, without an
// active-entity limit: an entity that got no message for longer than timeout is
// passivated, by a sweep every interval. It needs no Passivator: the shard keeps when it
// last heard of a message for each entity (to within a sixteenth of the timeout, as a
// Passivator's Resolution allows) and sweeps its own records, so an idle entity costs no
// more than it does without passivation. A Passivator, when set, takes precedence.
func (s *Shard[M]) SetIdleTimeout(timeout, interval time.Duration) {
	s.idle, s.idleEvery = timeout, interval
	if s.passivator == nil {
		s.resolution = timeout / 16
	}
}

// HasOutput reports whether outputs wait for Ready: a Deliver whose passivation picked
// entities to stop leaves their stop messages there.
func (s *Shard[M]) HasOutput() bool { return len(s.out) > 0 }

// New returns an active shard; one that remembers entities first asks for the stored set
// (LoadEntities) and holds messages until Loaded.
func New[M any](cfg Config, id ID) *Shard[M] {
	s := &Shard[M]{cfg: cfg, id: id, entities: map[EntityID]*entity[M]{}}
	if cfg.Remember.Enabled {
		s.cfg.Remember = cfg.Remember.withDefaults()
	}
	switch {
	case cfg.Lease.Enabled:
		if s.cfg.Lease.RetryInterval <= 0 {
			s.cfg.Lease.RetryInterval = 5 * time.Second
		}
		s.acquire() // then, remembering, the stored set
	case cfg.Remember.Enabled:
		s.state = StateLoading
		s.loadOut = true
		s.emit(LoadEntities{})
	}
	return s
}

// Slot returns the runtime's slot of entity id, or nil when the shard holds no record of it.
func (s *Shard[M]) Slot(id EntityID) *Slot {
	if e := s.entities[id]; e != nil {
		return &e.slot
	}
	return nil
}

// ID returns the shard's id.
func (s *Shard[M]) ID() ID { return s.id }

// State returns the shard's state.
func (s *Shard[M]) State() State { return s.state }

// Ready returns and clears what the shard wants done, in order.
func (s *Shard[M]) Ready() []Output[M] {
	out := s.out
	s.out = nil
	return out
}

// Entities returns the live entities and their states.
func (s *Shard[M]) Entities() map[EntityID]EntityState {
	out := make(map[EntityID]EntityState, len(s.entities))
	for id, e := range s.entities {
		out[id] = e.state
	}
	return out
}

// Delivery is what became of a message given to Deliver.
type Delivery uint8

// Deliveries.
const (
	Deliver         Delivery = iota // enqueue it in the entity's mailbox
	StartAndDeliver                 // start a new incarnation of the entity, then enqueue it
	Waiting                         // the entity is passivating: kept for its next incarnation
	Bounced                         // the shard is handing off: give it back to the region
)

// Deliver routes a message to its entity, starting the entity on its first message. It
// returns the decision instead of emitting outputs, so the hot path allocates nothing; when
// automatic passivation picks entities to stop, their stop messages come out as outputs
// (after this message, for the entity itself).
func (s *Shard[M]) Deliver(now time.Time, id EntityID, msg M) (Delivery, *Slot) {
	d, e := s.route(id, msg)
	if e == nil {
		return d, nil
	}
	s.access(now, id, e)
	return d, &e.slot
}

// route decides what becomes of a message for entity id, and returns the entity that
// receives it.
func (s *Shard[M]) route(id EntityID, msg M) (Delivery, *entity[M]) {
	if s.state != StateActive {
		if s.state == StateLoading || s.state == StateAcquiring {
			s.held = append(s.held, heldMsg[M]{id, msg})
			return Waiting, nil
		}
		return Bounced, nil
	}
	e := s.entities[id]
	switch {
	case e == nil && s.cfg.Remember.Enabled:
		if s.recoveringSet[id] { // remembered already, not yet restarted: start it now
			delete(s.recoveringSet, id)
			e = &entity[M]{state: Running}
			s.entities[id] = e
			return StartAndDeliver, e
		}
		s.remember(id, msg)
		return Waiting, nil
	case e == nil:
		e = &entity[M]{state: Running}
		s.entities[id] = e
		return StartAndDeliver, e
	case e.state == Running:
		return Deliver, e
	case e.state == Restarting:
		// The next message restarts it at once (entity-restart-backoff: whichever first).
		e.state, e.slot = Running, Slot{}
		return StartAndDeliver, e
	default:
		e.hold(msg)
		return Waiting, nil
	}
}

// access tells the passivator that entity id got a message, unless it heard of one less
// than its resolution ago, and passivates what it picks.
func (s *Shard[M]) access(now time.Time, id EntityID, e *entity[M]) {
	if s.passivator == nil && s.idle == 0 {
		return
	}
	t := now.UnixNano()
	if res := int64(s.resolution); res > 0 {
		if since := t - e.reported; since >= 0 && since < res {
			return
		}
	}
	e.reported = t
	if s.passivator == nil {
		return // idle timeout alone: the record is all its sweep needs
	}
	s.victims = s.passivator.Access(id, now, s.victims[:0])
	for _, v := range s.victims {
		s.Passivate(v)
	}
}

// deliver routes a message the shard itself releases, as outputs.
func (s *Shard[M]) deliver(now time.Time, id EntityID, msg M) {
	switch d, e := s.route(id, msg); d {
	case StartAndDeliver:
		s.emit(StartEntity{Entity: id, Slot: &e.slot})
		s.emit(DeliverToEntity[M]{Entity: id, Msg: msg, Slot: &e.slot})
		s.access(now, id, e)
	case Deliver:
		s.emit(DeliverToEntity[M]{Entity: id, Msg: msg, Slot: &e.slot})
		s.access(now, id, e)
	case Bounced:
		s.emit(Bounce[M]{Msgs: []M{msg}})
	}
}

// Passivate is the entity asking to be stopped: it gets its stop message, and messages that
// arrive meanwhile wait for its next incarnation.
func (s *Shard[M]) Passivate(id EntityID) {
	if e := s.entities[id]; e != nil && e.state == Running && s.state == StateActive {
		e.state = Passivating
		s.emit(StopEntity{Entity: id})
	}
}

// EntityStopped reports that an entity's incarnation ended; unhandled are the messages still
// queued in its mailbox (after a forced stop). Messages waiting for it start its next
// incarnation, or, when the shard is handing off, go back to the region.
func (s *Shard[M]) EntityStopped(now time.Time, id EntityID, unhandled []M) {
	if s.passivator != nil {
		s.passivator.Remove(id)
	}
	e := s.entities[id]
	if e == nil {
		if len(unhandled) > 0 {
			s.emit(Bounce[M]{Msgs: unhandled})
		}
		return
	}
	if s.cfg.Remember.Enabled && s.state == StateActive && s.rememberedStop(now, id, e, unhandled) {
		return
	}
	pending := slices.Concat(unhandled, e.held())
	delete(s.entities, id)
	if s.state == StateAcquiring { // stopped because the lease was lost: wait for it again
		// Older than anything held since the loss: they go first.
		older := make([]heldMsg[M], len(pending))
		for i, msg := range pending {
			older[i] = heldMsg[M]{id, msg}
		}
		s.held = append(older, s.held...)
		return
	}
	if s.state != StateActive {
		if len(pending) > 0 {
			s.emit(Bounce[M]{Msgs: pending})
		}
		s.checkStopped()
		return
	}
	for _, msg := range pending {
		s.deliver(now, id, msg) // the next incarnation
	}
}

// Stop hands the shard off: every entity gets its stop message; ShardStopped follows when all
// have stopped (or were forced to, after ForceStopAfter).
func (s *Shard[M]) Stop(now time.Time) {
	if s.state != StateActive && s.state != StateLoading && s.state != StateAcquiring {
		return
	}
	s.state, s.drainFrom = StateDraining, now
	s.bounceHeld()
	s.recovering, s.recoveringSet = nil, nil
	for _, id := range slices.Sorted(maps.Keys(s.entities)) {
		e := s.entities[id]
		if w := e.takeHeld(); len(w) > 0 {
			s.emit(Bounce[M]{Msgs: w})
		}
		switch e.state {
		case Remembering, Restarting:
			delete(s.entities, id) // no incarnation runs: nothing to stop; the next home starts it
			continue
		case Running:
			s.emit(StopEntity{Entity: id})
		}
		e.state = Stopping
		s.drained++
	}
	s.checkStopped()
}

// Tick passivates idle entities when due, and forces the stop of entities that ignored
// their handoff stop message for too long.
func (s *Shard[M]) Tick(now time.Time) {
	if s.cfg.Lease.Enabled {
		s.tickLease(now)
	}
	if s.cfg.Remember.Enabled {
		s.tickRemember(now)
	}
	switch {
	case s.state != StateActive:
	case s.passivator != nil:
		if iv := s.passivator.Interval(); iv > 0 && now.Sub(s.lastSweep) >= iv {
			s.lastSweep = now
			s.victims = s.passivator.Sweep(now, s.victims[:0])
			for _, v := range s.victims {
				s.Passivate(v)
			}
		}
	case s.idle > 0 && now.Sub(s.lastSweep) >= s.idleEvery:
		s.lastSweep = now
		s.sweepIdle(now)
	}
	if s.state == StateDraining && !s.forced && now.Sub(s.drainFrom) >= s.cfg.ForceStopAfter() {
		s.forced = true
		for _, id := range slices.Sorted(maps.Keys(s.entities)) {
			s.emit(ForceStop{Entity: id})
		}
	}
}

// sweepIdle passivates the running entities whose last reported message is older than the
// idle timeout, least recently active first (as a Passivator's sweep does).
func (s *Shard[M]) sweepIdle(now time.Time) {
	oldest := now.UnixNano() - int64(s.idle)
	type idler struct {
		id   EntityID
		last int64
	}
	var idle []idler
	for id, e := range s.entities {
		// Never reported: started without a message (remembered), which an idle timeout
		// does not track.
		if e.state == Running && e.reported != 0 && e.reported < oldest {
			idle = append(idle, idler{id, e.reported})
		}
	}
	slices.SortFunc(idle, func(a, b idler) int { return cmp.Or(cmp.Compare(a.last, b.last), cmp.Compare(a.id, b.id)) })
	for _, x := range idle {
		s.Passivate(x.id)
	}
}

// Waiting returns the messages the shard holds: for entities' next incarnations (those that
// arrived while the entity was passivating or being remembered) and while it loads, for
// accounting.
func (s *Shard[M]) Waiting() []M {
	var out []M
	for _, h := range s.held {
		out = append(out, h.msg)
	}
	for _, id := range slices.Sorted(maps.Keys(s.entities)) {
		out = append(out, s.entities[id].held()...)
	}
	return out
}

// Stragglers returns the entities a handoff still waits for.
func (s *Shard[M]) Stragglers() []EntityID {
	if s.state != StateDraining {
		return nil
	}
	return slices.Sorted(maps.Keys(s.entities))
}

func (s *Shard[M]) checkStopped() {
	if s.state == StateDraining && len(s.entities) == 0 {
		s.releaseLease()
		s.state = StateStopped
		s.emit(Stopped{Entities: s.drained})
	}
}

func (s *Shard[M]) emit(o Output[M]) { s.out = append(s.out, o) }

// String describes the shard for logs.
func (s *Shard[M]) String() string {
	return fmt.Sprintf("shard %s (%d entities, %s)", s.id, len(s.entities), [...]string{"active", "draining", "stopped", "loading"}[s.state])
}

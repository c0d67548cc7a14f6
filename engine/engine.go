package engine

import (
	"fmt"
	"slices"
	"time"

	"github.com/shardmesh/shardmesh/coordinator"
	"github.com/shardmesh/shardmesh/membership"
	"github.com/shardmesh/shardmesh/passivation"
	"github.com/shardmesh/shardmesh/region"
	"github.com/shardmesh/shardmesh/shard"
)

// entityType holds the machines of one entity type on this member.
type entityType struct {
	cfg      TypeConfig
	region   *region.Region
	shards   map[shard.ID]*shard.Shard[region.Envelope]
	order    []shard.ID                      // the local shards, sorted: ticks are deterministic
	touched  []*shard.Shard[region.Envelope] // shards called since the last drain, in call order
	coord    *coordinator.Coordinator
	shutdown bool // graceful shutdown completed

	pass    *passivation.Region[shard.EntityID] // nil: no passivation policy (none, or idle alone)
	victims []passivation.Passivate[shard.EntityID]
	idle    passivation.IdleSettings // idle passivation alone: the shards sweep (Shard.SetIdleTimeout)

	gens map[shard.ID]uint64 // the generation of each local shard that remembers entities

	budget *shard.RecoveryBudget // entity-recovery-strategy = adaptive; nil otherwise
}

// shard returns local shard id and records that it will be called, so drainType collects
// its outputs without scanning every shard.
func (t *entityType) shard(id shard.ID) *shard.Shard[region.Envelope] {
	sh := t.shards[id]
	if sh != nil {
		t.touched = append(t.touched, sh)
	}
	return sh
}

// local is a message between machines of this member, queued so handling never recurses.
type local struct {
	typ  string
	from membership.NodeID
	msg  coordinator.Message
}

// Engine is one member's state machines. It is not safe for concurrent use.
type Engine struct {
	cfg      Config
	self     membership.Member
	m        *membership.Node
	types    map[string]*entityType
	lastType *entityType // the type of the last Deliver: skips the lookup for runs of one type
	names    []string    // type names, sorted: every iteration is deterministic

	leaving      bool
	leaveAsked   time.Time
	leaveStarted bool

	queue []local
	now   time.Time
	out   Ready
	gen   uint64 // the last shard generation issued (see StoreOp.Gen)

	dir      Directives // the operator's directives (SetDirectives)
	dirKnown bool

	storeFull bool // this member's store refuses writes for want of disk space (SetStoreFull)

	synced memberSync // what syncMembership last gave the regions and coordinators
}

// memberSync is what syncMembership last gave the regions and coordinators: while the
// membership machine reports the same count of changes and serving has not flipped, they
// have it already, and a tick costs nothing per member of the cluster.
type memberSync struct {
	valid       bool
	changes     uint64 // membership.Node.Changes when members was read
	members     []membership.Member
	unreachable map[membership.NodeID]bool
	serving     bool
}

// New returns the engine of member self. cfg.Membership must have passed Validate; each
// type's coordinator config too.
func New(cfg Config, self membership.Member, now time.Time) *Engine {
	if cfg.ShutdownTimeout == 0 {
		cfg.ShutdownTimeout = DefaultShutdownTimeout
	}
	e := &Engine{cfg: cfg, self: self, m: membership.New(cfg.Membership, self, now), types: map[string]*entityType{}, now: now}
	for _, tc := range cfg.Types {
		if err := e.addType(tc); err != nil {
			panic(err)
		}
	}
	return e
}

// AddType starts the region of another entity type on this member (Akka's
// ClusterSharding.init on a running member). It registers with the type's coordinator at
// the next tick.
func (e *Engine) AddType(now time.Time, tc TypeConfig) error {
	e.now = now
	if err := e.addType(tc); err != nil {
		return err
	}
	e.syncMembership()
	e.settle()
	return nil
}

func (e *Engine) addType(tc TypeConfig) error {
	if tc.Name == "" {
		return fmt.Errorf("entity type without a name")
	}
	if _, dup := e.types[tc.Name]; dup {
		return fmt.Errorf("entity type %q is already registered", tc.Name)
	}
	tc.Region.TypeName, tc.Coordinator.TypeName = tc.Name, tc.Name
	tc.Coordinator.AwaitDirectives = tc.Coordinator.AwaitDirectives || e.cfg.AwaitDirectives
	tc.Coordinator.DurableTerm = tc.Coordinator.DurableTerm || e.cfg.DurableTerms
	tc.Coordinator.DurableShards = tc.Coordinator.DurableShards || e.cfg.DurableShards
	if tc.Shard.HandoffTimeout == 0 {
		tc.Shard.HandoffTimeout = tc.Coordinator.HandoffTimeout // one handoff-timeout for both
	}
	if tc.Shard.Remember.Enabled {
		tc.Coordinator.RememberEntities = true
		tc.Passivation = passivation.Settings{} // the seeds: always off for remembered entities
	}
	if err := tc.Coordinator.Validate(); err != nil {
		return fmt.Errorf("entity type %q: %w", tc.Name, err)
	}
	t := &entityType{
		cfg:    tc,
		region: region.New(tc.Region, e.self.Node, e.self.Incarnation, e.now),
		shards: map[shard.ID]*shard.Shard[region.Envelope]{},
		gens:   map[shard.ID]uint64{},
	}
	switch {
	case tc.Passivation.LimitEnabled():
		pass, err := passivation.NewRegion(tc.Passivation, passivation.StringHash[shard.EntityID])
		if err != nil {
			return fmt.Errorf("entity type %q: %w", tc.Name, err)
		}
		t.pass = pass
	case tc.Passivation.Enabled(): // an idle timeout alone: no policy, the shards sweep
		if err := tc.Passivation.Validate(); err != nil {
			return fmt.Errorf("entity type %q: %w", tc.Name, err)
		}
		t.idle = tc.Passivation.Idle
	}
	if tc.Shard.Remember.Enabled && tc.Shard.Remember.Adaptive.Enabled {
		t.budget = shard.NewRecoveryBudget(tc.Shard.Remember.Adaptive, e.now)
	}
	t.region.SetOutOfService(e.now, e.dir.Stopped[tc.Name])
	t.region.SetNoNewShards(e.now, e.storeFull)
	e.types[tc.Name] = t
	e.synced.valid = false // the new region has not been given the membership yet
	e.names = append(e.names, tc.Name)
	slices.Sort(e.names)
	return nil
}

// Membership returns the membership machine, for inspection.
func (e *Engine) Membership() *membership.Node { return e.m }

// Region returns the region of an entity type, for inspection.
func (e *Engine) Region(typ string) *region.Region {
	if t := e.types[typ]; t != nil {
		return t.region
	}
	return nil
}

// Coordinator returns the coordinator of an entity type if it runs here.
func (e *Engine) Coordinator(typ string) *coordinator.Coordinator {
	if t := e.types[typ]; t != nil {
		return t.coord
	}
	return nil
}

// Shards returns the local shards of an entity type.
func (e *Engine) Shards(typ string) map[shard.ID]*shard.Shard[region.Envelope] {
	if t := e.types[typ]; t != nil {
		return t.shards
	}
	return nil
}

// Slot returns the runtime's slot of entity id of local shard s of type typ — what the
// runtime stored there for the entity's incarnation — or nil when the shard holds no record
// of the entity.
func (e *Engine) Slot(typ string, s shard.ID, id shard.EntityID) *shard.Slot {
	if t := e.types[typ]; t != nil {
		if sh := t.shards[s]; sh != nil {
			return sh.Slot(id)
		}
	}
	return nil
}

// SetCoordinatorTerm gives the coordinator of typ that runs here as member up-number up the
// term to issue epochs in (a coordinator started since is not given it).
func (e *Engine) SetCoordinatorTerm(now time.Time, typ string, up, term uint64) {
	e.now = now
	if t := e.types[typ]; t != nil && t.coord != nil && t.coord.UpNumber() == up {
		t.coord.SetTerm(now, term)
	}
	e.settle()
}

// ShardConfig returns the shard configuration of entity type typ (zero if unknown).
func (e *Engine) ShardConfig(typ string) shard.Config {
	if t := e.types[typ]; t != nil {
		return t.cfg.Shard
	}
	return shard.Config{}
}

// Types returns the configured entity type names, sorted.
func (e *Engine) Types() []string { return e.names }

// FormCluster starts a new cluster with this member.
func (e *Engine) FormCluster(now time.Time) { e.now = now; e.m.FormCluster(now); e.settle() }

// JoinVia asks seed to admit this member.
func (e *Engine) JoinVia(now time.Time, seed membership.NodeID) {
	e.now = now
	e.m.JoinVia(now, seed)
	e.settle()
}

// JoinSeeds gives every seed this member was configured with (membership.Node.JoinSeeds).
func (e *Engine) JoinSeeds(now time.Time, seeds []membership.NodeID) {
	e.now = now
	e.m.JoinSeeds(now, seeds)
	e.settle()
}

// Leave hands off every shard of every type (graceful shutdown), then leaves the cluster.
func (e *Engine) Leave(now time.Time) {
	e.now = now
	if !e.leaving {
		e.leaving, e.leaveAsked = true, now
		for _, n := range e.names {
			e.types[n].region.GracefulShutdown(now)
		}
	}
	e.settle()
	e.maybeLeave() // at once when there is nothing to hand off
}

// Leaving reports whether Leave was called.
func (e *Engine) Leaving() bool { return e.leaving }

// Down marks another member Down, as an operator would.
func (e *Engine) Down(now time.Time, node membership.NodeID) bool {
	e.now = now
	ok := e.m.Down(now, node)
	e.settle()
	return ok
}

// Tick advances time for every machine.
func (e *Engine) Tick(now time.Time) {
	e.now = now
	e.m.Tick(now)
	e.syncMembership()
	for _, n := range e.names {
		t := e.types[n]
		if t.coord != nil {
			t.coord.Tick(now)
		}
		t.region.Tick(now)
		for _, id := range t.order {
			if sh := t.shards[id]; sh.State() == shard.StateDraining || t.pass != nil || t.idle.Timeout > 0 || sh.Remembers() || sh.UsesLease() {
				if sh.Tick(now); sh.HasOutput() {
					t.touched = append(t.touched, sh)
				}
			}
		}
		if t.budget != nil {
			e.grantRecovery(t, now)
		}
	}
	if e.leaving && !e.leaveStarted && now.Sub(e.leaveAsked) >= e.cfg.ShutdownTimeout {
		e.leaveStarted = true
		e.m.Leave(now) // the handoff did not finish in time: leave anyway
	}
	e.settle()
}

// StepMembership feeds a membership message.
func (e *Engine) StepMembership(now time.Time, from membership.NodeID, msg membership.Message) {
	e.now = now
	e.m.Step(now, from, msg)
	e.settle()
}

// StepCoordination feeds a coordinator protocol message of entity type typ from member from:
// to this member's coordinator of the type, or to its region, by the message's direction.
func (e *Engine) StepCoordination(now time.Time, from membership.NodeID, typ string, msg coordinator.Message) {
	e.now = now
	if e.types[typ] == nil {
		// A type this member does not run: a recovering coordinator must hear so, or it
		// would wait for this member's region forever.
		if _, ok := msg.(coordinator.RequestRegister); ok {
			e.out.Coordination = append(e.out.Coordination, Coordination{To: from, Type: typ, Msg: coordinator.NoRegion{Incarnation: e.self.Incarnation}})
		}
		return
	}
	e.queue = append(e.queue, local{typ: typ, from: from, msg: msg})
	e.settle()
}

// Deliver routes a message for an entity (from a local sender or another member's region).
func (e *Engine) Deliver(now time.Time, typ string, env region.Envelope) error {
	_, err := e.DeliverRouted(now, typ, env)
	return err
}

// DeliverRouted is Deliver, telling how the region routed the message (for tracing: a
// message Buffered waits for its shard's home or a handoff).
func (e *Engine) DeliverRouted(now time.Time, typ string, env region.Envelope) (region.RouteKind, error) {
	e.now = now
	t := e.lastType // most messages are for the type of the one before
	if t == nil || t.cfg.Name != typ {
		if t = e.types[typ]; t == nil {
			return 0, fmt.Errorf("unknown entity type %q", typ)
		}
		e.lastType = t
	}
	d := t.region.Deliver(now, env)
	switch d.Kind {
	case region.Local:
		e.deliverLocal(t, d.Envelope)
	case region.Forwarded:
		e.out.Forwards = append(e.out.Forwards, Forward{To: d.To, Type: t.cfg.Name, Envelope: d.Envelope})
	case region.Refused:
		e.out.Rejected = append(e.out.Rejected, Rejected{Type: t.cfg.Name, Envelope: d.Envelope, Err: d.Err})
	}
	// A message routed straight to an entity or another member leaves the machines with
	// nothing to do (the common case): settle only when it left some work.
	if len(t.touched) > 0 || len(e.queue) > 0 || t.region.HasOutput() {
		e.settle()
	}
	return d.Kind, nil
}

// NotHome takes back a message this member forwarded to member from, which refused it as
// no longer the shard's home (region.Region.NotHome).
func (e *Engine) NotHome(now time.Time, from membership.NodeID, typ string, env region.Envelope, nh *region.NotHomeError) {
	e.now = now
	if t := e.types[typ]; t != nil {
		t.region.NotHome(now, from, env, nh)
		e.settle()
	}
}

// deliverLocal hands a message to its local shard and turns the shard's decision into entity
// operations.
func (e *Engine) deliverLocal(t *entityType, env region.Envelope) {
	sh := t.shards[env.Shard]
	if sh == nil {
		panic(fmt.Sprintf("engine: region %s delivered to shard %s that was never started", t.cfg.Name, env.Shard))
	}
	d, slot := sh.Deliver(e.now, env.Entity, env)
	if sh.HasOutput() { // automatic passivation picked entities to stop
		t.touched = append(t.touched, sh)
	}
	switch d {
	case shard.StartAndDeliver:
		epoch, _, _ := t.region.LocalEpoch(env.Shard)
		e.out.Entities = append(e.out.Entities,
			EntityOp{Kind: OpStart, Type: t.cfg.Name, Shard: env.Shard, Entity: env.Entity, Slot: slot, Epoch: epoch},
			EntityOp{Kind: OpDeliver, Type: t.cfg.Name, Shard: env.Shard, Entity: env.Entity, Envelope: env, Slot: slot})
	case shard.Deliver:
		e.out.Entities = append(e.out.Entities, EntityOp{Kind: OpDeliver, Type: t.cfg.Name, Shard: env.Shard, Entity: env.Entity, Envelope: env, Slot: slot})
	case shard.Bounced:
		t.region.Bounce(e.now, []region.Envelope{env})
	}
}

// EntityStopped reports that an entity's incarnation ended, with what it had not handled.
func (e *Engine) EntityStopped(now time.Time, typ string, s shard.ID, id shard.EntityID, unhandled []region.Envelope) {
	e.now = now
	if t := e.types[typ]; t != nil {
		if sh := t.shard(s); sh != nil {
			sh.EntityStopped(now, id, unhandled)
		} else if len(unhandled) > 0 {
			t.region.Bounce(now, unhandled)
		}
	}
	e.settle()
}

// Passivate is an entity asking to stop.
func (e *Engine) Passivate(now time.Time, typ string, s shard.ID, id shard.EntityID) {
	e.now = now
	if t := e.types[typ]; t != nil {
		if sh := t.shard(s); sh != nil {
			sh.Passivate(id)
		}
	}
	e.settle()
}

// settle carries out everything the machines asked for until nothing local is left.
func (e *Engine) settle() {
	for {
		progressed := false
		rd := e.m.Ready()
		e.out.Membership = append(e.out.Membership, rd.Messages...)
		e.out.Members = append(e.out.Members, rd.Events...)
		e.out.ResolverLease = append(e.out.ResolverLease, rd.Lease...)
		if len(rd.Events) > 0 {
			e.syncMembership() // a member that starts leaving stops its coordinators at once
			progressed = true
		}
		for len(e.queue) > 0 {
			l := e.queue[0]
			e.queue = e.queue[1:]
			e.handleLocal(l)
			progressed = true
		}
		for _, n := range e.names {
			if e.drainType(e.types[n]) {
				progressed = true
			}
		}
		if !progressed {
			return
		}
	}
}

// handleLocal delivers a coordinator protocol message to the coordinator or the region.
func (e *Engine) handleLocal(l local) {
	t := e.types[l.typ]
	if toCoordinator(l.msg) {
		if t.coord != nil {
			t.coord.Step(e.now, l.from, l.msg)
		}
		return
	}
	t.region.Step(e.now, l.from, l.msg)
}

// toCoordinator tells the direction of a coordinator protocol message.
func toCoordinator(msg coordinator.Message) bool {
	switch msg.(type) {
	case coordinator.Register, coordinator.GetShardHome, coordinator.ShardStarted, coordinator.BeginHandOffAck,
		coordinator.ShardStopped, coordinator.GracefulShutdownReq, coordinator.NoRegion:
		return true
	}
	return false
}

// drainType carries out the outputs of one type's machines; it reports whether there were any.
func (e *Engine) drainType(t *entityType) bool {
	did := false
	if t.coord != nil {
		rd := t.coord.Ready()
		for _, env := range rd.Messages {
			did = true
			e.send(t, env.To, env.Msg)
		}
		for _, ev := range rd.Events {
			did = true
			e.out.Events = append(e.out.Events, TypedEvent{Type: t.cfg.Name, Event: ev})
		}
		if rd.LoadShards {
			did = true
			e.out.Store = append(e.out.Store, StoreOp{Kind: StoreLoadShards, Type: t.cfg.Name})
		}
	}
	for _, o := range t.region.Ready() {
		did = true
		e.regionOutput(t, o)
	}
	for len(t.touched) > 0 {
		sh := t.touched[0]
		t.touched = t.touched[1:]
		for _, o := range sh.Ready() {
			did = true
			e.shardOutput(t, sh, o)
		}
	}
	t.touched = t.touched[:0]
	return did
}

// send routes a coordinator protocol message: to this member's machines through the queue,
// elsewhere through the driver.
func (e *Engine) send(t *entityType, to membership.NodeID, msg coordinator.Message) {
	if to == e.self.Node {
		e.queue = append(e.queue, local{typ: t.cfg.Name, from: e.self.Node, msg: msg})
		return
	}
	e.out.Coordination = append(e.out.Coordination, Coordination{To: to, Type: t.cfg.Name, Msg: msg})
}

func (e *Engine) regionOutput(t *entityType, o region.Output) {
	switch o := o.(type) {
	case region.ToCoordinator:
		e.send(t, o.To, o.Msg)
	case region.Forward:
		e.out.Forwards = append(e.out.Forwards, Forward{To: o.To, Type: t.cfg.Name, Envelope: o.Envelope})
	case region.StartShard:
		if t.shards[o.Shard] == nil {
			e.startShard(t, o.Shard)
		}
		e.out.Events = append(e.out.Events, TypedEvent{Type: t.cfg.Name, Event: ShardStarted{Shard: o.Shard, Epoch: o.Epoch}})
	case region.DeliverLocal:
		e.deliverLocal(t, o.Envelope)
	case region.StopShard:
		if sh := t.shard(o.Shard); sh != nil {
			sh.Stop(e.now)
		} else {
			t.region.LocalShardStopped(e.now, o.Shard, 0)
		}
	case region.Rejected:
		e.out.Rejected = append(e.out.Rejected, Rejected{Type: t.cfg.Name, Envelope: o.Envelope, Err: o.Err})
	case region.ShutdownComplete:
		t.shutdown = true
		e.out.Events = append(e.out.Events, TypedEvent{Type: t.cfg.Name, Event: ShutdownComplete{}})
		e.maybeLeave()
	default:
		panic(fmt.Sprintf("engine: unknown region output %T", o))
	}
}

func (e *Engine) shardOutput(t *entityType, sh *shard.Shard[region.Envelope], o shard.Output[region.Envelope]) {
	op := EntityOp{Type: t.cfg.Name, Shard: sh.ID()}
	switch o := o.(type) {
	case shard.StartEntity:
		op.Kind, op.Entity, op.Slot = OpStart, o.Entity, o.Slot
		op.Epoch, _, _ = t.region.LocalEpoch(sh.ID())
	case shard.DeliverToEntity[region.Envelope]:
		op.Kind, op.Entity, op.Envelope, op.Slot = OpDeliver, o.Entity, o.Msg, o.Slot
	case shard.StopEntity:
		op.Kind, op.Entity = OpStop, o.Entity
	case shard.ForceStop:
		op.Kind, op.Entity = OpForceStop, o.Entity
		e.out.Events = append(e.out.Events, TypedEvent{Type: t.cfg.Name, Event: EntityForceStopped{Shard: sh.ID(), Entity: o.Entity}})
	case shard.Bounce[region.Envelope]:
		t.region.Bounce(e.now, o.Msgs)
		return
	case shard.LoadEntities:
		e.storeOp(t, StoreOp{Kind: StoreLoadEntities, Shard: sh.ID()})
		return
	case shard.AcquireLease:
		e.leaseOp(t, LeaseAcquire, sh.ID())
		return
	case shard.ReleaseLease:
		e.leaseOp(t, LeaseRelease, sh.ID())
		return
	case shard.RememberEntity:
		ep, _, _ := t.region.LocalEpoch(sh.ID())
		e.storeOp(t, StoreOp{Kind: StoreRemember, Shard: sh.ID(), Entity: o.Entity, NewShard: o.NewShard, Epoch: uint64(ep)})
		return
	case shard.ForgetEntity:
		e.storeOp(t, StoreOp{Kind: StoreForget, Shard: sh.ID(), Entity: o.Entity})
		return
	case shard.Stopped:
		e.forgetShard(t, sh.ID())
		t.region.LocalShardStopped(e.now, sh.ID(), o.Entities)
		e.out.Events = append(e.out.Events, TypedEvent{Type: t.cfg.Name, Event: ShardHandedOff{Shard: sh.ID()}})
		return
	default:
		panic(fmt.Sprintf("engine: unknown shard output %T", o))
	}
	e.out.Entities = append(e.out.Entities, op)
}

// startShard creates a local shard. With automatic passivation it gets its policy, and the
// region's limit is divided anew: entities of other shards that no longer fit stop.
func (e *Engine) startShard(t *entityType, id shard.ID) {
	sh := shard.New[region.Envelope](t.cfg.Shard, id)
	t.shards[id] = sh
	i, _ := slices.BinarySearch(t.order, id)
	t.order = slices.Insert(t.order, i, id)
	if sh.HasOutput() { // a shard that remembers entities asks for them first
		e.gen++
		t.gens[id] = e.gen
		t.touched = append(t.touched, sh)
	}
	if t.idle.Timeout > 0 {
		sh.SetIdleTimeout(t.idle.Timeout, t.idle.CheckInterval())
	}
	if t.pass == nil {
		return
	}
	var p *passivation.Policy[shard.EntityID]
	p, t.victims = t.pass.StartShard(id, t.victims[:0])
	sh.SetPassivator(p)
	for _, v := range t.victims {
		if other := t.shard(v.Shard); other != nil {
			other.Passivate(v.Entity)
		}
	}
}

// forgetShard drops a stopped local shard; its share of the passivation limit goes to the
// others.
func (e *Engine) forgetShard(t *entityType, id shard.ID) {
	delete(t.shards, id)
	delete(t.gens, id)
	if i, ok := slices.BinarySearch(t.order, id); ok {
		t.order = slices.Delete(t.order, i, i+1)
	}
	if t.pass != nil {
		t.victims = t.pass.StopShard(id, t.victims[:0])
		for _, v := range t.victims {
			if other := t.shard(v.Shard); other != nil {
				other.Passivate(v.Entity)
			}
		}
	}
}

// maybeLeave leaves the cluster once every type's graceful shutdown completed.
func (e *Engine) maybeLeave() {
	if !e.leaving || e.leaveStarted {
		return
	}
	for _, n := range e.names {
		if !e.types[n].shutdown {
			return
		}
	}
	e.leaveStarted = true
	e.m.Leave(e.now) // settle picks up what it changed
}

// syncMembership gives every region and coordinator the current membership, and starts or
// stops this member's coordinators: a type's coordinator runs on the oldest Up member with
// its role.
//
// It does nothing when neither the view nor serving changed since the last call: the
// regions and coordinators have what it would give them.
func (e *Engine) syncMembership() {
	if len(e.names) == 0 {
		return // no entity type: no region or coordinator to give the members to
	}
	sy := &e.synced
	changes, serving := e.m.Changes(), e.m.Serving(e.now)
	if sy.valid && sy.changes == changes && sy.serving == serving {
		return
	}
	if !sy.valid || sy.changes != changes {
		sy.members = e.m.Members()
		sy.unreachable = map[membership.NodeID]bool{}
		for _, m := range sy.members {
			if e.m.Unreachable(m.Node) {
				sy.unreachable[m.Node] = true
			}
		}
	}
	sy.valid, sy.changes, sy.serving = true, changes, serving
	members, unreachable := sy.members, sy.unreachable
	self := e.m.Self()
	for _, n := range e.names {
		t := e.types[n]
		oldest, ok := e.m.OldestUp(t.cfg.Region.Role)
		t.region.Update(e.now, region.Members{Members: members, Unreachable: unreachable, Serving: serving, Coordinator: oldest.Node})
		here := ok && oldest.Node == e.self.Node && self.Status == membership.Up
		switch {
		case here && t.coord == nil:
			t.coord = coordinator.New(t.cfg.Coordinator, e.self.Node, self.UpNumber, e.now)
			if e.dirKnown {
				t.coord.SetDirectives(e.now, e.dir.ForType(n))
			}
			e.out.Events = append(e.out.Events, TypedEvent{Type: n, Event: CoordinatorStarted{Term: self.UpNumber}})
		case !here && t.coord != nil:
			e.out.Events = append(e.out.Events, TypedEvent{Type: n, Event: CoordinatorStopped{Term: t.coord.Term()}})
			t.coord = nil
		}
		if t.coord != nil {
			t.coord.Update(e.now, coordinator.Members{Members: members, Unreachable: unreachable, Serving: serving})
		}
	}
}

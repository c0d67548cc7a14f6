package node

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p/core/protocol"
	"go.opentelemetry.io/otel/trace"

	"github.com/shardmesh/shardmesh/coordinator"
	"github.com/shardmesh/shardmesh/datadir"
	"github.com/shardmesh/shardmesh/engine"
	"github.com/shardmesh/shardmesh/membership"
	"github.com/shardmesh/shardmesh/region"
	"github.com/shardmesh/shardmesh/remember"
	"github.com/shardmesh/shardmesh/shard"
	"github.com/shardmesh/shardmesh/trust"
	"github.com/shardmesh/shardmesh/wire"
)

// Core is one member's decisions, driven one input at a time: the machines (engine:
// membership, coordinators, regions, shards) and what the member decides around them —
// the store requests it makes for remembered entities, coordinator terms, the operator's
// directives and the placement history, and what it does with their answers; when it
// serves; what it sends where. It never touches a socket, a disk, a goroutine or the clock:
// inputs (Step) and the time (Tick) come in, and what it wants done goes to its Env.
//
// Node drives one from its loop goroutine, with libp2p, Badger and the entity workers
// behind the Env. internal/sim drives one per simulated member from its event queue, on its
// network, its disks and its virtual clock: the same code decides in both.
//
// A Core is owned by one goroutine (its driver). The methods that say so are safe from any
// goroutine: they touch only what senders and entity workers share (the types registered,
// the asks waiting, the directives in force, the metrics).
type Core struct {
	cfg    CoreConfig
	tracer trace.Tracer // nil: tracing off
	self   membership.Member
	log    *slog.Logger
	env    Env
	eng    *engine.Engine
	now    time.Time

	ready    engine.Ready               // reused output buffer
	fwd      forwards                   // messages for other members, one batch per member
	returned returnedCredits            // credits of the messages handed to entities in this Flush
	scratch  []byte                     // the frame being encoded
	types    map[string]*RegisteredType // owned by the driver
	specs    sync.Map                   // type name → *RegisteredType, for senders on any goroutine
	asks     *asks
	// registered lists the types registered, for decoders on any goroutine (replaced, not
	// changed, when a type is registered).
	registered atomic.Pointer[[]*RegisteredType]
	ids        interned // shard and member ids of decoded frames

	metrics     *metrics       // nil without metrics
	typeMetrics []*typeMetrics // every registered type's

	view atomic.Pointer[View]

	// The serving lease (membership.Node.ServingUntil), as last given to the Env, and what
	// the log was told of it.
	servingUntil time.Time
	servingShown bool      // ServingChanged was last told true
	lapsedAt     time.Time // when serving last stopped (zero: serving, or never served)
	lapseLogged  bool      // that stop was logged above debug level
	sizeKept     uint32    // the last cluster size given to Env.KeepClusterSize
	// The membership machine's counts of view changes and of member record changes when the
	// view was last published (publishView).
	viewChanges, memberChanges uint64
	// placeGen counts the changes of what the placement depends on besides the membership
	// (departures, types); placedGen is the count the published placement was made with.
	placeGen, placedGen uint64

	// A forming cluster waiting for members of the last one: since when, and the last warning.
	quorumWaitSince, quorumWarned time.Time

	delivered uint64 // messages handed to entities (LocalStats)
	recovery  recoveryMeter

	store      coreStore // store requests in flight and what waits on the store
	terms      map[string]*termClaim
	claimed    map[string]*claimedTerm // the terms of the coordinators here, written again as the cluster grows
	directives directiveState
	departs    departures
	history    historyState
	rem        coreReminders
	timers     coreTimers

	// What peers sent before this member admits them (core_admission.go).
	waiting trust.Waiting[Input]

	stoppedTypes atomic.Pointer[map[string]bool] // entity types out of service (senders fail fast)
}

// CoreConfig configures a Core.
type CoreConfig struct {
	// Membership configures the membership machine (validated).
	Membership membership.Config
	// ShutdownTimeout bounds the graceful handoff when leaving.
	ShutdownTimeout time.Duration
	// ClusterName names the shards' leases.
	ClusterName string
	// History bounds the placement history; the zero value turns it off.
	History HistoryConfig
	// Logger receives the member's logs.
	Logger *slog.Logger
	// Metrics, when set, records the member's metrics.
	Metrics *metrics
	// ServingChanged: see Config.ServingChanged.
	ServingChanged func(serving bool, at time.Time)
	// ReplicationFactor: see StoreConfig.ReplicationFactor.
	ReplicationFactor int
	// Trust is what this member trusts: it follows only the operator's directives signed
	// by one of its admins (signeddirectives.go). Nil: no admins, every directive is
	// followed.
	Trust *trust.Policy
	// Tracer, when set, records the spans of messages' ways (tracing.go); nil: off.
	Tracer trace.Tracer
}

// Env is the world a Core acts on. Node implements it with libp2p, Badger, the entity
// workers and the data directory; internal/sim with its network, disks and clock. The Core
// calls it from its driver's goroutine; answers come back as inputs (Step) on that
// goroutine too.
type Env interface {
	// Send hands a frame of a member protocol to member to, without blocking; done (when
	// set) learns whether it was written, possibly from another goroutine.
	Send(to membership.NodeID, proto protocol.ID, frame []byte, done func(error))
	// SendFrames hands n frames of a member protocol to member to, in order, without
	// blocking: framed holds them back to back, each after its length prefix as
	// p2p.AppendFrame writes it, and is the caller's again once SendFrames returns (the Env
	// copies what it keeps). done learns once, possibly from another goroutine, whether
	// they were all written.
	SendFrames(to membership.NodeID, proto protocol.ID, framed []byte, n int, done func(error))
	// Store carries out a store request; its result comes back as a StoreDone with id.
	Store(id uint64, req StoreRequest)
	// HostShard tells the store that this member hosts (or no longer hosts) the shard of
	// unit u, with allocation epoch epoch: its host keeps and moves the shard's replica set
	// (remember.Machine.Host). Not answered.
	HostShard(u remember.Unit, epoch uint64, hosted bool)
	// CareFor has the store look after the replica sets of units at once
	// (remember.Machine.Care): a leaving member's, whose sets still name it. Not answered.
	CareFor(units []remember.Unit)
	// Lease carries out a shard lease operation: an acquisition is answered by a
	// LeaseAcquired (and a lease lost later by a LeaseLost); a release is not answered.
	Lease(op engine.LeaseOp)
	// ResolverLease carries out an operation on the split-brain resolver's lease
	// (lease-majority): an acquisition is answered by a ResolverLeaseResult, within
	// lease-operation-timeout (a later answer is taken for a denial); a release is not
	// answered.
	ResolverLease(op membership.LeaseOp)
	// StartEntity starts an incarnation of an entity of type t in the entity runtime. What
	// ends it comes back as an EntityStopped, and its passivation as a Passivate.
	StartEntity(t *EntityType, ctx EntityContext) Incarnation
	// Publish tells local subscribers of an event (a membership.Event, an
	// engine.TypedEvent, a wire.ShardingEvent).
	Publish(ev Event)
	// Gossip publishes a sharding event to the other members (best effort).
	Gossip(frame []byte)
	// Connect makes member m reachable (its addresses) and, when new, dials it.
	Connect(m membership.Member, isNew bool)
	// Serving tells the entity runtime until when this member may serve (the zero time:
	// not now).
	Serving(until time.Time)
	// KeepClusterSize keeps the size of the cluster this member is Up in, for its next start
	// (after the fact: nothing waits for it).
	KeepClusterSize(size uint32)
	// Stopped: the membership machine stopped this member (left, downed, removed).
	Stopped(s membership.Stopped)
	// Refused tells of what a peer that is not an admitted member sent, and the core
	// dropped (core_admission.go): a frame of proto, or a sharding event. in is the input
	// dropped (nil for a reply to an ask). To count and log; nothing is answered.
	Refused(from membership.NodeID, proto protocol.ID, in Input)
}

// Incarnation is an entity incarnation as the entity runtime runs it.
type Incarnation interface {
	// Enqueue queues a message (or the start or stop signal) for the incarnation's turns.
	Enqueue(m *Message) error
	// Close ends the incarnation at once and returns what it had queued.
	Close() []*Message
}

// NewCore returns the core of member self at time now. cfg.Membership must have passed
// Validate.
func NewCore(cfg CoreConfig, self membership.Member, env Env, now time.Time) *Core {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	c := &Core{
		cfg:    cfg,
		tracer: cfg.Tracer,
		self:   self,
		log:    cfg.Logger,
		env:    env,
		now:    now,
		eng:    engine.New(engine.Config{Membership: cfg.Membership, ShutdownTimeout: cfg.ShutdownTimeout, AwaitDirectives: true, DurableTerms: true, DurableShards: true}, self, now),
		types:  map[string]*RegisteredType{},
		asks:   newAsks(),

		metrics: cfg.Metrics,
		terms:   map[string]*termClaim{},
		claimed: map[string]*claimedTerm{},
	}
	c.store.pending = map[uint64]storeWait{}
	c.directives.due = true // read them at the first tick: coordinators here serve nothing before
	c.directives.reader = directiveReader{policy: cfg.Trust, log: c.log, ignored: cfg.Metrics.directiveIgnored}
	c.publishView()
	return c
}

// Self returns this member as it introduced itself.
func (c *Core) Self() membership.Member { return c.self }

// Engine returns the member's machines, for inspection on the driver's goroutine.
func (c *Core) Engine() *engine.Engine { return c.eng }

// View returns the latest membership snapshot; safe from any goroutine.
func (c *Core) View() *View { return c.view.Load() }

// ServingUntil returns until when this member may serve, as last computed.
func (c *Core) ServingUntil() time.Time { return c.servingUntil }

// Step takes one input at time now. What it leads to is carried out by Flush.
func (c *Core) Step(now time.Time, in Input) {
	c.now = now
	switch in := in.(type) {
	case Deliver:
		c.Deliver(now, in)
	case MemberMessage:
		switch msg, a := c.memberMessage(in.From, in.Msg); a {
		case admitTake:
			c.eng.StepMembership(now, in.From, msg)
		case admitHold:
			c.wait(now, in.From, in)
		case admitRefuse:
			c.refuse(in.From, in)
		}
	case CoordMessage:
		if !c.admitNow(in.From) {
			c.wait(now, in.From, in)
			return
		}
		c.eng.StepCoordination(now, in.From, in.Type, in.Msg)
	case ShardingEventIn:
		if !c.admits(in.Event.Origin) {
			c.refuse(in.Event.Origin, in)
			return
		}
		c.shardingEvent(now, in.Event)
	case StoreDone:
		c.storeDone(now, in.ID, in.Result)
	case LeaseAcquired:
		c.eng.LeaseAcquired(now, in.Op.Type, in.Op.Shard, in.Op.Gen, in.OK)
	case LeaseLost:
		c.eng.LeaseLost(now, in.Op.Type, in.Op.Shard, in.Op.Gen)
	case ResolverLeaseResult:
		c.eng.ResolverLeaseResult(now, in.Seq, in.Held)
	case EntityStopped:
		c.entityStopped(now, in)
	case Passivate:
		if slot := c.eng.Slot(in.Type, in.Shard, in.Entity); slot != nil && slot.Runtime == in.Inc {
			c.eng.Passivate(now, in.Type, in.Shard, in.Entity)
		}
	case RegisterType:
		in.Done(c.registerType(now, in.Spec))
	case FormCluster:
		c.eng.FormCluster(now)
	case JoinVia:
		c.eng.JoinVia(now, in.Seed)
	case JoinSeeds:
		c.eng.JoinSeeds(now, in.Seeds)
	case Leave:
		c.startDeparture(now)
	case Down:
		in.Done(c.eng.Down(now, in.Node))
	case ChangeDirective:
		c.changeDirective(in.Signed, in.Done)
	case ReadDirectives:
		c.readDirectives(in.Done)
	case StoreSpace:
		c.eng.SetStoreFull(now, in.Full)
	case StoreLanded:
		c.remindersLanded(in.Keys)
	case ReminderOp:
		c.reminderOp(now, in)
	case TimerOp:
		c.timerOp(now, in)
	case Query:
		in.Fn(now, c)
	default:
		panic(fmt.Sprintf("node: unknown input %T", in))
	}
}

// Deliver steps a message for an entity: Step(now, in) without boxing in as an Input, for
// the driver's hot path. A message another member forwarded is admitted here, as Step
// admits what members send (core_admission.go).
func (c *Core) Deliver(now time.Time, in Deliver) {
	c.now = now
	if in.From != "" && !c.admitNow(in.From) {
		c.wait(now, in.From, in)
		return
	}
	// Only now, admitted, may what the message carries take effect: a bounce (which may
	// change this member's home of a shard), a trace.
	m := in.Envelope.Payload.(*Message)
	if x := m.ext; x != nil {
		if nh := x.bounce; nh != nil {
			x.bounce = nil
			c.eng.NotHome(now, in.From, in.Type, in.Envelope, nh)
			return
		}
		if c.tracer != nil && x.tr != nil {
			kind, err := c.eng.DeliverRouted(now, in.Type, in.Envelope)
			if err == nil {
				c.traceRoute(now, in.Type, in.Envelope, m, kind)
				return
			}
		}
	}
	if err := c.eng.Deliver(now, in.Type, in.Envelope); err != nil {
		c.Reject(in.Type, m, err)
		m.credits.release()
	}
}

// Tick advances the machines' time and runs what is due: the recovery budget's sample,
// store requests to retry, the directives' refresh, the history's writes, the refusal of
// what waited too long for its sender to be admitted.
func (c *Core) Tick(now time.Time) {
	c.now = now
	c.expireWaiting(now)
	c.eng.ObserveRecovery(now, c.recovery.take())
	c.eng.Tick(now)
	c.tickStore(now)
	c.tickDeparture(now)
	c.updateServing()
	c.tickReminders(now)
	c.tickTimers(now)
	c.publishView()
	c.sampleMetrics()
}

// TickDue returns when a tick is due before the periodic ones (zero: none): the split-brain
// resolver's decision, so that a downed member's shards move at stable-after, not up to a
// tick interval later. The driver ticks the core then.
func (c *Core) TickDue() time.Time { return c.eng.Membership().DecisionDue() }

// Flush carries out what the machines asked for since the last Flush.
func (c *Core) Flush() {
	now := c.now
	rd := &c.ready
	for {
		rd.Reset()
		c.eng.Drain(rd)
		if rd.Empty() {
			c.returned.release()
			c.flushStore()
			c.flushMetrics()
			return
		}
		for _, env := range rd.Membership {
			c.sendMembership(env)
		}
		for _, m := range rd.Coordination {
			c.env.Send(m.To, CoordProtocol, wire.AppendCoord(nil, m.Type, m.Msg), nil)
		}
		for _, f := range rd.Forwards {
			c.forward(f)
		}
		c.sendForwards()
		for i := range rd.Entities {
			c.applyEntityOp(now, &rd.Entities[i])
		}
		for _, op := range rd.Leases {
			c.env.Lease(op)
		}
		for _, op := range rd.ResolverLease {
			c.env.ResolverLease(op)
		}
		if len(rd.Store) > 0 {
			c.storeOps(now, rd.Store)
		}
		for _, r := range rd.Rejected {
			m := r.Envelope.Payload.(*Message)
			c.traceLeft(now, m)
			if nh, ok := r.Err.(*region.NotHomeError); ok && c.refuseNotHome(r.Type, r.Envelope, m, nh) {
				continue
			}
			c.Reject(r.Type, m, r.Err)
			m.credits.release()
		}
		if len(rd.Members) > 0 || len(rd.Events) > 0 {
			c.publishView()
			c.updateServing()
		}
		for _, ev := range rd.Members {
			c.logEvent(ev)
			c.metrics.recordMemberEvent(ev)
			c.react(ev)
			c.env.Publish(ev)
		}
		for _, ev := range rd.Events {
			switch e := ev.Event.(type) {
			case engine.CoordinatorStarted:
				c.wantDirectives() // a new coordinator reads them fresh from a majority
				c.claimTerm(ev.Type, e.Term)
			case coordinator.ShardAllocated:
				c.recordPlacement(ev.Type, e, now)
			case engine.ShardStarted:
				c.env.HostShard(remember.Unit{Type: ev.Type, Shard: string(e.Shard)}, uint64(e.Epoch), true)
				c.remindersStarted(ev.Type, e.Shard, e.Epoch)
			case engine.ShardHandedOff:
				c.env.HostShard(remember.Unit{Type: ev.Type, Shard: string(e.Shard)}, 0, false)
				c.remindersStopped(ev.Type, e.Shard)
			}
			c.logTypedEvent(ev)
			c.recordTypedEvent(ev, now)
			c.env.Publish(ev)
			c.gossipEvent(ev, now)
		}
		c.releaseWaiting(now) // what members admitted since sent before

	}
}

// sendMembership sends a membership message to its member (a broadcast, To "", goes to
// every member the machine knows; the machine addresses every message today).
func (c *Core) sendMembership(env membership.Envelope) {
	frame := wire.AppendMembership(nil, env.Msg)
	if env.To != "" {
		c.env.Send(env.To, MemberProtocol, frame, nil)
		return
	}
	for _, m := range c.eng.Membership().Members() {
		if m.Node != c.self.Node && m.Status < membership.Down {
			c.env.Send(m.Node, MemberProtocol, frame, nil)
		}
	}
}

// react connects to members as they appear and stops the member when the machine says so.
func (c *Core) react(ev membership.Event) {
	switch e := ev.(type) {
	case membership.MemberChanged:
		if e.Member.Node == c.self.Node {
			return
		}
		if e.Member.Status >= membership.Down {
			// A downed member will reply to nothing: its asks fail at once. One that left
			// gracefully handed its shards off first; what reached it late it routed on, and
			// the reply comes from the new home: those asks wait on.
			left := e.Member.Status == membership.Removed && (e.Previous == membership.Leaving || e.Previous == membership.Exiting)
			if e.Previous < membership.Down && !left {
				c.asks.failTo(e.Member.Node, fmt.Errorf("ask sent to %s: %w", e.Member.Node.Short(), ErrMemberDown))
			}
			return
		}
		c.env.Connect(e.Member, e.New)
	case membership.Stopped:
		c.env.Stopped(e)
	}
}

// updateServing gives the entity runtime the lease deadline and tells when serving started
// or stopped (logs, CoreConfig.ServingChanged).
func (c *Core) updateServing() {
	until := c.eng.Membership().ServingUntil()
	prev := c.servingUntil
	status := func() membership.Status { return c.eng.Membership().Self().Status }
	if !until.Equal(prev) {
		c.servingUntil = until
		c.env.Serving(until)
	}
	c.showServing(prev, until, status)
}

// lapseWarnAfter is how long a member that is Up goes without serving before it warns: a
// member that joins, or sees another join, may lapse for the moment its first grants take.
const lapseWarnAfter = time.Second

// showServing tells a change of serving: stopped at prev when the lease ran out before now
// (renewed since or not), at now when it was withdrawn early; started at now. status is
// this member's (for the log). Config's
// ServingChanged hears every change at once; the log warns of a lapse while Up only once it
// has lasted lapseWarnAfter.
func (c *Core) showServing(prev, until time.Time, status func() membership.Status) {
	now := c.now
	if c.servingShown && (!prev.After(now) || !until.After(now)) {
		c.servingShown = false
		c.lapsedAt = prev
		if now.Before(prev) {
			c.lapsedAt = now
		}
		c.lapseLogged = false
		if st := status(); st != membership.Up { // leaving, downed, removed: no lapse
			c.lapseLogged = true
			c.log.Info("stopped serving", "status", st.String(), "since", c.lapsedAt.Format(time.RFC3339Nano))
		}
		if c.cfg.ServingChanged != nil {
			c.cfg.ServingChanged(false, c.lapsedAt)
		}
	}
	switch {
	case !c.servingShown && until.After(now):
		c.servingShown = true
		switch {
		case c.lapsedAt.IsZero():
			c.log.Info("serving: Up and heard by a majority of the members")
		case c.lapseLogged:
			c.log.Info("serving again: Up and heard by a majority of the members", "after", now.Sub(c.lapsedAt).Round(time.Millisecond).String())
		default:
			c.log.Debug("serving again after a short lapse", "after", now.Sub(c.lapsedAt).Round(time.Millisecond).String())
		}
		c.lapsedAt, c.lapseLogged = time.Time{}, false
		if c.cfg.ServingChanged != nil {
			c.cfg.ServingChanged(true, now)
		}
	case !c.servingShown && !c.lapseLogged && !c.lapsedAt.IsZero() && now.Sub(c.lapsedAt) >= lapseWarnAfter:
		c.lapseLogged = true
		c.log.Warn("not serving: no agreeing heartbeats from a majority of the members within acceptable-heartbeat-pause (cut off, or this process was paused); its entities wait",
			"since", c.lapsedAt.Format(time.RFC3339Nano))
	}
}

// View is a consistent snapshot of the membership as this member sees it, safe to read from
// any goroutine.
type View struct {
	Self        membership.NodeID
	Joined      bool
	Members     []membership.Member
	Unreachable []membership.NodeID
	Leader      membership.NodeID
	Oldest      membership.NodeID
	Converged   bool
	// RestartNeed and RestartJoined: a restarted cluster moves no member Up before
	// RestartNeed members have joined (membership.Node.RestartQuorum; RestartWait says it
	// in words); RestartJoined have. RestartNeed is 0 when it does not wait.
	RestartNeed, RestartJoined int

	// placement is who holds what in the store (placementOf): the same pointer while
	// nothing it depends on changes.
	placement *remember.Placement
	// admitted are the members that may speak the member protocols (a status below Down):
	// the same slice while they do not change. statuses has every member's status, to look
	// up (the same map while the members admitted, and their number, do not change).
	admitted []membership.NodeID
	statuses map[membership.NodeID]membership.Status
	// voters are the membership's voters (membership.Node.Voters): the members whose grants
	// make the serving lease and whose majority keep-majority keeps, and so the ones that
	// hold the cluster metadata (placementOf). The same slice while they do not change.
	voters []membership.NodeID
}

// Placement returns who holds what in the replicated store as this view has it: the
// metadata on the voters, each shard's records on a replica set of its type's role.
func (v *View) Placement() *remember.Placement { return v.placement }

// Admitted returns the members that may speak the member protocols: Joining, WeaklyUp, Up,
// Leaving, Exiting (core_admission.go). The same slice comes back while they do not change.
func (v *View) Admitted() []membership.NodeID { return v.admitted }

// Admits reports whether member id may speak the member protocols, as of this view.
func (v *View) Admits(id membership.NodeID) bool {
	st, ok := v.statuses[id]
	return id == v.Self || ok && st < membership.Down
}

// Knows reports whether member id is a member, or was one (Down and Removed members too),
// as of this view.
func (v *View) Knows(id membership.NodeID) bool {
	_, ok := v.statuses[id]
	return id == v.Self || ok
}

// publishView publishes the view's snapshot, at every tick and after every change. While
// the membership machine reports no change of its view (members, reachability, leader),
// the last snapshot stands and a tick costs nothing per member of the cluster: only
// convergence (memoized by the machine) and the restart quorum are looked at again. While
// it reports no change of a member record, the last snapshot's members stand.
func (c *Core) publishView() {
	m := c.eng.Membership()
	prev := c.view.Load()
	if prev != nil && c.viewChanges == m.Changes() {
		converged := m.Convergence()
		need, joined := m.RestartQuorum()
		replace := c.placedGen != c.placeGen || m.Joined() && prev.placement == nil
		if replace || converged != prev.Converged || need != prev.RestartNeed || joined != prev.RestartJoined || m.Joined() != prev.Joined {
			v := *prev
			v.Converged, v.RestartNeed, v.RestartJoined, v.Joined = converged, need, joined, m.Joined()
			if replace {
				c.place(&v, prev)
			}
			c.view.Store(&v)
			prev = &v
		}
		c.warnRestartQuorum(prev)
		return
	}
	c.viewChanges = m.Changes()
	v := &View{Self: c.self.Node, Joined: m.Joined(), Leader: m.Leader(), Converged: m.Convergence(), Unreachable: m.UnreachableMembers()}
	v.RestartNeed, v.RestartJoined = m.RestartQuorum()
	if prev != nil && c.memberChanges == m.MemberChanges() {
		// Only reachability or the leader changed (most changes during a partition): the
		// member records, and what follows from them, are the last snapshot's.
		v.Members, v.Oldest = prev.Members, prev.Oldest
		v.admitted, v.statuses = prev.admitted, prev.statuses
	} else {
		c.memberChanges = m.MemberChanges()
		v.Members = m.Members()
		if o, ok := m.Oldest(""); ok {
			v.Oldest = o.Node
		}
		v.admitted, v.statuses = admittedOf(v.Members, prev)
	}
	v.voters = m.Voters()
	if prev != nil && slices.Equal(prev.voters, v.voters) {
		v.voters = prev.voters
	}
	c.place(v, prev)
	c.view.Store(v)
	if size, ok := m.ClusterSize(); ok && size != c.sizeKept {
		c.sizeKept = size
		c.env.KeepClusterSize(size)
	}
	c.warnRestartQuorum(v)
	c.metrics.recordView(v)
}

// place sets the placement of view v (placementOf), once the member knows its cluster:
// before, it knows no cluster to place anything in.
func (c *Core) place(v, prev *View) {
	c.placedGen = c.placeGen
	v.placement = nil
	if v.Joined {
		v.placement = c.placementOf(v.Members, v.voters, prev)
	}
}

// replace has the next publishView compute the placement again: something it depends on
// besides the membership changed (a departure, a type registered).
func (c *Core) replace() { c.placeGen++ }

// warnRestartQuorum logs membership.RestartWait once the wait has lasted 5 s, and every 10 s
// while it lasts (a restart of a whole cluster waits a moment for its members as they start,
// which is no news).
func (c *Core) warnRestartQuorum(v *View) {
	why := membership.RestartWait(v.RestartNeed, v.RestartJoined)
	if why == "" || !v.Joined {
		c.quorumWaitSince = time.Time{}
		return
	}
	now := c.now
	if c.quorumWaitSince.IsZero() {
		c.quorumWaitSince = now
	}
	if now.Sub(c.quorumWaitSince) < 5*time.Second || now.Sub(c.quorumWarned) < 10*time.Second {
		return
	}
	c.quorumWarned = now
	c.log.Warn("waiting for members of the last cluster: " + why)
}

// registerType starts hosting an entity type (or proxying it, on a member without the
// type's role).
func (c *Core) registerType(now time.Time, spec EntityType) error {
	if strings.Contains(spec.Name, datadir.Sep) {
		return fmt.Errorf("entity type %q: a name may not contain a 0 byte", spec.Name)
	}
	if spec.Name == "" || spec.New == nil || spec.Extractor == nil || spec.EncodeMessage == nil || spec.DecodeMessage == nil ||
		spec.EncodeReply == nil || spec.DecodeReply == nil {
		return fmt.Errorf("entity type %q: Name, New, Extractor and the codecs are required", spec.Name)
	}
	spec.Settings.Name = spec.Name
	if _, dup := c.types[spec.Name]; dup {
		return fmt.Errorf("entity type %q is already registered", spec.Name)
	}
	if err := c.eng.AddType(now, spec.Settings); err != nil {
		return err
	}
	t := &RegisteredType{spec: spec, home: EntityHome{Type: spec.Name, Node: c.self.Node}, credits: newCredits(spec.Settings.Region.BufferSize),
		m: c.metrics.forType(spec.Name)}
	t.home.spec = &t.spec
	c.types[spec.Name] = t
	c.specs.Store(spec.Name, t)
	all := []*RegisteredType{t}
	if prev := c.registered.Load(); prev != nil {
		all = append(all, *prev...)
	}
	c.registered.Store(&all)
	if t.m != nil {
		c.typeMetrics = append(c.typeMetrics, t.m)
	}
	c.replace() // its shards' replica sets are of its role
	c.publishView()
	return nil
}

// Sender returns a registered type for senders on any goroutine (its spec and credits), or
// an error for a type not registered or out of service. Safe from any goroutine.
func (c *Core) Sender(typ string) (*RegisteredType, error) {
	t := c.Registered(typ)
	if t == nil {
		return nil, unknownType(typ)
	}
	if c.typeStopped(typ) {
		return nil, fmt.Errorf("send to %s: %w", typ, ErrTypeStopped)
	}
	return t, nil
}

// Registered returns entity type typ as registered here, in service or not (nil when it is
// not registered). Safe from any goroutine.
func (c *Core) Registered(typ string) *RegisteredType {
	if all := c.registered.Load(); all != nil && len(*all) <= scanTypes {
		for _, t := range *all {
			if t.spec.Name == typ {
				return t
			}
		}
		return nil
	}
	if v, ok := c.specs.Load(typ); ok {
		return v.(*RegisteredType)
	}
	return nil
}

// scanTypes is how many registered types Registered compares by name before it hashes the
// name instead.
const scanTypes = 8

// TypeNames returns the entity types registered on this member, sorted. Safe from any
// goroutine.
func (c *Core) TypeNames() []string {
	var names []string
	c.specs.Range(func(k, _ any) bool {
		names = append(names, k.(string))
		return true
	})
	slices.Sort(names)
	return names
}

// NewDeliver addresses m to entity id of type t: the input that delivers it. Safe from
// any goroutine.
func NewDeliver(t *RegisteredType, id string, m *Message) (Deliver, error) {
	if id == "" {
		return Deliver{}, errors.New("entity id is empty")
	}
	eid := shard.EntityID(id)
	return Deliver{Type: t.spec.Name, Envelope: region.Envelope{Shard: t.spec.Extractor.ShardID(eid), Entity: eid, Payload: m}}, nil
}

// typeStopped reports whether an operator took entity type typ out of service. Safe from
// any goroutine.
func (c *Core) typeStopped(typ string) bool {
	m := c.stoppedTypes.Load()
	return m != nil && (*m)[typ]
}

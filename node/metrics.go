package node

import (
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/shardmesh/shardmesh/coordinator"
	"github.com/shardmesh/shardmesh/engine"
	"github.com/shardmesh/shardmesh/membership"
	"github.com/shardmesh/shardmesh/region"
	"github.com/shardmesh/shardmesh/shard"
)

// A member's Prometheus metrics, recorded at the edges: from what the engine's Ready asks
// for, from its events, and around asks and sends. The machines know nothing of them.
// Labels come from bounded sets only (entity type, status, reason, cause, phase, route):
// never an entity id or a shard id. docs/metrics.md lists every metric.

// Buckets of the latency histograms, in seconds: 100 µs to 10 s.
var latencyBuckets = []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}

// Buckets of the handoff durations, in seconds: 10 ms to 2 min (handoff-timeout is 60 s by default).
var handoffBuckets = []float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120}

// Reasons a message was not delivered (the reason label of shardmesh_messages_rejected_total).
const (
	reasonBufferFull   = "buffer_full"   // the region's buffer is full
	reasonTooManyHops  = "too_many_hops" // forwarded too many times: shard homes disagree
	reasonShuttingDown = "shutting_down" // the region is shutting down
	reasonTypeStopped  = "type_stopped"  // an operator took the entity type out of service
	reasonStopped      = "member_stopped"
	reasonUnknownType  = "unknown_type"
	reasonNotRunning   = "entity_not_running" // its incarnation ended before the message reached it
	reasonSendFailed   = "send_failed"        // the frame to the shard's home could not be written
	reasonUndecodable  = "undecodable"        // the entity type's codec could not decode it
	reasonOther        = "other"
)

// unknownTypeLabel stands for a type name that is not registered here: a remote peer's
// input must not create label values.
const unknownTypeLabel = "(unknown)"

// Routes of a message (the route label of shardmesh_messages_routed_total).
const (
	routeLocal  = "local"  // handed to an entity's mailbox on this member
	routeRemote = "remote" // forwarded to the shard's home on another member
)

// Outcomes of an ask (the outcome label of shardmesh_asks_total).
const (
	outcomeOK      = "ok"
	outcomeError   = "error"   // the entity answered with an error, or the message was rejected
	outcomeTimeout = "timeout" // the caller's context ended first
	outcomeStopped = "stopped" // the member stopped
)

// metrics holds a member's collectors; nil when the member has no registry.
type metrics struct {
	routed          *prometheus.CounterVec
	rejected        *prometheus.CounterVec
	buffered        *prometheus.GaugeVec
	asks            *prometheus.CounterVec
	askSeconds      *prometheus.HistogramVec
	shards          *prometheus.GaugeVec
	allocated       *prometheus.GaugeVec
	entities        *prometheus.GaugeVec
	starts          *prometheus.CounterVec
	stops           *prometheus.CounterVec
	passivations    *prometheus.CounterVec
	forcedStops     *prometheus.CounterVec
	rebalanceRounds *prometheus.CounterVec
	rebalanceMoves  *prometheus.CounterVec
	handoffsStarted *prometheus.CounterVec
	handoffs        *prometheus.CounterVec
	handoffSeconds  *prometheus.HistogramVec
	phaseSeconds    *prometheus.HistogramVec
	coordChanges    *prometheus.CounterVec
	coordHere       *prometheus.GaugeVec
	members         *prometheus.GaugeVec
	unreachable     prometheus.Gauge
	leaderChanges   prometheus.Counter
	unsent          *prometheus.CounterVec
	ignored         prometheus.Counter

	memberStatus [len(memberStatuses)]prometheus.Gauge
	rem          *reminderMetrics

	// handoffs in progress on this member's coordinators, by type, shard and epoch: the
	// cause and phase their later events do not carry. Owned by the loop goroutine.
	inFlight map[handoffKey]*handoffTrack
}

var memberStatuses = [...]membership.Status{membership.Joining, membership.WeaklyUp, membership.Up, membership.Leaving, membership.Exiting, membership.Down, membership.Removed}

// maxTrackedHandoffs bounds inFlight.
const maxTrackedHandoffs = 1 << 16

type handoffKey struct {
	typ   string
	shard shard.ID
	epoch coordinator.Epoch
}

type handoffTrack struct {
	cause      string
	phase      coordinator.Phase
	phaseStart time.Time
}

// typeMetrics are one entity type's children of the collectors, resolved once when the
// type registers so that the message path does no label lookup. A nil *typeMetrics records
// nothing.
type typeMetrics struct {
	loop typeLoopCounts

	routedLocal, routedRemote          prometheus.Counter
	askOK, askError, askTimeout        prometheus.Counter
	askStopped                         prometheus.Counter
	askSeconds                         prometheus.Observer
	shards, allocated, entities, buf   prometheus.Gauge
	starts, stops, passivations, force prometheus.Counter
}

// typeLoopCounts are a type's counts that only the loop goroutine touches, padded off the
// cache lines that askers read.
type typeLoopCounts struct {
	_ [64]byte
	// Messages routed since the last flush, counted without atomics and added to the
	// counters once per pass over the engine's output (flush).
	local, remote uint64
	// allocDirty: the coordinator's allocation changed since the last tick.
	allocDirty bool
	_          [64]byte
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	if reg == nil {
		return nil, nil
	}
	typ := []string{"type"}
	m := &metrics{
		routed: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "shardmesh_messages_routed_total",
			Help: "Messages for entities routed by this member: route=local handed to an entity here, route=remote forwarded to the shard's home on another member."}, []string{"type", "route"}),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "shardmesh_messages_rejected_total",
			Help: "Messages for entities not delivered, by reason; an asker is told, a told message is dropped."}, []string{"type", "reason"}),
		buffered: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "shardmesh_region_buffered_messages",
			Help: "Messages this member's region holds until their shard's home is known (sampled each tick)."}, typ),
		asks: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "shardmesh_asks_total",
			Help: "Asks made through this member, by outcome (ok, error, timeout, stopped)."}, []string{"type", "outcome"}),
		askSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "shardmesh_ask_duration_seconds",
			Help: "Time from an ask to its answer, for asks made through this member.", Buckets: latencyBuckets}, typ),
		shards: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "shardmesh_shards",
			Help: "Shards hosted by this member's region."}, typ),
		allocated: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "shardmesh_coordinator_allocated_shards",
			Help: "Shards with a home, as the type's coordinator knows them (only on the member running it)."}, typ),
		entities: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "shardmesh_entities",
			Help: "Entity incarnations running on this member."}, typ),
		starts: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "shardmesh_entity_starts_total",
			Help: "Entity incarnations started on this member."}, typ),
		stops: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "shardmesh_entity_stops_total",
			Help: "Entity incarnations ended on this member, for any reason."}, typ),
		passivations: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "shardmesh_entity_passivations_total",
			Help: "Entities asked to stop by passivation (their own request or the automatic policy), not by a handoff."}, typ),
		forcedStops: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "shardmesh_entity_forced_stops_total",
			Help: "Entities stopped by force because they did not stop in time during a handoff."}, typ),
		rebalanceRounds: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "shardmesh_rebalance_rounds_total",
			Help: "Rebalance rounds that chose shards to move (on the member running the coordinator)."}, typ),
		rebalanceMoves: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "shardmesh_rebalance_moves_total",
			Help: "Shards chosen to move by rebalance rounds."}, typ),
		handoffsStarted: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "shardmesh_handoffs_started_total",
			Help: "Handoffs begun by the type's coordinator on this member, by cause."}, []string{"type", "cause"}),
		handoffs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "shardmesh_handoffs_total",
			Help: "Handoffs ended, by cause and outcome (completed, failed)."}, []string{"type", "cause", "outcome"}),
		handoffSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "shardmesh_handoff_duration_seconds",
			Help: "Duration of completed handoffs, by cause.", Buckets: handoffBuckets}, []string{"type", "cause"}),
		phaseSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "shardmesh_handoff_phase_duration_seconds",
			Help: "Time handoffs spent in a phase (begun: waiting for every region to buffer; stopping: entities stopping).", Buckets: handoffBuckets}, []string{"type", "phase"}),
		coordChanges: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "shardmesh_coordinator_changes_total",
			Help: "The type's coordinator started (change=started) or stopped (change=stopped) on this member."}, []string{"type", "change"}),
		coordHere: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "shardmesh_coordinator",
			Help: "1 while this member runs the type's coordinator."}, typ),
		members: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "shardmesh_members",
			Help: "Members by status, as this member sees them."}, []string{"status"}),
		unreachable: prometheus.NewGauge(prometheus.GaugeOpts{Name: "shardmesh_members_unreachable",
			Help: "Members this member's failure detector (or gossip) finds unreachable."}),
		leaderChanges: prometheus.NewCounter(prometheus.CounterOpts{Name: "shardmesh_leader_changes_total",
			Help: "Changes of the cluster leader seen by this member."}),
		unsent: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "shardmesh_frames_unsent_total",
			Help: "Frames to other members that could not be written, by protocol (member, coord, region)."}, []string{"protocol"}),
		ignored: prometheus.NewCounter(prometheus.CounterOpts{Name: "shardmesh_trust_directives_ignored_total",
			Help: "Stored operator directives this member does not follow: not signed by an admin of this member, or replayed (each record counted once)."}),
		inFlight: map[handoffKey]*handoffTrack{},
		rem:      newReminderMetrics(),
	}
	for i, s := range memberStatuses {
		m.memberStatus[i] = m.members.WithLabelValues(s.String())
	}
	for _, c := range []prometheus.Collector{m.routed, m.rejected, m.buffered, m.asks, m.askSeconds, m.shards, m.allocated, m.entities,
		m.starts, m.stops, m.passivations, m.forcedStops, m.rebalanceRounds, m.rebalanceMoves, m.handoffsStarted, m.handoffs, m.handoffSeconds,
		m.phaseSeconds, m.coordChanges, m.coordHere, m.members, m.unreachable, m.leaderChanges, m.unsent, m.ignored} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	for _, c := range m.rem.collectors() {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// forType resolves an entity type's children; nil when metrics are off.
func (m *metrics) forType(name string) *typeMetrics {
	if m == nil {
		return nil
	}
	return &typeMetrics{
		routedLocal:  m.routed.WithLabelValues(name, routeLocal),
		routedRemote: m.routed.WithLabelValues(name, routeRemote),
		askOK:        m.asks.WithLabelValues(name, outcomeOK),
		askError:     m.asks.WithLabelValues(name, outcomeError),
		askTimeout:   m.asks.WithLabelValues(name, outcomeTimeout),
		askStopped:   m.asks.WithLabelValues(name, outcomeStopped),
		askSeconds:   m.askSeconds.WithLabelValues(name),
		shards:       m.shards.WithLabelValues(name),
		allocated:    m.allocated.WithLabelValues(name),
		entities:     m.entities.WithLabelValues(name),
		buf:          m.buffered.WithLabelValues(name),
		starts:       m.starts.WithLabelValues(name),
		stops:        m.stops.WithLabelValues(name),
		passivations: m.passivations.WithLabelValues(name),
		force:        m.forcedStops.WithLabelValues(name),
	}
}

// delivered and forwarded count a routed message (on the loop goroutine).
func (t *typeMetrics) delivered() {
	if t != nil {
		t.loop.local++
	}
}

func (t *typeMetrics) forwarded() {
	if t != nil {
		t.loop.remote++
	}
}

// flush adds what was routed since the last flush to the counters (on the loop goroutine).
func (t *typeMetrics) flush() {
	if l := &t.loop; l.local > 0 || l.remote > 0 {
		t.routedLocal.Add(float64(l.local))
		t.routedRemote.Add(float64(l.remote))
		l.local, l.remote = 0, 0
	}
}

// flushMetrics flushes every type's routing counts; the loop calls it when it has carried
// out all the engine asked for.
func (c *Core) flushMetrics() {
	for _, t := range c.typeMetrics {
		t.flush()
	}
}

// asked records an ask that began at start (zero when metrics are off) and ended with err.
func (t *typeMetrics) asked(start time.Time, err error, ctxErr, stopped bool) {
	if t == nil {
		return
	}
	t.askSeconds.Observe(time.Since(start).Seconds())
	switch {
	case stopped:
		t.askStopped.Inc()
	case ctxErr:
		t.askTimeout.Inc()
	case err != nil:
		t.askError.Inc()
	default:
		t.askOK.Inc()
	}
}

// askStart is when an ask began, for its latency; the zero time when metrics are off
// (time.Now is not free).
func (t *typeMetrics) askStart() time.Time {
	if t == nil {
		return time.Time{}
	}
	return time.Now()
}

// rejected counts a message that was not delivered.
func (m *metrics) rejectedMsg(typ string, known bool, err error) {
	if m == nil {
		return
	}
	if !known {
		typ = unknownTypeLabel
	}
	m.rejected.WithLabelValues(typ, rejectReason(err)).Inc()
}

// rejectReason maps an error to the bounded set of reasons.
func rejectReason(err error) string {
	switch {
	case errors.Is(err, region.ErrBufferFull):
		return reasonBufferFull
	case errors.Is(err, region.ErrTooManyHops):
		return reasonTooManyHops
	case errors.Is(err, region.ErrShuttingDown):
		return reasonShuttingDown
	case errors.Is(err, region.ErrTypeStopped):
		return reasonTypeStopped
	case errors.Is(err, ErrStopped):
		return reasonStopped
	case errors.Is(err, ErrUnknownType):
		return reasonUnknownType
	case errors.Is(err, errNotRunning):
		return reasonNotRunning
	case errors.Is(err, errSendFailed):
		return reasonSendFailed
	case errors.Is(err, ErrUndecodable):
		return reasonUndecodable
	}
	return reasonOther
}

// Internal causes of a rejection, wrapped into the errors the sender sees.
var (
	errNotRunning = errors.New("entity not running here")
	errSendFailed = errors.New("not sent to the shard's home")
)

// ErrUndecodable means a message does not decode in its entity type's message codec.
var ErrUndecodable = errors.New("undecodable message")

// frameUnsent counts a frame to another member that could not be written.
// directiveIgnored counts a stored directive this member does not follow.
func (m *metrics) directiveIgnored() {
	if m != nil {
		m.ignored.Inc()
	}
}

func (m *metrics) frameUnsent(proto string) {
	if m != nil {
		m.unsent.WithLabelValues(protocolLabel(proto)).Inc()
	}
}

func protocolLabel(proto string) string {
	switch proto {
	case MemberProtocol:
		return "member"
	case CoordProtocol:
		return "coord"
	case RegionProtocol:
		return "region"
	}
	return "other"
}

// entityStarted and entityEnded keep the entity counters and the live gauge.
func (t *typeMetrics) entityStarted(live int) {
	if t != nil {
		t.starts.Inc()
		t.entities.Set(float64(live))
	}
}

func (t *typeMetrics) entityEnded(live int) {
	if t != nil {
		t.stops.Inc()
		t.entities.Set(float64(live))
	}
}

// sampleMetrics refreshes the gauges read from the machines' state (on each tick).
func (c *Core) sampleMetrics() {
	if c.metrics == nil {
		return
	}
	c.sampleReminders()
	for name, t := range c.types {
		if r := c.eng.Region(name); r != nil {
			t.m.buf.Set(float64(r.Buffered()))
		}
		t.m.shards.Set(float64(len(c.eng.Shards(name))))
		if t.m.loop.allocDirty {
			t.m.loop.allocDirty = false
			if co := c.eng.Coordinator(name); co != nil {
				t.m.allocated.Set(float64(len(co.Allocations())))
			}
		}
	}
}

// recordView sets the membership gauges from a new view.
func (m *metrics) recordView(v *View) {
	if m == nil {
		return
	}
	var counts [len(memberStatuses)]int
	for _, mem := range v.Members {
		if int(mem.Status) < len(counts) {
			counts[mem.Status]++
		}
	}
	for i, g := range m.memberStatus {
		g.Set(float64(counts[i]))
	}
	m.unreachable.Set(float64(len(v.Unreachable)))
}

// recordMemberEvent counts membership events.
func (m *metrics) recordMemberEvent(ev membership.Event) {
	if m == nil {
		return
	}
	if _, ok := ev.(membership.LeaderChanged); ok {
		m.leaderChanges.Inc()
	}
}

// recordTypedEvent records an event of a type's coordinator or region.
func (c *Core) recordTypedEvent(ev engine.TypedEvent, now time.Time) {
	m := c.metrics
	if m == nil {
		return
	}
	t := c.types[ev.Type]
	if t == nil {
		return
	}
	switch e := ev.Event.(type) {
	case engine.ShardStarted, engine.ShardHandedOff:
		t.m.shards.Set(float64(len(c.eng.Shards(ev.Type))))
	case engine.CoordinatorStarted:
		m.coordChanges.WithLabelValues(ev.Type, "started").Inc()
		m.coordHere.WithLabelValues(ev.Type).Set(1)
	case engine.CoordinatorStopped:
		m.coordChanges.WithLabelValues(ev.Type, "stopped").Inc()
		m.coordHere.WithLabelValues(ev.Type).Set(0)
		t.m.allocated.Set(0)
		for k := range m.inFlight {
			if k.typ == ev.Type {
				delete(m.inFlight, k)
			}
		}
	case coordinator.Recovered, coordinator.ShardAllocated, coordinator.RegionTerminated:
		t.m.loop.allocDirty = true // counted on the next tick: Allocations copies the table
	case coordinator.RebalanceRound:
		m.rebalanceRounds.WithLabelValues(ev.Type).Inc()
		m.rebalanceMoves.WithLabelValues(ev.Type).Add(float64(len(e.Shards)))
	case coordinator.HandoffStarted:
		m.handoffsStarted.WithLabelValues(ev.Type, string(e.Cause)).Inc()
		if e.Cause == coordinator.CauseConflict {
			return // an older home told to stop: no completion event follows
		}
		if len(m.inFlight) >= maxTrackedHandoffs {
			clear(m.inFlight) // never expected (one handoff per shard at a time); a bound all the same
		}
		m.inFlight[handoffKey{ev.Type, e.Shard, e.Epoch}] = &handoffTrack{cause: string(e.Cause), phase: coordinator.PhaseBegun, phaseStart: now}
	case coordinator.HandoffPhase:
		if h := m.inFlight[handoffKey{ev.Type, e.Shard, e.Epoch}]; h != nil {
			m.phaseSeconds.WithLabelValues(ev.Type, h.phase.String()).Observe(now.Sub(h.phaseStart).Seconds())
			h.phase, h.phaseStart = e.Phase, now
		}
	case coordinator.HandoffCompleted:
		cause := m.endHandoff(ev.Type, e.Shard, e.Epoch, now)
		m.handoffs.WithLabelValues(ev.Type, cause, "completed").Inc()
		m.handoffSeconds.WithLabelValues(ev.Type, cause).Observe(e.Took.Seconds())
		t.m.loop.allocDirty = true
	case coordinator.HandoffFailed:
		cause := m.endHandoff(ev.Type, e.Shard, e.Epoch, now)
		m.handoffs.WithLabelValues(ev.Type, cause, "failed").Inc()
	}
}

// endHandoff forgets a handoff, records the time in its last phase and returns its cause
// ("unknown" for one begun before this member ran the coordinator).
func (m *metrics) endHandoff(typ string, s shard.ID, epoch coordinator.Epoch, now time.Time) string {
	k := handoffKey{typ, s, epoch}
	h := m.inFlight[k]
	if h == nil {
		return "unknown"
	}
	delete(m.inFlight, k)
	m.phaseSeconds.WithLabelValues(typ, h.phase.String()).Observe(now.Sub(h.phaseStart).Seconds())
	return h.cause
}

package coordinator

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/shardmesh/shardmesh/allocation"
	"github.com/shardmesh/shardmesh/membership"
	"github.com/shardmesh/shardmesh/shard"
)

// Members is the membership as the coordinator's member sees it.
type Members struct {
	// Members are all member records (tombstones included).
	Members []membership.Member
	// Unreachable are the members some member cannot reach.
	Unreachable map[membership.NodeID]bool
	// Serving reports whether the coordinator's own member may serve (its majority lease);
	// a coordinator that may not serve answers nothing and allocates nothing.
	Serving bool
}

// Phase is the phase of a handoff.
type Phase uint8

// Handoff phases.
const (
	PhaseBegun     Phase = iota // BeginHandOff sent; waiting for every region to acknowledge
	PhaseStopping               // every region buffers; HandOff sent; entities stopping
	PhaseCompleted              // stopped; the shard is free to move
)

func (p Phase) String() string {
	return [...]string{"begun", "stopping", "completed"}[p]
}

type region struct {
	node         membership.NodeID
	incarnation  uint64
	lastStatus   membership.Status // its member's status when last seen (why it terminated)
	proxy        bool
	shuttingDown bool
	noNewShards  bool // its member takes no new shards now (Register.NoNewShards)
	shards       map[shard.ID]bool
}

type allocationState struct {
	region   membership.NodeID
	epoch    Epoch
	started  bool
	hostSent time.Time
}

// moved is why a shard without a home lost its last one, for the ShardAllocated that follows.
type moved struct {
	from     membership.NodeID
	cause    Cause
	took     time.Duration
	entities int
}

type handoff struct {
	epoch      Epoch
	from       membership.NodeID
	phase      Phase
	cause      Cause
	began      time.Time
	phaseStart time.Time
	waiting    map[membership.NodeID]bool // regions whose acknowledgement is outstanding
	requesters []membership.NodeID        // regions that asked for the shard meanwhile
	// The shard's next home, named when the old home is told to stop (designate): the old
	// home hands the shard over to it directly, and it is the shard's next allocation
	// whatever happens to the old home. "" when none was named.
	next      membership.NodeID
	nextInc   uint64
	nextEpoch Epoch
	resent    time.Time // when HandOff was last sent again after handoff-timeout
}

// Coordinator is the shard coordinator of one entity type. It is not safe for concurrent use.
type Coordinator struct {
	cfg  Config
	self membership.NodeID
	term uint64
	seq  uint32

	started   time.Time
	recovered bool
	members   map[membership.NodeID]membership.Member
	reachable func(membership.NodeID) bool
	serving   bool

	regions  map[membership.NodeID]*region
	declined map[membership.NodeID]uint64    // members (incarnation) that run no region of the type
	asked    map[membership.NodeID]time.Time // when RequestRegister was last sent to each member
	shards   map[shard.ID]*allocationState
	handoffs map[shard.ID]*handoff
	waiting  map[shard.ID][]membership.NodeID // requests held until recovery or enough members
	moved    map[shard.ID]moved               // why shards without a home lost it

	lastRebalance time.Time
	now           time.Time
	out           Ready

	// minReached latches once min-nr-of-members regions registered (or the cluster already
	// had shards when this coordinator recovered): as in Akka, the minimum defers the first
	// allocations only, and a cluster that later shrinks below it keeps allocating.
	minReached bool

	// Remembered shards (RememberEntities): loaded once per coordinator, after recovery.
	shardsLoaded bool
	loadOut      bool
	loadAt       time.Time

	// The operator's directives (see SetDirectives); nothing is served until they are known.
	dir      Directives
	dirKnown bool

	up        uint64 // the up-number of the coordinator's member (its term without DurableTerm)
	termKnown bool   // the term to issue epochs in is known (see SetTerm)
}

// New returns the coordinator running on member self, whose up-number is term. cfg must
// have passed Validate.
func New(cfg Config, self membership.NodeID, term uint64, now time.Time) *Coordinator {
	return &Coordinator{
		cfg:       cfg,
		self:      self,
		term:      term,
		started:   now,
		members:   map[membership.NodeID]membership.Member{},
		reachable: func(membership.NodeID) bool { return true },
		regions:   map[membership.NodeID]*region{},
		declined:  map[membership.NodeID]uint64{},
		asked:     map[membership.NodeID]time.Time{},
		shards:    map[shard.ID]*allocationState{},
		handoffs:  map[shard.ID]*handoff{},
		waiting:   map[shard.ID][]membership.NodeID{},
		moved:     map[shard.ID]moved{},
		now:       now,
		dirKnown:  !cfg.AwaitDirectives,
		up:        term,
		termKnown: !cfg.DurableTerm,
	}
}

// UpNumber returns the up-number of the coordinator's member: which coordinator this is.
func (c *Coordinator) UpNumber() uint64 { return c.up }

// SetTerm gives a coordinator with DurableTerm the term to issue epochs in: one above every
// term issued before in the cluster, as the store says. It is set once.
func (c *Coordinator) SetTerm(now time.Time, term uint64) {
	c.now = now
	if c.termKnown || term == 0 || term > math.MaxUint32 {
		return
	}
	c.term, c.seq, c.termKnown = term, 0, true
	c.progress()
}

// Term returns the coordinator's term (its member's up-number).
func (c *Coordinator) Term() uint64 { return c.term }

// Recovered reports whether the coordinator has heard from every region and answers.
func (c *Coordinator) Recovered() bool { return c.recovered }

// Ready returns and clears what the coordinator wants done.
func (c *Coordinator) Ready() Ready {
	r := c.out
	c.out = Ready{}
	return r
}

// Update gives the coordinator the current membership.
func (c *Coordinator) Update(now time.Time, m Members) {
	c.now = now
	c.serving = m.Serving
	c.members = make(map[membership.NodeID]membership.Member, len(m.Members))
	for _, mem := range m.Members {
		c.members[mem.Node] = mem
	}
	unreachable := m.Unreachable
	c.reachable = func(id membership.NodeID) bool { return !unreachable[id] }
	for _, id := range c.sortedRegions() {
		r := c.regions[id]
		mem, ok := c.members[id]
		if !ok || mem.Incarnation != r.incarnation || mem.Status == membership.Removed {
			c.terminate(r, terminateCause(r, mem, ok))
			continue
		}
		r.lastStatus = mem.Status
	}
	for _, s := range c.sortedHandoffs() {
		c.advanceHandoff(s, c.handoffs[s]) // a region waited for may be Down now
	}
	c.progress()
}

// Tick advances time: recovery, shard start resends, handoff timeouts and rebalancing.
func (c *Coordinator) Tick(now time.Time) {
	c.now = now
	c.progress()
	if !c.active() {
		return
	}
	for _, id := range c.sortedShards() {
		a := c.shards[id]
		if !a.started && now.Sub(a.hostSent) >= c.cfg.ShardStartTimeout {
			a.hostSent = now
			c.send(a.region, HostShard{Shard: id, Epoch: a.epoch, Incarnation: c.incarnationOf(a.region)})
		}
	}
	for _, id := range c.sortedHandoffs() {
		h := c.handoffs[id]
		switch {
		case now.Sub(h.began) < c.cfg.HandoffTimeout:
		case h.next == "":
			c.failHandoff(id, h)
		case now.Sub(h.resent) >= c.cfg.HandoffTimeout:
			// The next home may have started the shard on the old home's word: the shard
			// cannot go back to the old home. The old home stops it in the end (its entities
			// by force after the handoff's stop timeout), or its region terminates.
			h.resent = now
			c.orderHandOff(id, h)
		}
	}
	c.loadShards()
	c.enforce()
	if now.Sub(c.lastRebalance) >= c.cfg.RebalanceInterval {
		c.lastRebalance = now
		if !c.dir.RebalancePaused {
			c.rebalance()
		}
	}
}

// Step feeds a message from the region on member from.
func (c *Coordinator) Step(now time.Time, from membership.NodeID, msg Message) {
	c.now = now
	mem, ok := c.members[from]
	if !ok || mem.Status >= membership.Down {
		return // not a member (any more): ignore
	}
	switch m := msg.(type) {
	case Register:
		c.register(from, m)
	case GetShardHome:
		c.getShardHome(from, m.Shard)
	case ShardStarted:
		if a := c.shards[m.Shard]; a != nil && a.region == from && a.epoch == m.Epoch {
			a.started = true
		}
	case BeginHandOffAck:
		if h := c.handoffs[m.Shard]; h != nil && h.epoch == m.Epoch && h.phase == PhaseBegun {
			delete(h.waiting, from)
			c.advanceHandoff(m.Shard, h)
		}
	case ShardStopped:
		c.shardStopped(from, m)
	case NoRegion:
		if m.Incarnation == mem.Incarnation {
			c.declined[from] = m.Incarnation
		}
	case GracefulShutdownReq:
		if r := c.regions[from]; r != nil {
			r.shuttingDown = true
			if c.active() {
				for _, s := range slices.Sorted(maps.Keys(r.shards)) {
					c.startHandoff(s, CauseShutdown)
				}
			}
		}
	default:
		panic(fmt.Sprintf("coordinator: unexpected message %T", msg))
	}
	c.progress()
}

func (c *Coordinator) active() bool { return c.recovered && c.serving && c.dirKnown && c.termKnown }

// register records a region and adopts the shards it reports.
func (c *Coordinator) register(from membership.NodeID, m Register) {
	mem := c.members[from]
	if m.Incarnation != mem.Incarnation {
		return // a stale registration from a process that no longer exists
	}
	r := c.regions[from]
	if r != nil && r.incarnation != m.Incarnation {
		c.terminate(r, CauseRestarted)
		r = nil
	}
	if r == nil {
		r = &region{node: from, incarnation: m.Incarnation, proxy: m.Proxy, shards: map[shard.ID]bool{}}
		c.regions[from] = r
		c.emit(RegionRegistered{Region: from, Proxy: m.Proxy})
	}
	r.noNewShards = m.NoNewShards
	for _, h := range m.Hosted {
		c.adopt(r, h)
	}
	c.send(from, RegisterAck{Term: c.term})
}

// adopt takes a shard a region reports into the allocation state. If another region holds
// the shard, the newer epoch wins and the older one is told to stop.
func (c *Coordinator) adopt(r *region, h Hosted) {
	if h.Epoch.Term() == c.term && h.Epoch.Seq() >= c.seq {
		c.seq = h.Epoch.Seq() + 1
	}
	a := c.shards[h.Shard]
	switch {
	case a == nil:
	case a.region == r.node && a.epoch == h.Epoch:
		return
	case a.epoch > h.Epoch:
		c.send(r.node, HandOff{Shard: h.Shard, Epoch: h.Epoch}) // the older home stops
		c.emit(HandoffStarted{Shard: h.Shard, From: r.node, Epoch: h.Epoch, Cause: CauseConflict})
		return
	default:
		c.send(a.region, HandOff{Shard: h.Shard, Epoch: a.epoch})
		c.emit(HandoffStarted{Shard: h.Shard, From: a.region, Epoch: a.epoch, Cause: CauseConflict})
		if old := c.regions[a.region]; old != nil {
			delete(old.shards, h.Shard)
		}
	}
	c.shards[h.Shard] = &allocationState{region: r.node, epoch: h.Epoch, started: true}
	r.shards[h.Shard] = true
	if ho := c.handoffs[h.Shard]; ho != nil && ho.epoch != h.Epoch {
		// The handoff of another allocation is over: its next home reports the shard
		// started (or a newer home superseded it). Who asked meanwhile is answered now.
		delete(c.handoffs, h.Shard)
		c.await(h.Shard, ho.requesters...)
	}
	if h.State == HostedStopping {
		// Stopping there already (a handoff of the previous coordinator): wait for it.
		c.handoffs[h.Shard] = &handoff{epoch: h.Epoch, from: r.node, phase: PhaseStopping, cause: CauseRebalance,
			began: c.now, phaseStart: c.now, waiting: map[membership.NodeID]bool{}}
	}
}

// getShardHome answers where a shard lives, allocating it if it has no home.
func (c *Coordinator) getShardHome(from membership.NodeID, s shard.ID) {
	if h := c.handoffs[s]; h != nil {
		if h.next != "" {
			// Its next home holds what it is sent until the shard starts there.
			c.send(from, ShardHome{Shard: s, Region: h.next, Epoch: h.nextEpoch})
			return
		}
		if !slices.Contains(h.requesters, from) {
			h.requesters = append(h.requesters, from)
		}
		return // answered when the handoff completes
	}
	if c.dir.Stopped {
		return // out of service: nothing is allocated, and senders fail fast
	}
	if a := c.shards[s]; a != nil && c.active() && !c.downed(a.region) {
		if a.epoch.Term() < c.term {
			c.restamp(s, a)
		}
		c.send(from, ShardHome{Shard: s, Region: a.region, Epoch: a.epoch})
		return
	}
	c.await(s, from)
	c.allocateWaiting(s)
}

// downed reports whether the member of region node is Down: it is about to be removed, and
// its shards with it, so a home there is not worth giving (the requester, told it, would
// refuse it and ask again only after retry-interval). The request waits for the removal.
func (c *Coordinator) downed(node membership.NodeID) bool {
	r := c.regions[node]
	return r != nil && r.lastStatus == membership.Down
}

// allocateWaiting allocates shard s if regions wait for it and allocation is possible now.
func (c *Coordinator) allocateWaiting(s shard.ID) {
	requesters := c.waiting[s]
	if len(requesters) == 0 || !c.active() || c.handoffs[s] != nil || c.dir.Stopped {
		return
	}
	a := c.shards[s]
	if a != nil && c.downed(a.region) {
		return // answered once the region terminates and the shard is allocated again
	}
	if a != nil && a.epoch.Term() < c.term {
		c.restamp(s, a)
	}
	if a == nil {
		view := c.view()
		if !c.minReached && len(view.Regions) < c.cfg.MinMembers {
			return // deferred until min-nr-of-members regions registered
		}
		c.minReached = true
		r, ok := c.pinned(s)
		if !ok {
			r = c.regions[c.cfg.Strategy.Allocate(requesters[0], s, view)]
		}
		if r == nil || !c.candidate(r) {
			return // the strategy named no usable region; try again on the next tick
		}
		a = c.place(s, r, c.nextEpoch())
	}
	delete(c.waiting, s)
	for _, req := range requesters {
		c.send(req, ShardHome{Shard: s, Region: a.region, Epoch: a.epoch})
	}
}

// place allocates shard s to region r under epoch and tells r to host it.
func (c *Coordinator) place(s shard.ID, r *region, epoch Epoch) *allocationState {
	a := &allocationState{region: r.node, epoch: epoch, hostSent: c.now}
	c.shards[s] = a
	r.shards[s] = true
	c.send(r.node, HostShard{Shard: s, Epoch: epoch, Incarnation: r.incarnation})
	mv, ok := c.moved[s]
	if !ok {
		mv.cause = CauseNew
	}
	delete(c.moved, s)
	c.emit(ShardAllocated{Shard: s, Region: r.node, Epoch: epoch, From: mv.from, Cause: mv.cause, Took: mv.took, Entities: mv.entities})
	return a
}

// placeNext allocates shard s to the next home its handoff h named, if that region is still
// registered (whatever else it is now: it may have started the shard on the old home's
// word), and answers the regions waiting for s. It reports whether it did.
func (c *Coordinator) placeNext(s shard.ID, h *handoff) bool {
	r := c.regions[h.next]
	if h.next == "" || r == nil || r.incarnation != h.nextInc {
		return false
	}
	a := c.place(s, r, h.nextEpoch)
	for _, req := range c.waiting[s] {
		c.send(req, ShardHome{Shard: s, Region: a.region, Epoch: a.epoch})
	}
	delete(c.waiting, s)
	return true
}

// nextEpoch issues the next epoch of this coordinator's term.
func (c *Coordinator) nextEpoch() Epoch {
	if c.seq == ^uint32(0) {
		panic(fmt.Sprintf("coordinator %s: epoch sequence exhausted in term %d", c.cfg.TypeName, c.term))
	}
	e := NewEpoch(c.term, c.seq)
	c.seq++
	return e
}

// restamp gives a shard that stays where it is a new epoch, and tells its region. Regions
// that acknowledged a BeginHandOff for the old epoch refuse homes of that epoch as stale, so
// an allocation adopted from an earlier coordinator, or kept after a failed handoff, must not
// be served under its old epoch.
func (c *Coordinator) restamp(s shard.ID, a *allocationState) {
	a.epoch, a.started, a.hostSent = c.nextEpoch(), false, c.now
	c.send(a.region, HostShard{Shard: s, Epoch: a.epoch, Incarnation: c.incarnationOf(a.region)})
}

// candidate reports whether region r may receive new shards: a registered region (not a
// proxy, not shutting down, its member able to take shards) of a reachable Up member with
// the role.
func (c *Coordinator) candidate(r *region) bool {
	mem, ok := c.members[r.node]
	return ok && !r.proxy && !r.shuttingDown && !r.noNewShards && !c.dir.Draining[r.node] && mem.Status == membership.Up &&
		mem.Incarnation == r.incarnation && mem.HasRole(c.cfg.Role) && c.reachable(r.node)
}

// view is the strategy's input: the candidate regions and the shards in handoff.
func (c *Coordinator) view() allocation.View {
	v := allocation.View{InProgress: map[shard.ID]bool{}}
	for _, id := range c.sortedRegions() {
		r := c.regions[id]
		if !c.candidate(r) {
			continue
		}
		mem := c.members[id]
		v.Regions = append(v.Regions, allocation.Region{Node: id, Status: mem.Status, AppVersion: mem.AppVersion,
			UpNumber: mem.UpNumber, Roles: mem.Roles, Shards: c.inAllocationOrder(r.shards)})
	}
	for s, h := range c.handoffs {
		v.InProgress[s] = true
		if h.next == "" {
			continue
		}
		// A shard on its way to its next home counts there already, so that the next
		// shards named in the same round spread as their allocations one by one would.
		for i := range v.Regions {
			if v.Regions[i].Node == h.next {
				v.Regions[i].Shards = append(v.Regions[i].Shards, s)
			}
		}
	}
	for id, m := range c.members {
		switch {
		case m.Status == membership.Joining || m.Status == membership.WeaklyUp:
			v.MemberJoining = true
		case m.Status < membership.Down && !c.reachable(id):
			v.MemberUnreachable = true
		}
	}
	return v
}

// inAllocationOrder lists shards oldest allocation first (by epoch, then id), those whose
// start the region has not yet reported last. The strategies give up a region's first
// shards, and a shard not started is not handed off (rebalance skips it): first in the
// list, it wasted the whole round — Akka's algorithm takes one shard from a region just
// above the optimum, and took the unstarted one again at every round until its start came
// (a HostShard lost to the network is sent again only after shard-start-timeout, 10 s).
// When every shard is started, the order is Akka's.
func (c *Coordinator) inAllocationOrder(set map[shard.ID]bool) []shard.ID {
	ids := slices.Sorted(maps.Keys(set))
	slices.SortStableFunc(ids, func(a, b shard.ID) int {
		ea, eb := c.shards[a], c.shards[b]
		switch {
		case ea == nil || eb == nil:
			return 0
		case ea.started != eb.started:
			if ea.started {
				return -1
			}
			return 1
		case ea.epoch < eb.epoch:
			return -1
		case ea.epoch > eb.epoch:
			return 1
		}
		return 0
	})
	return ids
}

// rebalance asks the strategy what to move and starts those handoffs. Whether the moment is
// right (no member joining or unreachable, no mixed versions) is the strategy's call, as in
// Akka; the view tells it.
func (c *Coordinator) rebalance() {
	moves := c.unpinned(c.cfg.Strategy.Rebalance(c.view()))
	var started []shard.ID
	for _, s := range moves {
		if a := c.shards[s]; a != nil && c.handoffs[s] == nil && a.started {
			c.startHandoff(s, CauseRebalance)
			started = append(started, s)
		}
	}
	if len(started) > 0 {
		c.emit(RebalanceRound{Shards: started})
	}
}

// startHandoff begins handing off shard s: every region is told to buffer it.
func (c *Coordinator) startHandoff(s shard.ID, cause Cause) {
	a := c.shards[s]
	if a == nil || c.handoffs[s] != nil {
		return
	}
	h := &handoff{epoch: a.epoch, from: a.region, cause: cause, began: c.now, phaseStart: c.now, waiting: map[membership.NodeID]bool{}}
	c.handoffs[s] = h
	for _, id := range c.sortedRegions() {
		h.waiting[id] = true
		c.send(id, BeginHandOff{Shard: s, Epoch: a.epoch})
	}
	c.emit(HandoffStarted{Shard: s, From: a.region, Epoch: a.epoch, Cause: cause})
	c.advanceHandoff(s, h)
}

// advanceHandoff sends HandOff once every region acknowledged BeginHandOff. Regions of
// members that are Down or unreachable are not waited for: a Down one is on its way out and
// serves nothing once its lease ran out; an unresponsive one would hold the handoff until
// handoff-timeout. Neither is the shard's old home (that one must stop it) nor its next
// (only reachable Up members get shards); what such a region still forwards to the old home
// meanwhile is buffered there and follows the shard.
func (c *Coordinator) advanceHandoff(s shard.ID, h *handoff) {
	if h.phase != PhaseBegun {
		return
	}
	for id := range h.waiting {
		if m, ok := c.members[id]; id != h.from && (!ok || m.Status >= membership.Down || !c.reachable(id)) {
			delete(h.waiting, id)
		}
	}
	if len(h.waiting) > 0 {
		return
	}
	h.phase, h.phaseStart = PhaseStopping, c.now
	c.emit(HandoffPhase{Shard: s, Epoch: h.epoch, Phase: PhaseStopping})
	c.designate(s, h)
	c.orderHandOff(s, h)
}

// designate names shard s's next home as its old home is told to stop, the region the
// allocation after the stop would choose: the old home hands the shard over to it directly
// (HandOff.Next, HandedOver), it takes the shard without waiting for the coordinator's
// HostShard, and what the regions buffer goes there now (it holds it until the shard
// starts) instead of after the stop. The allocation itself is still made, and recorded,
// when the old home reports the stop (ShardStopped), as in Akka; only its target is chosen
// before. None is named when the shard will not be allocated again at once (its type is
// stopped) or no region other than the old home can take it now.
func (c *Coordinator) designate(s shard.ID, h *handoff) {
	if c.dir.Stopped || !c.active() {
		return
	}
	r, ok := c.pinned(s)
	if !ok {
		requester := c.self
		if len(h.requesters) > 0 {
			requester = h.requesters[0]
		}
		r = c.regions[c.cfg.Strategy.Allocate(requester, s, c.view())]
	}
	if r == nil || r.node == h.from || !c.candidate(r) {
		return
	}
	h.next, h.nextInc, h.nextEpoch = r.node, r.incarnation, c.nextEpoch()
	c.send(r.node, HostShard{Shard: s, Epoch: h.nextEpoch, Incarnation: r.incarnation, After: h.from, AfterEpoch: h.epoch})
	for _, req := range h.requesters {
		c.send(req, ShardHome{Shard: s, Region: h.next, Epoch: h.nextEpoch})
	}
	h.requesters = nil
}

// orderHandOff tells shard s's old home to stop it (and, when named, hand it to its next
// home).
func (c *Coordinator) orderHandOff(s shard.ID, h *handoff) {
	c.send(h.from, HandOff{Shard: s, Epoch: h.epoch, Next: h.next, NextEpoch: h.nextEpoch})
	if h.next != "" && !h.resent.IsZero() { // sent again: its first went with the naming
		c.send(h.next, HostShard{Shard: s, Epoch: h.nextEpoch, Incarnation: h.nextInc, After: h.from, AfterEpoch: h.epoch})
	}
}

// shardStopped completes a handoff: the shard is deallocated and, if regions wait for it,
// allocated again at once.
func (c *Coordinator) shardStopped(from membership.NodeID, m ShardStopped) {
	a := c.shards[m.Shard]
	if a == nil || a.region != from || a.epoch != m.Epoch {
		return // stale, or an older conflicting home that was told to stop
	}
	h := c.handoffs[m.Shard]
	c.deallocate(m.Shard)
	if h != nil {
		took := c.now.Sub(h.began)
		c.emit(HandoffCompleted{Shard: m.Shard, From: from, Epoch: m.Epoch, Took: took, Entities: m.Entities})
		c.moved[m.Shard] = moved{from: from, cause: h.cause, took: took, entities: m.Entities}
		c.await(m.Shard, h.requesters...)
		// A shard moved by a rebalance or a shutdown is allocated again at once, as
		// Shardcake assigns it, rather than on its next message as in Akka: the new member
		// takes its share now, and `rebalance plan` predicts where shards end up.
		if len(c.waiting[m.Shard]) == 0 && !c.dir.Stopped {
			c.waiting[m.Shard] = []membership.NodeID{c.self}
		}
		if c.placeNext(m.Shard, h) {
			return
		}
	}
	c.allocateWaiting(m.Shard)
}

func (c *Coordinator) deallocate(s shard.ID) {
	if a := c.shards[s]; a != nil {
		if r := c.regions[a.region]; r != nil {
			delete(r.shards, s)
		}
	}
	delete(c.shards, s)
	delete(c.handoffs, s)
}

// failHandoff gives up on a handoff that timed out: the shard stays where it was, and the
// regions that asked meanwhile are told so.
func (c *Coordinator) failHandoff(s shard.ID, h *handoff) {
	waiting := slices.Sorted(maps.Keys(h.waiting))
	delete(c.handoffs, s)
	c.emit(HandoffFailed{Shard: s, Epoch: h.epoch, Phase: h.phase, Waiting: waiting})
	if a := c.shards[s]; a != nil {
		c.restamp(s, a)
		for _, req := range h.requesters {
			c.send(req, ShardHome{Shard: s, Region: a.region, Epoch: a.epoch})
		}
	}
}

// terminateCause says why a region's member is gone: mem is its record now (ok false when
// there is none).
func terminateCause(r *region, mem membership.Member, ok bool) Cause {
	switch {
	case ok && mem.Incarnation != r.incarnation:
		return CauseRestarted
	case r.lastStatus == membership.Down:
		return CauseMemberDowned
	case r.lastStatus == membership.Leaving || r.lastStatus == membership.Exiting:
		return CauseMemberLeft
	}
	return CauseMemberRemoved
}

// terminate forgets a region whose member is gone (for cause): its shards are deallocated
// (its lease ran out before it was removed, so nothing runs there any more).
func (c *Coordinator) terminate(r *region, cause Cause) {
	shards := slices.Sorted(maps.Keys(r.shards))
	handedOver := map[shard.ID]*handoff{} // the handoffs of r's shards that named a next home
	for _, s := range shards {
		if a := c.shards[s]; a != nil && a.region == r.node {
			delete(c.shards, s)
			c.moved[s] = moved{from: r.node, cause: cause}
			if h := c.handoffs[s]; h != nil {
				delete(c.handoffs, s)
				c.await(s, h.requesters...)
				if h.next != "" {
					handedOver[s] = h
				}
			}
		}
	}
	for _, h := range c.handoffs {
		delete(h.waiting, r.node)
		if h.next == r.node {
			h.next = "" // gone before the shard reached it: allocated after the stop as without one
		}
	}
	delete(c.regions, r.node)
	c.emit(RegionTerminated{Region: r.node, Shards: shards})
	if c.cfg.RememberEntities {
		for _, s := range shards {
			c.want(s) // its remembered entities start again elsewhere now
		}
	} else if c.cfg.DurableShards && len(shards) > 0 {
		c.shardsLoaded = false // those with reminders start again elsewhere once read
	}
	for _, s := range c.sortedHandoffs() {
		c.advanceHandoff(s, c.handoffs[s])
	}
	for _, s := range shards {
		// A shard whose next home was named goes there: it may have started there on the
		// old home's word before the old home went.
		if h := handedOver[s]; h == nil || !c.placeNext(s, h) {
			c.allocateWaiting(s)
		}
	}
}

// progress finishes recovery when every region has reported, and serves held requests.
func (c *Coordinator) progress() {
	if !c.recovered && c.recoveryDone() {
		c.recovered = true
		c.minReached = len(c.shards) > 0
		c.lastRebalance = c.now
		c.emit(Recovered{Term: c.term, Regions: len(c.regions), Shards: len(c.shards), Took: c.now.Sub(c.started)})
		for _, id := range c.sortedRegions() {
			if r := c.regions[id]; r.shuttingDown {
				for _, s := range slices.Sorted(maps.Keys(r.shards)) {
					c.startHandoff(s, CauseShutdown)
				}
			}
		}
		c.loadShards()
	}
	if !c.active() {
		return
	}
	for _, s := range c.sortedWaiting() {
		c.allocateWaiting(s)
	}
}

// recoveryDone reports whether every member that may host shards has answered: registered
// its region with what it hosts, or said it runs none. That is every member with the role
// but those Joining (never given shards) and Removed (whose lease has certainly run out): a
// Down member may still host shards until it is removed. It asks those that have not
// answered, every RecoveryTimeout. There is no time limit: a member that does not answer
// (unreachable, dead) is waited for until it answers or is removed, since it may host shards
// that must not be allocated twice.
func (c *Coordinator) recoveryDone() bool {
	if !c.serving {
		return false
	}
	done := true
	for _, id := range slices.Sorted(maps.Keys(c.members)) {
		m := c.members[id]
		if !m.HasRole(c.cfg.Role) || m.Status == membership.Joining || m.Status == membership.WeaklyUp || m.Status == membership.Removed {
			continue
		}
		if r := c.regions[id]; r != nil && r.incarnation == m.Incarnation {
			continue
		}
		if c.declined[id] == m.Incarnation {
			continue
		}
		done = false
		if c.now.Sub(c.asked[id]) >= c.cfg.RecoveryTimeout {
			c.asked[id] = c.now
			c.send(id, RequestRegister{})
		}
	}
	return done
}

// loadShards asks for the remembered shards once the coordinator is active (again after a
// failure, every RecoveryTimeout).
func (c *Coordinator) loadShards() {
	if !c.cfg.RememberEntities && !c.cfg.DurableShards || c.shardsLoaded || c.loadOut || !c.active() || c.dir.Stopped || c.now.Before(c.loadAt) {
		return
	}
	c.loadOut = true
	c.out.LoadShards = true
}

// ShardsLoaded answers LoadShards: the shards that hold remembered entities, or the error
// that kept them from being read (asked again after RecoveryTimeout). Those without a home
// are allocated now.
func (c *Coordinator) ShardsLoaded(now time.Time, ids []shard.ID, err error) {
	c.now = now
	if !c.loadOut {
		return
	}
	c.loadOut = false
	if err != nil {
		c.loadAt = now.Add(c.cfg.RecoveryTimeout)
		return
	}
	c.shardsLoaded = true
	for _, s := range slices.Sorted(slices.Values(ids)) {
		if c.shards[s] == nil {
			c.want(s)
		}
	}
	c.progress()
}

// want queues shard s for allocation on this coordinator's own behalf.
func (c *Coordinator) want(s shard.ID) { c.await(s, c.self) }

// await queues regions for shard s's home, each once.
func (c *Coordinator) await(s shard.ID, regions ...membership.NodeID) {
	for _, id := range regions {
		if !slices.Contains(c.waiting[s], id) {
			c.waiting[s] = append(c.waiting[s], id)
		}
	}
}

// Allocation returns the home of a shard, for inspection.
func (c *Coordinator) Allocation(s shard.ID) (membership.NodeID, Epoch, bool) {
	a := c.shards[s]
	if a == nil {
		return "", 0, false
	}
	return a.region, a.epoch, true
}

// Allocations returns every shard's home.
func (c *Coordinator) Allocations() map[shard.ID]membership.NodeID {
	out := make(map[shard.ID]membership.NodeID, len(c.shards))
	for s, a := range c.shards {
		out[s] = a.region
	}
	return out
}

// Handoff describes a handoff in progress, for inspection.
type Handoff struct {
	Shard   shard.ID
	From    membership.NodeID
	Epoch   Epoch
	Phase   Phase
	Cause   Cause
	Elapsed time.Duration // since the handoff began
	// PhaseElapsed is the time in the current phase.
	PhaseElapsed time.Duration
	// Waiting are the regions whose BeginHandOffAck is outstanding (PhaseBegun).
	Waiting []membership.NodeID
	// Next is the shard's next home, named when its old home was told to stop ("" none).
	Next membership.NodeID
}

// Handoffs returns the handoffs in progress.
func (c *Coordinator) Handoffs() []Handoff {
	out := make([]Handoff, 0, len(c.handoffs))
	for _, s := range c.sortedHandoffs() {
		h := c.handoffs[s]
		out = append(out, Handoff{Shard: s, From: h.from, Epoch: h.epoch, Phase: h.phase, Cause: h.cause, Elapsed: c.now.Sub(h.began),
			PhaseElapsed: c.now.Sub(h.phaseStart), Waiting: slices.Sorted(maps.Keys(h.waiting)), Next: h.next})
	}
	return out
}

// incarnationOf returns the incarnation of the region on member id (0 if none registered).
func (c *Coordinator) incarnationOf(id membership.NodeID) uint64 {
	if r := c.regions[id]; r != nil {
		return r.incarnation
	}
	return 0
}

func (c *Coordinator) send(to membership.NodeID, msg Message) {
	c.out.Messages = append(c.out.Messages, Envelope{To: to, Msg: msg})
}

func (c *Coordinator) emit(e Event) { c.out.Events = append(c.out.Events, e) }

func (c *Coordinator) sortedRegions() []membership.NodeID { return slices.Sorted(maps.Keys(c.regions)) }
func (c *Coordinator) sortedShards() []shard.ID           { return slices.Sorted(maps.Keys(c.shards)) }
func (c *Coordinator) sortedHandoffs() []shard.ID         { return slices.Sorted(maps.Keys(c.handoffs)) }
func (c *Coordinator) sortedWaiting() []shard.ID          { return slices.Sorted(maps.Keys(c.waiting)) }

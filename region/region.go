package region

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/shardmesh/shardmesh/coordinator"
	"github.com/shardmesh/shardmesh/membership"
	"github.com/shardmesh/shardmesh/shard"
)

type home struct {
	node  membership.NodeID
	epoch coordinator.Epoch
}

type buffer struct {
	envs      []Envelope
	requested time.Time // when GetShardHome was last sent for it
}

type local struct {
	epoch    coordinator.Epoch
	stopping bool
	// next is the shard's next home the coordinator named with HandOff: once stopped, this
	// region tells it (HandedOver) and sends it what it holds for the shard.
	next      membership.NodeID
	nextEpoch coordinator.Epoch
}

// awaited is a shard this region is named the next home of (HostShard with After): it
// starts it under epoch once member after reports afterEpoch stopped (HandedOver).
type awaited struct {
	epoch, afterEpoch coordinator.Epoch
	after             membership.NodeID
}

// handedOver is a HandedOver that came before its naming (HostShard with After).
type handedOver struct {
	from  membership.NodeID
	epoch coordinator.Epoch
}

// Region is the shard region of one entity type on one member. It is not safe for
// concurrent use.
type Region struct {
	cfg         Config
	self        membership.NodeID
	incarnation uint64
	proxy       bool

	members     map[membership.NodeID]membership.Member
	unreachable map[membership.NodeID]bool
	serving     bool

	coordinator  membership.NodeID
	registered   bool
	lastRegister time.Time

	// noNewShards: this member takes no new shards now (SetNoNewShards); sentNoNew is the
	// value of the last Register sent, ackedNoNew of the last one acknowledged.
	noNewShards, sentNoNew, ackedNoNew bool

	homes      map[shard.ID]home
	buffers    map[shard.ID]*buffer
	buffered   int
	handingOff map[shard.ID]coordinator.Epoch
	local      map[shard.ID]*local
	awaited    map[shard.ID]awaited    // shards named here as their next home, not yet started
	handed     map[shard.ID]handedOver // HandedOver notes that came before their naming

	shuttingDown    bool
	shutdownDone    bool
	outOfService    bool
	lastShutdownReq time.Time

	now time.Time
	out []Output
}

// New returns the region of member self (incarnation inc). cfg is completed with defaults.
func New(cfg Config, self membership.NodeID, incarnation uint64, now time.Time) *Region {
	d := DefaultConfig(cfg.TypeName)
	if cfg.BufferSize == 0 {
		cfg.BufferSize = d.BufferSize
	}
	if cfg.RetryInterval == 0 {
		cfg.RetryInterval = d.RetryInterval
	}
	return &Region{
		cfg:         cfg,
		self:        self,
		incarnation: incarnation,
		proxy:       cfg.Proxy,
		members:     map[membership.NodeID]membership.Member{},
		unreachable: map[membership.NodeID]bool{},
		homes:       map[shard.ID]home{},
		buffers:     map[shard.ID]*buffer{},
		handingOff:  map[shard.ID]coordinator.Epoch{},
		local:       map[shard.ID]*local{},
		awaited:     map[shard.ID]awaited{},
		handed:      map[shard.ID]handedOver{},
		now:         now,
	}
}

// HasOutput reports whether outputs wait for Ready.
func (r *Region) HasOutput() bool { return len(r.out) > 0 }

// Ready returns and clears what the region wants done, in order.
func (r *Region) Ready() []Output {
	out := r.out
	r.out = nil
	return out
}

// Proxy reports whether the region only routes (its member lacks the role).
func (r *Region) Proxy() bool { return r.proxy }

// Coordinator returns the member the region takes for the coordinator's ("" none).
func (r *Region) Coordinator() membership.NodeID { return r.coordinator }

// Registered reports whether the current coordinator acknowledged this region.
func (r *Region) Registered() bool { return r.registered }

// Buffered returns how many messages wait for a home.
func (r *Region) Buffered() int { return r.buffered }

// LocalShards returns the shards hosted here and whether each is stopping.
func (r *Region) LocalShards() map[shard.ID]bool {
	out := make(map[shard.ID]bool, len(r.local))
	for s, l := range r.local {
		out[s] = l.stopping
	}
	return out
}

// Home returns the home the region knows for a shard.
func (r *Region) Home(s shard.ID) (membership.NodeID, coordinator.Epoch, bool) {
	h, ok := r.homes[s]
	return h.node, h.epoch, ok
}

// Update gives the region the current membership. It registers with a new coordinator and
// forgets homes on members that left.
func (r *Region) Update(now time.Time, m Members) {
	r.now = now
	r.serving = m.Serving
	r.members = make(map[membership.NodeID]membership.Member, len(m.Members))
	for _, mem := range m.Members {
		r.members[mem.Node] = mem
	}
	r.unreachable = m.Unreachable
	if me, ok := r.members[r.self]; ok && !me.HasRole(r.cfg.Role) {
		r.proxy = true
	}
	if m.Coordinator != r.coordinator {
		r.coordinator, r.registered = m.Coordinator, false
		r.forgetNamings()
		r.register()
	}
	for _, s := range slices.Sorted(maps.Keys(r.homes)) {
		if h := r.homes[s]; h.node != r.self && !r.live(h.node) {
			delete(r.homes, s) // its member is gone: ask again
			if b := r.buffers[s]; b != nil {
				// Messages held for that member (unreachable until now) need the next home
				// at once, not at the next tick: after a member's removal this is what its
				// shards' senders wait for.
				r.requestHome(s, b)
			}
		}
	}
	r.flushAll() // homes, reachability or serving may have changed
}

// live reports whether a member can take messages: Up or Leaving, the incarnation known.
func (r *Region) live(node membership.NodeID) bool {
	m, ok := r.members[node]
	return ok && (m.Status == membership.Up || m.Status == membership.Leaving)
}

// RouteKind says what became of a message given to Deliver.
type RouteKind uint8

// Routing decisions.
const (
	Buffered  RouteKind = iota // kept until its shard's home is known and usable
	Local                      // for a local shard: the caller delivers Routed.Envelope to it
	Forwarded                  // for another member's region: the caller sends it to Routed.To
	Refused                    // not kept: Routed.Err says why; the sender should be told
)

// Routed is the decision for one message. Deliver returns it instead of emitting an output,
// so the hot path allocates nothing; messages released from a buffer later come out as
// DeliverLocal, Forward and Rejected outputs.
type Routed struct {
	Kind     RouteKind
	To       membership.NodeID
	Envelope Envelope // with Hops counted for a forward
	Err      error
}

// Deliver routes a message (from a local sender or forwarded by another region).
func (r *Region) Deliver(now time.Time, env Envelope) Routed {
	r.now = now
	return r.route(env, false)
}

// Bounce takes back envelopes a local shard could not deliver (it was stopping); they are
// older than anything buffered since, so they go to the front of the shard's buffer.
func (r *Region) Bounce(now time.Time, envs []Envelope) {
	r.now = now
	for i := len(envs) - 1; i >= 0; i-- {
		r.emitRouted(r.route(envs[i], true))
	}
}

// route decides where a message goes; buffering happens here, the rest is the caller's.
func (r *Region) route(env Envelope, front bool) Routed {
	if env.Hops > MaxHops {
		return Routed{Kind: Refused, Envelope: env, Err: ErrTooManyHops}
	}
	if r.shutdownDone {
		// Done handing off: this member hosts nothing more and is about to exit. What a
		// sender with a stale home forwarded here goes back to it, which asks the
		// coordinator and routes it again (refusing it made an ask fail in a rolling
		// restart). What this member's own clients send it still routes, asking the
		// coordinator for the home, while it has one to ask.
		switch {
		case env.Epoch != 0:
			nh := &NotHomeError{Shard: env.Shard, Epoch: env.Epoch}
			if h, ok := r.homes[env.Shard]; ok && h.node != r.self {
				nh.Home, nh.HomeEpoch = h.node, h.epoch // the next home it handed the shard to
			}
			return Routed{Kind: Refused, Envelope: env, Err: nh}
		case !r.registered:
			return Routed{Kind: Refused, Envelope: env, Err: ErrShuttingDown}
		}
	}
	if r.outOfService {
		return Routed{Kind: Refused, Envelope: env, Err: ErrTypeStopped}
	}
	s := env.Shard
	// (The length checks skip two lookups per message while nothing is handed off or buffered.)
	if len(r.handingOff) > 0 {
		if _, handing := r.handingOff[s]; handing {
			return r.buffer(env, front)
		}
	}
	if len(r.awaited) > 0 {
		if _, ok := r.awaited[s]; ok {
			return r.buffer(env, front) // the next home of s: held until the shard starts here
		}
	}
	if !front && len(r.buffers) > 0 && r.buffers[s] != nil {
		return r.buffer(env, front)
	}
	h, ok := r.homes[s]
	switch {
	case !ok:
		return r.buffer(env, front)
	case h.node == r.self:
		l := r.local[s]
		if l == nil || l.stopping || !r.serving {
			return r.buffer(env, front)
		}
		return Routed{Kind: Local, Envelope: env}
	case r.unreachable[h.node]:
		return r.buffer(env, front) // keep it until the member is reachable again or the shard moves
	case env.Epoch != 0:
		// Forwarded here as to the home, which this member no longer is: the sender learns
		// the home it knows and routes the message again, rather than it taking a detour.
		return Routed{Kind: Refused, Envelope: env, Err: &NotHomeError{Shard: s, Epoch: env.Epoch, Home: h.node, HomeEpoch: h.epoch}}
	default:
		env.Hops++
		env.Epoch = h.epoch
		return Routed{Kind: Forwarded, To: h.node, Envelope: env}
	}
}

// NotHome takes back a message this region forwarded to member from, which refused it as no
// longer the shard's home (nh): the stale home is dropped — replaced by the refusing
// member's, when that one is newer — and the message is routed again (a bounce counts as a
// hop). Only the member this region takes for the home changes what it knows of the home:
// a refusal from any other member (a home that changed meanwhile, or one that never was)
// only routes the message again.
func (r *Region) NotHome(now time.Time, from membership.NodeID, env Envelope, nh *NotHomeError) {
	r.now = now
	if h, ok := r.homes[env.Shard]; ok && h.node == from && h.node != r.self && h.epoch <= nh.Epoch {
		if nh.Home == "" || nh.HomeEpoch <= h.epoch || !r.setHome(env.Shard, nh.Home, nh.HomeEpoch) {
			delete(r.homes, env.Shard) // ask the coordinator
		}
	}
	env.Epoch = 0
	env.Hops++
	r.emitRouted(r.route(env, false))
}

// emitRouted turns a decision on a message released from a buffer into an output.
func (r *Region) emitRouted(d Routed) {
	switch d.Kind {
	case Local:
		r.emit(DeliverLocal{Envelope: d.Envelope})
	case Forwarded:
		r.emit(Forward{To: d.To, Envelope: d.Envelope})
	case Refused:
		r.reject(d.Envelope, d.Err)
	}
}

// buffer keeps an envelope until its shard's home is known and usable, and asks for the home.
func (r *Region) buffer(env Envelope, front bool) Routed {
	if r.buffered >= r.cfg.BufferSize && !front { // what comes back is kept whatever the bound

		return Routed{Kind: Refused, Envelope: env, Err: ErrBufferFull}
	}
	b := r.buffers[env.Shard]
	if b == nil {
		b = &buffer{}
		r.buffers[env.Shard] = b
	}
	if front {
		b.envs = slices.Insert(b.envs, 0, env)
	} else {
		b.envs = append(b.envs, env)
	}
	r.buffered++
	if _, ok := r.homes[env.Shard]; !ok {
		r.requestHome(env.Shard, b)
	}
	return Routed{Kind: Buffered, Envelope: env}
}

func (r *Region) requestHome(s shard.ID, b *buffer) {
	if !r.registered || (!b.requested.IsZero() && r.now.Sub(b.requested) < r.cfg.RetryInterval) {
		return
	}
	b.requested = r.now
	r.toCoordinator(coordinator.GetShardHome{Shard: s})
}

// flush routes a shard's buffered messages if its home is now usable.
func (r *Region) flush(s shard.ID) {
	if r.buffers[s] == nil || !r.usable(s) {
		return
	}
	for _, env := range r.takeBuffer(s).envs {
		r.emitRouted(r.route(env, false))
	}
}

// usable reports whether messages for s can leave the buffer now.
func (r *Region) usable(s shard.ID) bool {
	if _, handing := r.handingOff[s]; handing {
		return false
	}
	if _, ok := r.awaited[s]; ok {
		return false
	}
	h, ok := r.homes[s]
	switch {
	case !ok:
		return false
	case h.node == r.self:
		l := r.local[s]
		return l != nil && !l.stopping && r.serving
	default:
		return !r.unreachable[h.node]
	}
}

// takeBuffer removes shard s's buffer (nil if none) and returns it.
func (r *Region) takeBuffer(s shard.ID) *buffer {
	b := r.buffers[s]
	if b != nil {
		delete(r.buffers, s)
		r.buffered -= len(b.envs)
	}
	return b
}

func (r *Region) flushAll() {
	for _, s := range slices.Sorted(maps.Keys(r.buffers)) {
		r.flush(s)
	}
}

// Step feeds a coordinator protocol message from member from.
func (r *Region) Step(now time.Time, from membership.NodeID, msg coordinator.Message) {
	r.now = now
	if m, ok := msg.(coordinator.HandedOver); ok {
		r.handedOver(from, m)
		return
	}
	if _, ask := msg.(coordinator.RequestRegister); !ask && from != r.coordinator {
		// Only the coordinator this region follows may give homes and handoff orders: a
		// previous coordinator that has not stopped yet must not allocate behind the back of
		// the current one (which would never learn of the shard).
		return
	}
	switch m := msg.(type) {
	case coordinator.RegisterAck:
		r.ackedNoNew = r.sentNoNew
		if !r.registered {
			r.registered = true
			for _, s := range slices.Sorted(maps.Keys(r.buffers)) {
				if _, ok := r.homes[s]; !ok {
					r.buffers[s].requested = time.Time{}
					r.requestHome(s, r.buffers[s])
				}
			}
			if r.shuttingDown {
				r.lastShutdownReq = now
				r.toCoordinator(coordinator.GracefulShutdownReq{})
			}
		}
	case coordinator.RequestRegister:
		r.registerWith(from)
	case coordinator.ShardHome:
		r.shardHome(m.Shard, m.Region, m.Epoch)
	case coordinator.HostShard:
		if r.proxy || (m.Incarnation != 0 && m.Incarnation != r.incarnation) {
			return // for another process of this member: a restarted one must not obey it
		}
		if m.After != "" {
			r.await(m)
			return
		}
		r.hostStarted(m.Shard, m.Epoch)
	case coordinator.BeginHandOff:
		if h, ok := r.homes[m.Shard]; !ok || h.epoch <= m.Epoch {
			delete(r.homes, m.Shard)
			if e, ok := r.handingOff[m.Shard]; !ok || e < m.Epoch {
				r.handingOff[m.Shard] = m.Epoch
			}
		}
		r.send(from, coordinator.BeginHandOffAck(m))
	case coordinator.HandOff:
		l := r.local[m.Shard]
		switch {
		case l == nil || l.epoch > m.Epoch:
			r.send(from, coordinator.ShardStopped{Shard: m.Shard, Epoch: m.Epoch}) // nothing of that epoch (or an older one) here
		case !l.stopping:
			// A newer epoch than the local one is this same allocation re-stamped by the
			// coordinator (the HostShard that told so may still be on its way): stop it.
			l.epoch, l.stopping = m.Epoch, true
			l.next, l.nextEpoch = m.Next, m.NextEpoch
			if h, ok := r.homes[m.Shard]; ok && h.node == r.self {
				delete(r.homes, m.Shard)
			}
			r.emit(StopShard{Shard: m.Shard, Epoch: m.Epoch})
		case l.epoch == m.Epoch && l.next == "":
			l.next, l.nextEpoch = m.Next, m.NextEpoch // sent again after handoff-timeout, now naming the next home
		}
	default:
		panic(fmt.Sprintf("region: unexpected coordinator message %T", msg))
	}
}

// shardHome records a home the coordinator gave, unless a handoff or a newer home makes it
// stale, and flushes the shard's buffer. Only HostShard starts a shard here: a ShardHome
// naming this member that finds the shard not hosted here (one meant for a previous process
// of this member, or a gossip hint that overtook its HostShard) is not a home until
// HostShard comes.
func (r *Region) shardHome(s shard.ID, node membership.NodeID, epoch coordinator.Epoch) {
	if node == r.self {
		if l := r.local[s]; l == nil || l.epoch < epoch {
			return
		}
	}
	if b := r.buffers[s]; b != nil && node != r.self && !r.live(node) {
		// A home on a member this region already saw leave (the coordinator has not yet):
		// ask again at the next tick rather than after retry-interval.
		b.requested = time.Time{}
	}
	if r.setHome(s, node, epoch) {
		r.flush(s)
	}
}

// hostStarted starts shard s here under epoch (host) and tells the coordinator once it runs
// under that epoch.
func (r *Region) hostStarted(s shard.ID, epoch coordinator.Epoch) {
	r.host(s, epoch)
	if l := r.local[s]; l != nil && l.epoch == epoch {
		r.toCoordinator(coordinator.ShardStarted{Shard: s, Epoch: epoch})
	}
}

// host starts shard s here under epoch (HostShard), unless it is stale.
func (r *Region) host(s shard.ID, epoch coordinator.Epoch) {
	if a, ok := r.awaited[s]; ok && a.epoch <= epoch {
		delete(r.awaited, s)
	}
	delete(r.handed, s)
	if !r.setHome(s, r.self, epoch) {
		return
	}
	if l := r.local[s]; l == nil || (l.epoch < epoch && !l.stopping) {
		r.local[s] = &local{epoch: epoch}
		r.emit(StartShard{Shard: s, Epoch: epoch})
	}
	r.flush(s)
}

// setHome records a home unless a handoff or a newer home makes it stale; false if stale.
func (r *Region) setHome(s shard.ID, node membership.NodeID, epoch coordinator.Epoch) bool {
	if e, handing := r.handingOff[s]; handing && epoch <= e {
		return false
	}
	if h, ok := r.homes[s]; ok && h.epoch > epoch {
		return false
	}
	if node != r.self && !r.live(node) {
		return false // a home on a member that is gone: ask again later
	}
	delete(r.handingOff, s)
	r.homes[s] = home{node: node, epoch: epoch}
	return true
}

// LocalShardStopped reports that a local shard stopped all its entities (after StopShard):
// entities incarnations were stopped.
func (r *Region) LocalShardStopped(now time.Time, s shard.ID, entities int) {
	r.now = now
	l := r.local[s]
	if l == nil {
		return
	}
	delete(r.local, s)
	if h, ok := r.homes[s]; ok && h.node == r.self {
		delete(r.homes, s)
	}
	r.toCoordinator(coordinator.ShardStopped{Shard: s, Epoch: l.epoch, Entities: entities})
	if l.next != "" {
		// Straight to the next home: it takes the shard on this word, and what this region
		// held for the shard goes on there now (one hop, not back to its senders as "not
		// the home", nor after the coordinator answers). A sender's later messages, sent to
		// the next home directly, may arrive there first, as in Akka, where both wait for
		// the coordinator's answer and race to the new home.
		r.send(l.next, coordinator.HandedOver{Shard: s, Epoch: l.epoch})
		if r.setHome(s, l.next, l.nextEpoch) {
			if b := r.takeBuffer(s); b != nil {
				for _, env := range b.envs {
					if env.Hops > 0 {
						// Forwarded here: on to the next home, not refused as sent to a
						// former one. A message of this member's own stamped with the
						// shard's epoch (a reminder's firing) must not leave it: refused.
						env.Epoch = 0
					}
					r.emitRouted(r.route(env, false))
				}
			}
		}
	}
	if b := r.buffers[s]; b != nil {
		b.requested = time.Time{}
		r.requestHome(s, b)
	}
	r.checkShutdown()
}

// await records that the coordinator named this region the next home of a shard (HostShard
// with After): its messages are held here until the old home reports the shard stopped
// (HandedOver), or the coordinator's own HostShard comes.
func (r *Region) await(m coordinator.HostShard) {
	if l := r.local[m.Shard]; l != nil && l.epoch >= m.Epoch {
		return // started already (the coordinator's HostShard overtook this one)
	}
	if h, ok := r.homes[m.Shard]; ok && h.epoch >= m.Epoch {
		return
	}
	delete(r.homes, m.Shard) // an older home: what comes for the shard now waits here
	a := awaited{epoch: m.Epoch, after: m.After, afterEpoch: m.AfterEpoch}
	if h, ok := r.handed[m.Shard]; ok && h.from == a.after && h.epoch == a.afterEpoch {
		r.hostStarted(m.Shard, m.Epoch) // the old home's word came first
		return
	}
	r.awaited[m.Shard] = a
}

// handedOver takes the word of member from that it stopped a shard's allocation (the
// shard's old home, after a HandOff naming this region the next home): the shard starts
// here if the coordinator this region follows named it so. A word that comes before the
// naming is kept for it; any other is ignored.
func (r *Region) handedOver(from membership.NodeID, m coordinator.HandedOver) {
	a, ok := r.awaited[m.Shard]
	switch {
	case !ok:
		if _, handing := r.handingOff[m.Shard]; handing && !r.proxy {
			// Kept while the shard's handoff runs here (so never more than the shards).
			r.handed[m.Shard] = handedOver{from: from, epoch: m.Epoch}
		}
	case a.after == from && a.afterEpoch == m.Epoch:
		r.hostStarted(m.Shard, a.epoch)
	}
}

// forgetNamings drops the next homes named by the coordinator this region followed until
// now: a new coordinator allocates on its own (what this region hosts, it reports).
func (r *Region) forgetNamings() {
	clear(r.awaited)
	clear(r.handed)
	for _, l := range r.local {
		l.next, l.nextEpoch = "", 0
	}
}

// GracefulShutdown hands off every local shard and then reports ShutdownComplete.
func (r *Region) GracefulShutdown(now time.Time) {
	r.now = now
	if r.shuttingDown {
		return
	}
	r.shuttingDown = true
	if r.registered {
		r.lastShutdownReq = now
		r.toCoordinator(coordinator.GracefulShutdownReq{})
	}
	r.checkShutdown()
}

func (r *Region) checkShutdown() {
	if r.shuttingDown && !r.shutdownDone && len(r.local) == 0 && r.buffered == 0 {
		r.shutdownDone = true
		r.emit(ShutdownComplete{})
	}
}

// Tick repeats what is unanswered: registration, home requests, the shutdown request.
func (r *Region) Tick(now time.Time) {
	r.now = now
	if r.coordinator != "" && (!r.registered || r.ackedNoNew != r.noNewShards) && now.Sub(r.lastRegister) >= r.cfg.RetryInterval {
		r.register()
	}
	if r.registered {
		for _, s := range slices.Sorted(maps.Keys(r.buffers)) {
			if _, ok := r.homes[s]; !ok {
				r.requestHome(s, r.buffers[s])
			}
		}
		if r.shuttingDown && !r.shutdownDone && len(r.local) > 0 && now.Sub(r.lastShutdownReq) >= r.cfg.RetryInterval {
			r.lastShutdownReq = now
			r.toCoordinator(coordinator.GracefulShutdownReq{})
		}
	}
	r.flushAll()
	r.checkShutdown()
}

// register announces this region, with its shards, to the coordinator.
func (r *Region) register() {
	if r.coordinator == "" {
		return
	}
	r.lastRegister = r.now
	r.registerWith(r.coordinator)
}

// registerWith announces this region to member to (a coordinator that asked).
func (r *Region) registerWith(to membership.NodeID) {
	reg := coordinator.Register{Incarnation: r.incarnation, Proxy: r.proxy, NoNewShards: r.noNewShards}
	r.sentNoNew = r.noNewShards
	for _, s := range slices.Sorted(maps.Keys(r.local)) {
		l := r.local[s]
		state := coordinator.HostedActive
		if l.stopping {
			state = coordinator.HostedStopping
		}
		reg.Hosted = append(reg.Hosted, coordinator.Hosted{Shard: s, Epoch: l.epoch, State: state})
	}
	r.send(to, reg)
}

// Held returns every envelope the region holds (buffered), for accounting when the
// member dies.
func (r *Region) Held() []Envelope {
	var out []Envelope
	for _, s := range slices.Sorted(maps.Keys(r.buffers)) {
		out = append(out, r.buffers[s].envs...)
	}
	return out
}

func (r *Region) toCoordinator(msg coordinator.Message) {
	if r.coordinator != "" {
		r.emit(ToCoordinator{To: r.coordinator, Msg: msg})
	}
}

func (r *Region) send(to membership.NodeID, msg coordinator.Message) {
	r.emit(ToCoordinator{To: to, Msg: msg})
}

func (r *Region) reject(env Envelope, err error) { r.emit(Rejected{Envelope: env, Err: err}) }

func (r *Region) emit(o Output) { r.out = append(r.out, o) }

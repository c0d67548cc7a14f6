package membership

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"time"
)

// Node is one member's membership state machine. It is not safe for concurrent use: one
// driver loop owns it.
type Node struct {
	cfg  Config
	self Member // this incarnation as it introduces itself (status is read from the view)

	v              view
	joined         bool // formed a cluster or was admitted to one
	leaveRequested bool
	exitingSince   time.Time // when this member saw itself Exiting; zero: it has not
	stopped        *Stopped

	seeds        []NodeID
	lastJoinSent time.Time
	boot         *seedBootstrap // JoinSeeds' list and the answers to it (bootstrap.go); nil: none

	peers map[NodeID]*peer // failure detection and last reported digest per member heartbeats go to or come from

	// The topology (topology.go), recomputed at every change of the view: the ring of members
	// by hash, the members this one exchanges heartbeats with, and the whole of the voters.
	ring         []NodeID
	neighbors    map[NodeID]bool
	neighborList []NodeID // neighbors, sorted: what iterates them must be deterministic
	whole        []*Member
	ringHashes   map[NodeID]uint64 // ringHash of every member ever known

	hbSeq         uint64
	lastHeartbeat time.Time
	beatsSent     [beatRing]beatSent // when the latest regular heartbeats left, by Seq
	lastGossip    time.Time
	lastPull      time.Time // when a heartbeat reporting an unknown view last started an exchange (pull)
	pullDue       NodeID    // a member a pull was put off for (pull), "" if none

	digest      uint64
	pastDigests [pastDigestRing]pastDigest // digests this member's view had before, newest last
	dirty       bool                       // the view changed since the last flush
	announceDue bool                       // the digest changed since the last announce
	announced   [2]time.Time               // the last two announcements, oldest first
	changes     uint64                     // flushes so far: see Changes
	memberRev   uint64                     // flushes that wrote member records: see MemberChanges
	leader      NodeID
	unreachable map[NodeID]bool

	// converged is Convergence's last answer, good while changes is convergedAt and no peer
	// reported another digest since (convergedOK).
	converged, convergedOK bool
	convergedAt            uint64

	sbrSignature   string        // the unreachable set and counted members when it last changed
	sbrSince       time.Time     // when sbrSignature last changed
	pvRecords      []reachRecord // the resolver's reading of the observations at pvRecordsAt (resolverView)
	pvRecordsAt    uint64
	pvObservations uint64              // pvRecords' observations
	pvByObserver   map[NodeID][]NodeID // pvRecords by observer and by subject
	pvBySubject    map[NodeID][]NodeID
	resolvedAt     time.Time      // when the resolver last looked (resolveSplitBrain)
	ticking        bool           // a tick is under way: the resolver looks on ticks
	viewAt         time.Time      // when the view last changed (its digest)
	decidedAt      time.Time      // when the unreachable set or a status last changed: what restarts stable-after
	observations   uint64         // a hash of who cannot reach whom when it last changed (down-all-when-unstable)
	unstableSince  time.Time      // its first change since the last decision or calm
	leaseWait      *leaseDecision // a decision waiting for the resolver's lease (lease-majority)
	leaseRelease   *leaseRelease  // the resolver's lease held, and when to release it
	leaseSeq       uint64         // the last acquisition of the resolver's lease asked for

	noConvergenceSince time.Time // since when the leader, with something to do, has not seen convergence (allow-weakly-up-members)
	downSeen           map[NodeID]time.Time
	downConverged      map[NodeID]time.Time // when the leader first saw convergence with the member Down
	reported           map[NodeID]reported  // what emitChanges last reported per node
	lastExchange       map[NodeID]time.Time // when this member last started an exchange with each member, or told it its status
	viewChangedAt      time.Time            // when this member's view last changed
	rng                *rand.Rand           // whom to gossip with; seeded by the member's id and incarnation
	rejoins            int                  // join requests sent while Joining after joining (rejoin)

	lastInput time.Time
	// suspect is set when this member notices it was paused (a gap between ticks longer than
	// the acceptable heartbeat pause): the others may have downed and removed it meanwhile.
	// Until a majority answers a fresh probe confirming it is still a member, it must not
	// serve anything (Serving reports false).
	suspect     bool
	confirmedBy map[NodeID]bool

	now time.Time
	out Ready
}

type reported struct {
	known       bool
	incarnation uint64
	status      Status
}

// announceGap: a changed view is announced at most every gossip-interval / announceGap (20 ms
// by default), see announce.
const announceGap = 50

// pastDigestRing is how many of its earlier digests a member remembers: a peer that has not
// caught up with its latest change still grants the lease with the one before.
const pastDigestRing = 8

type pastDigest struct {
	digest uint64
	until  time.Time // when the view changed from it
}

// beatRing is how many of its own regular heartbeats a member remembers the send time of:
// an echo of an older one grants nothing.
const beatRing = 64

type beatSent struct {
	seq uint64
	at  time.Time
}

type peer struct {
	incarnation uint64
	beatSeq     uint64 // Seq of its latest regular heartbeat the failure detector counted
	fd          *phiDetector
	digest      uint64
	hasDigest   bool
	probeSeq    uint64
	lastProbe   time.Time
	freshSeq    uint64    // while suspect: the first probe seq sent after the pause
	askedAt     time.Time // its latest heartbeat that was not an Answer: it watches this member (heartbeatTargets)
	// agreedAt dates the latest grant of the majority lease from this member: a heartbeat
	// (or probe answer) carrying this member's own digest — evidence that its view equalled
	// one in which this member is Up — and echoing one of this member's heartbeats, dated
	// when that heartbeat was sent. The echo makes the grant end no later than the granting
	// member's failure detector can mark this one unreachable (see ServingUntil).
	agreedAt time.Time
}

// New returns the machine of member self (Status and UpNumber are ignored: the member starts
// Joining). cfg must have passed Validate.
func New(cfg Config, self Member, now time.Time) *Node {
	self.Status = Joining
	self.UpNumber = 0
	self.Roles = slices.Clone(self.Roles)
	slices.Sort(self.Roles)
	n := &Node{
		cfg:           cfg,
		self:          self,
		v:             newView(),
		peers:         map[NodeID]*peer{},
		neighbors:     map[NodeID]bool{},
		ringHashes:    map[NodeID]uint64{},
		unreachable:   map[NodeID]bool{},
		downSeen:      map[NodeID]time.Time{},
		downConverged: map[NodeID]time.Time{},
		reported:      map[NodeID]reported{},
		lastExchange:  map[NodeID]time.Time{},
		rng:           rand.New(rand.NewPCG(ringHash(self.Node), self.Incarnation)),
		now:           now,
	}
	return n
}

// ID returns this member's node id.
func (n *Node) ID() NodeID { return n.self.Node }

// FormCluster starts a new cluster with this member as its first member, as the first seed
// node of an Akka cluster joins itself.
func (n *Node) FormCluster(now time.Time) {
	n.now = now
	if n.joined || n.stopped != nil {
		return
	}
	n.joined = true
	me := n.self
	n.v.put(me.clone())
	n.dirty = true
	n.afterInput()
}

// JoinVia asks seed to admit this member, and keeps asking every seed-node-timeout until one
// of the seeds given so far admits it.
func (n *Node) JoinVia(now time.Time, seed NodeID) {
	n.now = now
	if n.joined || n.stopped != nil || seed == n.self.Node || slices.Contains(n.seeds, seed) {
		return
	}
	n.seeds = append(n.seeds, seed)
	n.send(seed, n.joinRequest())
	n.lastJoinSent = now
}

// Leave starts this member's graceful exit: Leaving, then Exiting and Removed by the leader.
// Asked before the member has joined, it leaves as soon as it has.
func (n *Node) Leave(now time.Time) {
	n.now = now
	n.leaveRequested = true
	if n.joined {
		n.setStatus(n.self.Node, Leaving)
		n.afterInput()
	}
}

// Down marks node Down, as an operator's `down` does. It reports false when node is not a
// current member.
func (n *Node) Down(now time.Time, node NodeID) bool {
	n.now = now
	m, ok := n.v.members[node]
	if !ok || !m.countsAsMember() || n.stopped != nil {
		return false
	}
	n.setStatus(node, Down)
	n.afterInput()
	return true
}

// Step feeds a message received from a peer. from is the authenticated sender (the origin of
// a gossip message, the remote peer of a stream).
func (n *Node) Step(now time.Time, from NodeID, msg Message) {
	n.now = now
	if n.stopped != nil {
		return
	}
	n.checkPause()
	switch m := msg.(type) {
	case Heartbeat:
		if m.From == from {
			var beat uint64
			if !m.Ack {
				beat = m.Seq
			}
			var echo uint64
			if m.EchoIncarnation == n.self.Incarnation {
				echo = m.EchoSeq
			}
			n.heard(m.From, m.Incarnation, m.Digest, !m.Ack, beat, echo)
			if !m.Answer {
				if p := n.peers[m.From]; p != nil && p.incarnation == m.Incarnation {
					p.askedAt = n.now
				}
			}
		}
	case ProbeAck:
		if m.From == from {
			n.heard(m.From, m.Incarnation, m.Digest, true, 0, m.YourBeat)
			n.confirm(m)
		}
	case Probe:
		if m.From == from && n.joined {
			ack := ProbeAck{From: n.self.Node, Incarnation: n.self.Incarnation, Seq: m.Seq, Digest: n.digest}
			if pm, ok := n.v.members[from]; ok {
				ack.YourIncarnation, ack.YourStatus = pm.Incarnation, pm.Status
			}
			if p := n.peers[from]; p != nil && p.incarnation == m.Incarnation {
				ack.YourBeat = p.beatSeq
			}
			n.send(from, ack)
		}
	case GossipStatus:
		if n.joined && m.From == from {
			n.answerStatus(m)
		}
	case Gossip:
		if !n.joined {
			break
		}
		if n.v.merge(&m.State) {
			n.dirty = true
		}
		if m.Reply && m.From == from {
			n.answerReply(m)
		}
	case JoinRequest:
		n.handleJoin(from, m)
	case JoinReply:
		n.handleJoinReply(from, m)
	case NotMember:
		n.handleNotMember(from, m)
	default:
		panic(fmt.Sprintf("membership: unknown message %T", msg))
	}
	n.afterInput()
}

// Tick advances time: heartbeats, failure detection, probes, gossip, join retries, leader
// actions and the split-brain resolver. Call it often (every 100 ms or so).
func (n *Node) Tick(now time.Time) {
	n.now = now
	if n.stopped != nil {
		return
	}
	n.checkPause()
	if !n.joined {
		if len(n.seeds) > 0 && now.Sub(n.lastJoinSent) >= n.cfg.SeedNodeTimeout {
			for _, s := range n.seeds {
				n.send(s, n.joinRequest())
			}
			n.lastJoinSent = now
		}
		n.bootstrapTick()
		return
	}
	if n.suspect {
		n.probeUnconfirmed(false)
	}
	if !n.exitingSince.IsZero() && now.Sub(n.exitingSince) >= n.cfg.ExitingTimeout {
		n.stop(StopLeft, fmt.Sprintf("left the cluster: Exiting for %v and not removed by a leader (every member left at once?)", n.cfg.ExitingTimeout))
		return
	}
	n.detectFailures()
	if now.Sub(n.lastHeartbeat) >= n.cfg.FailureDetector.HeartbeatInterval {
		n.heartbeat()
	}
	n.gossipTick()
	n.pullIfDue()
	n.rejoin()
	n.ticking = true
	n.afterInput()
	n.ticking = false
	n.announce()
}

// rejoin asks, every seed-node-timeout while this member is Joining, one Up member after
// another to admit it (again). The member that admitted it spreads the news by its gossip
// alone — the gossip of a member another does not know is not merged there (only admitted
// members' is) — and may stop before it told anyone: then only another admission makes this
// member known. A member that knows it already answers the retry as any; one that does not
// admits it as a join, checking its credential.
func (n *Node) rejoin() {
	me, ok := n.v.members[n.self.Node]
	if !ok || me.Status != Joining || n.now.Sub(n.lastJoinSent) < n.cfg.SeedNodeTimeout {
		return
	}
	var up []NodeID
	for id, m := range n.v.members {
		if m.Status == Up && id != n.self.Node {
			up = append(up, id)
		}
	}
	if len(up) == 0 {
		return // none to ask (a cluster that waits for min-nr-of-members moves nobody Up)
	}
	slices.Sort(up)
	n.rejoins++
	n.send(up[n.rejoins%len(up)], n.joinRequest())
	n.lastJoinSent = n.now
}

// Ready returns and clears what the machine wants done.
func (n *Node) Ready() Ready {
	r := n.out
	n.out = Ready{}
	return r
}

// Members returns every member record, tombstones included, sorted by node id.
func (n *Node) Members() []Member { return n.v.snapshot().Members }

// State returns the whole membership state as gossip carries it.
func (n *Node) State() State { return n.v.snapshot() }

// Member returns the record of node.
func (n *Node) Member(node NodeID) (Member, bool) {
	m, ok := n.v.members[node]
	if !ok {
		return Member{}, false
	}
	return *m.clone(), true
}

// Status returns node's status, without copying its record: whether it is an admitted
// member (a status below Down) is asked of every frame from another member.
func (n *Node) Status(node NodeID) (Status, bool) {
	m, ok := n.v.members[node]
	if !ok {
		return 0, false
	}
	return m.Status, true
}

// Self returns this member's current record (Joining before it has joined).
func (n *Node) Self() Member {
	if m, ok := n.v.members[n.self.Node]; ok && m.Incarnation == n.self.Incarnation {
		return *m.clone()
	}
	return *n.self.clone()
}

// Joined reports whether this member has formed or been admitted to a cluster.
func (n *Node) Joined() bool { return n.joined }

// StoppedReason returns why this member stopped, or nil while it runs.
func (n *Node) StoppedReason() *Stopped { return n.stopped }

// Leader returns the leader as this member sees it.
func (n *Node) Leader() NodeID { return n.leader }

// Unreachable reports whether some member observes node as unreachable.
func (n *Node) Unreachable(node NodeID) bool { return n.unreachable[node] }

// Changes counts the changes of this member's view (members, reachability, leader) so far: what
// a reader derived from the view at one count is still current while the count stays the
// same, so it need not read the whole view again (the engine's regions, at every tick).
func (n *Node) Changes() uint64 { return n.changes }

// MemberChanges counts the changes of this member's view that wrote member records (a change
// of reachability or of the leader alone does not count): what a reader derived from Members
// at one count is still current while the count stays the same. During a partition the
// observations change many times for each change of a member record.
func (n *Node) MemberChanges() uint64 { return n.memberRev }

// UnreachableMembers returns the members some member observes as unreachable (those for
// which Unreachable reports true), sorted.
func (n *Node) UnreachableMembers() []NodeID {
	out := make([]NodeID, 0, len(n.unreachable))
	for id := range n.unreachable {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

// Digest returns the digest of this member's view.
func (n *Node) Digest() uint64 { return n.digest }

// Oldest returns the oldest Up or Leaving member with role ("" for any), reachable or not.
func (n *Node) Oldest(role string) (Member, bool) {
	if best := n.oldest(role); best != nil {
		return *best.clone(), true
	}
	return Member{}, false
}

// oldest returns the oldest counted member (Up or Leaving) with role, nil when there is none.
func (n *Node) oldest(role string) *Member {
	var best *Member
	for _, m := range n.v.members {
		if m.counted() && m.HasRole(role) && (best == nil || m.OlderThan(best)) {
			best = m
		}
	}
	return best
}

// OldestUp returns the oldest Up member with role ("" for any): where a singleton such as a
// shard coordinator runs. A member that starts leaving hands the singleton on at once.
func (n *Node) OldestUp(role string) (Member, bool) {
	var best *Member
	for _, m := range n.v.members {
		if m.Status == Up && m.HasRole(role) && (best == nil || m.OlderThan(best)) {
			best = m
		}
	}
	if best == nil {
		return Member{}, false
	}
	return *best.clone(), true
}

// Convergence reports whether every reachable member has seen this member's view. It looks
// at every member only after the view changed or a peer reported another digest: a reader
// may ask at every tick.
func (n *Node) Convergence() bool {
	if !n.convergedOK || n.convergedAt != n.changes {
		n.converged, n.convergedOK, n.convergedAt = n.convergence(), true, n.changes
	}
	return n.converged
}

// Serving reports whether this member may serve work at now; see ServingUntil.
func (n *Node) Serving(now time.Time) bool { return now.Before(n.ServingUntil()) }

// ServingUntil returns the time until which this member may serve work (host shards, answer
// for its entities); the zero time when it may not serve at all. A member serves while:
//
//   - it is Up: not Joining yet, and not Leaving (a member leaves only after it has handed
//     off its work, so from Leaving on it serves nothing);
//   - it is not suspect after a pause, and its own last input is within the acceptable
//     heartbeat pause (a process that was stopped must not serve in the moment between waking
//     up and noticing);
//   - it holds a majority lease: grants from a majority of the voters (itself included when
//     it is one; see voters.go, and majorityLease for what is in the whole), each valid for
//     the acceptable heartbeat pause. A grant is a heartbeat (or probe
//     answer) agreeing with this member's view (same digest) that echoes one of this
//     member's own heartbeats; it is dated when that heartbeat was sent, not when the grant
//     arrived.
//
// The majority lease makes removal safe whatever stable-after and down-removal-margin are: a
// member cut off in a minority stops serving within the acceptable heartbeat pause, and a
// grant ends no later than the grantor's failure detector could mark this member
// unreachable (the detector waits more than that pause after the last heartbeat it
// counted, and grants echo only counted ones), so the majority can remove a member that
// every one of them observes unreachable as soon as it is Down (Node.leaseExpired). The
// data plane compares this deadline with its own clock, so the check costs one comparison
// per message.
func (n *Node) ServingUntil() time.Time {
	if !n.joined || n.stopped != nil || n.suspect {
		return time.Time{}
	}
	me, ok := n.v.members[n.self.Node]
	if !ok || me.Incarnation != n.self.Incarnation || me.Status != Up {
		return time.Time{}
	}
	until := n.majorityLease()
	if n.cfg.SplitBrainResolver.ActiveStrategy == KeepOldest {
		if o, ok := n.oldestLease(); ok && o.Before(until) {
			until = o
		}
	}
	return until
}

// oldestLease returns when the grant of the oldest counted member with keep-oldest's role
// ends (ok false when there is no such member). Under keep-oldest the side of the oldest
// survives a partition whatever its size, so a majority cut off from it loses — but it
// downs itself only when its own resolver decides, which a slow failure detector can put
// after the oldest's side has removed it and started its shards (sim soak seed 6,055: 7 s
// after; its majority lease, granted among its own members, held all along). Bounded by
// the oldest's grant too, its lease ends within the acceptable heartbeat pause of the cut,
// before the oldest's side can decide (it waits longer than that pause to detect, and
// stable-after on top). The price, under keep-oldest only: when the oldest dies, no member
// serves until it is downed and removed.
func (n *Node) oldestLease() (time.Time, bool) {
	oldest := n.oldest(n.cfg.SplitBrainResolver.Role)
	if oldest == nil {
		return time.Time{}, false
	}
	pause := n.cfg.FailureDetector.AcceptableHeartbeatPause
	if oldest.Node == n.self.Node {
		return n.lastInput.Add(pause), true
	}
	if p := n.peers[oldest.Node]; p != nil && p.incarnation == oldest.Incarnation {
		return p.agreedAt.Add(pause), true
	}
	return time.Time{}, true // never heard from the oldest: no grant
}

// majorityLease returns when this member's majority lease ends: when the majority-th
// freshest grant becomes older than the acceptable heartbeat pause. The majority is of the
// whole of the voters (voterWhole); grants come from the voters Up here (this member's own
// last input counting as one when it is one), and only heartbeats whose
// digest equals this member's view (or one it had a moment ago) grant: a member that has
// downed or removed this one gossips another digest.
//
// The whole holds every voter not Removed — Exiting and Down voters too, although they grant
// nothing — and every member a leader could have made a voter in another view, so that the
// two sides of any partition cannot both hold a majority, whatever their views. The views of
// two sides differ only by changes that one side made and the other did not see, and each
// such change keeps a member in the whole on both sides: a leader makes members voters (and
// moves them Up, or from Leaving to Exiting) only once every member has seen the state
// before, where they were possible voters; and removes one only once every member has seen
// it Down or Exiting. So a member that grants on one side is in the whole of the other, the
// grants of both sides come from one set no larger than either whole, and two majorities of
// it meet. Counted only among the Up members it knew, the side that had not yet seen its
// leader move two joining members Up held the lease beside the side that had (issue 25: 3 of
// 5 there, 4 of 7 here).
func (n *Node) majorityLease() time.Time {
	var buf [16]time.Time
	last := buf[:0] // the whole is a handful of members: no allocation per call
	for _, m := range n.whole {
		switch p := n.peers[m.Node]; {
		case !m.Voter || m.Status != Up:
			last = append(last, time.Time{}) // in the whole, no grant: a possible voter, Leaving, Exiting or Down
		case m.Node == n.self.Node:
			last = append(last, n.lastInput)
		case p != nil && p.incarnation == m.Incarnation:
			last = append(last, p.agreedAt)
		default:
			last = append(last, time.Time{}) // never heard
		}
	}
	if len(last) == 0 {
		return time.Time{}
	}
	// Newest first, by insertion: a handful of entries, on every look at serving.
	for i := 1; i < len(last); i++ {
		for j := i; j > 0 && last[j].After(last[j-1]); j-- {
			last[j], last[j-1] = last[j-1], last[j]
		}
	}
	return last[len(last)/2].Add(n.cfg.FailureDetector.AcceptableHeartbeatPause)
}

// checkPause notices a pause: no input for longer than the acceptable heartbeat pause
// (ticks come every fraction of a second, so only a stopped process or a clock jump makes
// such a gap). Every input checks it first, before it can act on stale beliefs.
func (n *Node) checkPause() {
	if n.joined && !n.lastInput.IsZero() && n.now.Sub(n.lastInput) > n.cfg.FailureDetector.AcceptableHeartbeatPause {
		n.becomeSuspect()
	}
	n.lastInput = n.now
}

// becomeSuspect is called when this member finds it was paused for longer than the
// acceptable heartbeat pause: its view is stale, so it serves nothing and takes no decision
// about others until a majority answers a probe sent after the pause, confirming it is still
// a member. (A member merely cut off from the majority loses its lease and stops serving, but
// its view is current: it keeps deciding, and regains the lease only from heartbeats that
// agree with its view.)
func (n *Node) becomeSuspect() {
	if !n.suspect {
		n.suspect = true
		n.emit(Suspended{})
	}
	n.confirmedBy = map[NodeID]bool{}
	for _, p := range n.peers {
		p.freshSeq = p.probeSeq + 1
		// Gaps that span this member's own pause say nothing about the peers: start their
		// detectors afresh, or one long sample would blind them for a thousand heartbeats.
		p.fd = newPhiDetector(n.cfg.FailureDetector)
		p.fd.assume(n.now)
	}
	n.probeUnconfirmed(true)
	n.countConfirmations()
}

// probeUnconfirmed probes, while suspect, every voter (and possible voter) that has not
// confirmed yet (all of them when force, otherwise those not probed for a heartbeat
// interval).
func (n *Node) probeUnconfirmed(force bool) {
	for _, m := range n.whole {
		id := m.Node
		if id == n.self.Node || !m.countsAsMember() || n.confirmedBy[id] {
			continue
		}
		p := n.peer(id, m.Incarnation)
		if !force && n.now.Sub(p.lastProbe) < n.cfg.FailureDetector.HeartbeatInterval {
			continue
		}
		p.probeSeq++
		p.lastProbe = n.now
		n.send(id, Probe{From: n.self.Node, Incarnation: n.self.Incarnation, Seq: p.probeSeq})
	}
}

// confirm counts a fresh probe answer while suspect.
func (n *Node) confirm(ack ProbeAck) {
	if !n.suspect || ack.YourIncarnation != n.self.Incarnation {
		return
	}
	p := n.peers[ack.From]
	if p == nil || ack.Seq < p.freshSeq {
		return // an answer to a probe sent before the pause
	}
	if ack.YourStatus >= Down {
		reason := StopDowned
		if ack.YourStatus == Removed {
			reason = StopRemoved // as when the gossip of the removal comes first
		}
		n.stop(reason, fmt.Sprintf("paused too long: %s reports this member %s", ack.From, strings.ToLower(ack.YourStatus.String())))
		return
	}
	n.confirmedBy[ack.From] = true
	n.countConfirmations()
}

// countConfirmations clears suspicion once a majority of the whole of the voters (as the
// lease counts it; this member included when it is one) has confirmed. Only Up voters
// confirm, as only they grant the lease: the view of a Joining member is not yet the
// cluster's, and a stale one would confirm a member the cluster removed.
func (n *Node) countConfirmations() {
	confirmed := 0
	for _, m := range n.whole {
		if m.Voter && m.Status == Up && (m.Node == n.self.Node || n.confirmedBy[m.Node]) {
			confirmed++
		}
	}
	if confirmed > len(n.whole)/2 {
		n.suspect = false
		n.confirmedBy = nil
		n.emit(Resumed{})
	}
}

// peer returns the failure-detection record of member id (incarnation inc), starting one
// whose clock runs from now when there is none for that incarnation.
func (n *Node) peer(id NodeID, inc uint64) *peer {
	p := n.peers[id]
	if p == nil || p.incarnation != inc {
		p = &peer{incarnation: inc, fd: newPhiDetector(n.cfg.FailureDetector)}
		p.fd.assume(n.now)
		n.peers[id] = p
		n.convergedOK = false
	}
	return p
}

// heard records a heartbeat (or probe answer) from node: its digest; with beat an arrival
// for the failure detector, beatSeq the Seq of a regular heartbeat (0: not one), echo the Seq
// of this member's heartbeat it echoes (0: none).
func (n *Node) heard(node NodeID, incarnation, digest uint64, beat bool, beatSeq, echo uint64) {
	m, ok := n.v.members[node]
	if !ok || m.Incarnation != incarnation || node == n.self.Node {
		return
	}
	if !m.countsAsMember() {
		n.tellStatus(node) // a downed or removed member still running: tell it
		return
	}
	p := n.peer(node, incarnation)
	if beat {
		p.fd.heartbeat(n.now)
	}
	if beat && beatSeq > p.beatSeq {
		first := p.beatSeq == 0
		p.beatSeq = beatSeq
		if first && n.joined {
			// The first heartbeat counted from this member (it just joined, or became
			// known here): echo it at once rather than with the next heartbeat, so that
			// its lease does not wait an interval.
			n.ackHeartbeat()
		}
	}
	if !p.hasDigest || p.digest != digest {
		p.digest, p.hasDigest = digest, true
		n.convergedOK = false
	}
	if n.agrees(digest) {
		if sent, ok := n.beatSentAt(echo); ok && sent.After(p.agreedAt) {
			p.agreedAt = sent
		}
	} else {
		n.pull(node)
	}
	if n.observesUnreachable(node) && p.fd.available(n.now) {
		// Reachable again: start its detector afresh, as Akka does, so that the history
		// from before the outage does not bias detection after it.
		n.setObservation(node, false)
		p.fd = newPhiDetector(n.cfg.FailureDetector)
		p.fd.heartbeat(n.now)
	}
}

func (n *Node) handleJoin(from NodeID, req JoinRequest) {
	j := req.Member
	if j.Node != from {
		return // only a member may ask for itself
	}
	refuse := func(why StopReason, format string, args ...any) {
		n.send(from, JoinReply{From: n.self.Node, Refused: fmt.Sprintf(format, args...), Refusal: why})
	}
	if !n.joined {
		n.answerNotMember(from, req) // in no cluster: the joiner retries, asks another seed, or forms one
		return
	}
	me, ok := n.v.members[n.self.Node]
	if !ok || !me.countsAsMember() {
		return // not a member of a cluster yet: the joiner retries or asks another seed
	}
	// Admission first: a member that is not admitted learns nothing of the cluster's settings.
	if n.cfg.Admit != nil {
		if why := n.cfg.Admit(n.now, j.Node, req.Credential); why != "" {
			refuse(StopJoinRefused, "not admitted: %s", why)
			return
		}
	}
	if err := checkJoin(n.cfg.JoinChecks, req.Checks); err != "" {
		refuse(StopJoinRefused, "%s", err)
		return
	}
	if cur, ok := n.v.members[j.Node]; ok {
		switch {
		case cur.Incarnation > j.Incarnation:
			refuse(StopSuperseded, "a newer incarnation (%d) of %s is already a member; this process (incarnation %d) is stale", cur.Incarnation, j.Node, j.Incarnation)
			return
		case cur.Incarnation == j.Incarnation && !cur.countsAsMember():
			why := StopRemoved
			if cur.Status == Down {
				why = StopDowned
			}
			refuse(why, "%s (incarnation %d) was %s; restart it to join again", j.Node, j.Incarnation, strings.ToLower(cur.Status.String()))
			return
		case cur.Incarnation == j.Incarnation:
			n.send(from, n.joinReply()) // a retry: admit again
			return
		}
	}
	j.Status, j.UpNumber = Joining, 0
	j.Roles = slices.Clone(j.Roles)
	slices.Sort(j.Roles)
	n.v.put(j.clone())
	n.dirty = true
	n.send(from, n.joinReply())
}

// joinRequest asks to join, with this member's credential.
func (n *Node) joinRequest() JoinRequest {
	return JoinRequest{Member: n.self, Checks: n.cfg.JoinChecks, Credential: n.cfg.Credential, AsksNotMember: true}
}

// joinReply admits a member, with this member's credential.
func (n *Node) joinReply() JoinReply {
	return JoinReply{From: n.self.Node, State: n.v.snapshot(), Credential: n.cfg.Credential}
}

// checkJoin compares the settings that must be equal on every member.
func checkJoin(mine, theirs map[string]string) string {
	keys := make([]string, 0, len(mine))
	for k := range mine {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if v, ok := theirs[k]; !ok || v != mine[k] {
			if !ok {
				v = "(not set)"
			}
			return fmt.Sprintf("%s: this cluster uses %s, the joining member %s; it must be equal on every member", k, mine[k], v)
		}
	}
	return ""
}

func (n *Node) handleJoinReply(from NodeID, r JoinReply) {
	if n.joined || !slices.Contains(n.seeds, from) {
		return
	}
	if r.Refused != "" {
		why := r.Refusal
		if why == StopLeft {
			why = StopJoinRefused
		}
		n.stop(why, fmt.Sprintf("join refused by %s: %s", from, r.Refused))
		return
	}
	if n.cfg.Admit != nil && n.cfg.Admit(n.now, from, r.Credential) != "" {
		return // a peer that is not an admitted member cannot admit this one; other seeds may
	}
	n.joined = true
	n.v.merge(&r.State)
	if _, ok := n.v.members[n.self.Node]; !ok {
		n.v.put(n.self.clone())
	}
	if n.leaveRequested {
		n.setStatus(n.self.Node, Leaving)
	}
	n.dirty = true
}

// detectFailures updates this member's reachability row from its failure detectors and
// probes members whose heartbeats are late.
func (n *Node) detectFailures() {
	for _, id := range n.neighborList {
		m, ok := n.v.members[id]
		if !ok || !m.countsAsMember() {
			continue
		}
		p := n.peer(id, m.Incarnation) // a member never heard from still becomes unreachable
		if p.fd.quiet(n.now) {
			continue // phi is below half the threshold: nothing to do (a voter watches every member)
		}
		phi := p.fd.phi(n.now)
		if phi >= n.cfg.FailureDetector.Threshold {
			if !n.observesUnreachable(id) {
				n.setObservation(id, true)
			}
		}
		if phi >= n.cfg.FailureDetector.Threshold/2 && n.now.Sub(p.lastProbe) >= n.cfg.FailureDetector.HeartbeatInterval {
			p.probeSeq++
			p.lastProbe = n.now
			n.send(id, Probe{From: n.self.Node, Incarnation: n.self.Incarnation, Seq: p.probeSeq})
		}
	}
}

// forgetPeers drops the failure-detection records of members that are gone, or no longer
// neighbors and silent; once per heartbeat interval (heartbeat).
func (n *Node) forgetPeers() {
	for id, p := range n.peers {
		if m, ok := n.v.members[id]; !ok || !m.countsAsMember() ||
			(!n.neighbors[id] && n.now.Sub(p.fd.last) > 2*n.cfg.FailureDetector.AcceptableHeartbeatPause) {
			delete(n.peers, id)
			n.convergedOK = false
		}
	}
}

// observesUnreachable reports whether this member's reachability row has id unreachable.
func (n *Node) observesUnreachable(id NodeID) bool {
	return n.v.observes(n.self.Node, n.self.Incarnation, id)
}

// setObservation writes this member's reachability row.
func (n *Node) setObservation(id NodeID, unreachable bool) {
	row := n.v.reach[n.self.Node]
	var next ReachRow
	if row == nil || row.Incarnation != n.self.Incarnation {
		next = ReachRow{Observer: n.self.Node, Incarnation: n.self.Incarnation, Version: 1}
	} else {
		next = ReachRow{Observer: n.self.Node, Incarnation: n.self.Incarnation, Version: row.Version + 1, Unreachable: slices.Clone(row.Unreachable)}
	}
	i, found := slices.BinarySearch(next.Unreachable, id)
	switch {
	case unreachable && !found:
		next.Unreachable = slices.Insert(next.Unreachable, i, id)
	case !unreachable && found:
		next.Unreachable = slices.Delete(next.Unreachable, i, i+1)
	default:
		return
	}
	// Drop observations of members that are gone.
	next.Unreachable = slices.DeleteFunc(next.Unreachable, func(s NodeID) bool {
		m, ok := n.v.members[s]
		return !ok || !m.countsAsMember()
	})
	n.v.putRow(&next)
	n.dirty = true
}

// setStatus moves node to status if that is a step forward in the merge order.
func (n *Node) setStatus(node NodeID, s Status) {
	m, ok := n.v.members[node]
	if !ok || s <= m.Status {
		return
	}
	c := m.clone()
	c.Status = s
	n.v.put(c)
	n.dirty = true
}

// heartbeat sends this member's regular heartbeat to each of its heartbeat targets
// (topology.go), with the echo of the target's own latest heartbeat.
func (n *Node) heartbeat() {
	n.forgetPeers()
	n.hbSeq++
	n.lastHeartbeat = n.now
	n.beatsSent[n.hbSeq%beatRing] = beatSent{seq: n.hbSeq, at: n.now}
	n.sendHeartbeats(false)
}

// ackHeartbeat reports this member's digest and its echoes at once, between regular
// heartbeats (Heartbeat.Ack: the failure detectors do not count it).
func (n *Node) ackHeartbeat() { n.sendHeartbeats(true) }

func (n *Node) sendHeartbeats(ack bool) {
	for _, id := range n.heartbeatTargets() {
		inc, seq := n.echoFor(id)
		n.send(id, Heartbeat{From: n.self.Node, Incarnation: n.self.Incarnation, Seq: n.hbSeq, Digest: n.digest, Ack: ack,
			Answer: !n.neighbors[id], EchoIncarnation: inc, EchoSeq: seq})
	}
}

// agrees reports whether a peer's digest is this member's view now, or one it had within
// the acceptable heartbeat pause: a peer that has not yet merged this member's latest
// change (a member that joined, say) still vouches for a view in which this member is Up,
// and the lease does not lapse for every view change while it spreads. A view this member
// never had grants nothing: a member with a stale view cannot count grants from those that
// know more than it does.
func (n *Node) agrees(digest uint64) bool {
	if digest == n.digest {
		return true
	}
	for _, d := range n.pastDigests {
		if d.digest == digest && !d.until.IsZero() && n.now.Sub(d.until) <= n.cfg.FailureDetector.AcceptableHeartbeatPause {
			return true
		}
	}
	return false
}

// beatSentAt returns when this member sent its regular heartbeat seq, if it still knows.
func (n *Node) beatSentAt(seq uint64) (time.Time, bool) {
	b := n.beatsSent[seq%beatRing]
	if seq == 0 || b.seq != seq {
		return time.Time{}, false
	}
	return b.at, true
}

// echoFor returns the echo for member id: the incarnation and Seq of its latest regular
// heartbeat the failure detector counted (zero before the first).
func (n *Node) echoFor(id NodeID) (incarnation, seq uint64) {
	p := n.peers[id]
	if m, ok := n.v.members[id]; ok && p != nil && p.beatSeq != 0 && m.Incarnation == p.incarnation && m.countsAsMember() {
		return p.incarnation, p.beatSeq
	}
	return 0, 0
}

func (n *Node) send(to NodeID, msg Message) {
	n.out.Messages = append(n.out.Messages, Envelope{To: to, Msg: msg})
}

func (n *Node) emit(e Event) { n.out.Events = append(n.out.Events, e) }

func (n *Node) stop(reason StopReason, detail string) {
	if n.stopped != nil {
		return
	}
	n.stopped = &Stopped{Reason: reason, Detail: detail}
	n.emit(*n.stopped)
}

// afterInput runs after every input: it reacts to view changes (events, gossip, an
// acknowledging heartbeat), then lets the leader and the split-brain resolver act, repeating
// while their actions change the view.
func (n *Node) afterInput() {
	for range 8 { // leader actions converge in a few rounds; the bound guards against a bug looping
		if n.stopped != nil || !n.joined {
			return
		}
		if n.dirty {
			n.flush()
			if n.stopped != nil {
				return
			}
		}
		n.leaderActions()
		n.resolveSplitBrain()
		if !n.dirty {
			n.announce()
			return
		}
	}
}

// flush publishes a changed view: events for what changed, the state to everyone, and a
// heartbeat carrying the new digest so the leader sees this member has seen it.
func (n *Node) flush() {
	n.dirty = false
	n.changes++
	prevDigest := n.digest
	n.digest = n.v.digest()
	if n.digest != prevDigest {
		n.viewAt = n.now
		copy(n.pastDigests[:], n.pastDigests[1:])
		n.pastDigests[pastDigestRing-1] = pastDigest{digest: prevDigest, until: n.now}
	}
	touched := n.v.takeTouched()
	if len(touched) > 0 {
		n.memberRev++
	}
	n.emitChanges(touched)
	if n.stopped != nil {
		return
	}
	n.refreshTopology(touched)
	if n.digest != prevDigest {
		n.announceDue = true
	}
}

// announce tells of this member's changed view: exchanges with gossipFanout members
// (gossipChange) and a heartbeat to its targets with the new digest (the leader learns from
// it that the change has been seen). A change is announced at once (after the input that
// made it), unless two were announced within the last gossip-interval / announceGap: then
// with the first input or tick after that, together with whatever else changed meanwhile
// (two at once: a leader's Down and the removal that follows it at convergence go out
// without waiting for a tick). While a hundred
// members join a thousand, a member's view changes a hundred times in a moment; announced
// one by one, each cost it its share of the whole state.
func (n *Node) announce() {
	if !n.announceDue || n.stopped != nil || n.now.Sub(n.announced[0]) < n.cfg.GossipInterval/announceGap {
		return
	}
	n.announceDue, n.announced = false, [2]time.Time{n.announced[1], n.now}
	n.gossipChange()
	n.ackHeartbeat()
}

// emitChanges compares the members written since the last flush (touched, sorted) with what
// it last reported of them and emits events.
func (n *Node) emitChanges(touched []NodeID) {
	for _, id := range touched {
		m := n.v.members[id]
		p := n.reported[id]
		if p.known && p.incarnation == m.Incarnation && p.status == m.Status {
			continue
		}
		if p.known && p.incarnation != m.Incarnation {
			if p.status != Removed {
				old := *m.clone()
				old.Incarnation, old.Status = p.incarnation, Removed
				n.emit(MemberChanged{Member: old, Previous: p.status})
			}
			p = reported{}
		}
		n.emit(MemberChanged{Member: *m.clone(), Previous: p.status, New: !p.known})
		n.decidedAt = n.now
		n.reported[id] = reported{known: true, incarnation: m.Incarnation, status: m.Status}
		if id != n.self.Node && n.leader == n.self.Node && p.known && !n.unreachable[id] {
			// The leader tells a member of its own move at once (Up, Exiting, Removed):
			// it is the member that acts on it.
			n.startExchange(id)
		}
		if m.Status == Down {
			// A new Down (of another incarnation than one downed before, too): its
			// convergence is still to come.
			n.downSeen[id] = n.now
			delete(n.downConverged, id)
		}
		if id == n.self.Node {
			n.checkSelf(m, p.status)
		}
	}
	u := n.v.unreachable()
	for id := range u {
		if !n.unreachable[id] {
			n.emit(ReachabilityChanged{Node: id, Reachable: false})
			n.decidedAt = n.now
		}
	}
	for id := range n.unreachable {
		if !u[id] {
			n.emit(ReachabilityChanged{Node: id, Reachable: true})
			n.decidedAt = n.now
		}
	}
	n.unreachable = u
	if l := n.computeLeader(); l != n.leader {
		n.leader = l
		n.emit(LeaderChanged{Leader: l})
	}
}

// checkSelf stops this member when the cluster has downed, removed or replaced it.
func (n *Node) checkSelf(m *Member, previous Status) {
	left := previous == Leaving || previous == Exiting
	switch {
	case m.Incarnation > n.self.Incarnation:
		n.stop(StopSuperseded, fmt.Sprintf("a newer incarnation (%d) of this node joined the cluster", m.Incarnation))
	case m.Status == Down:
		n.stop(StopDowned, "this member was marked Down")
	case m.Status == Removed && left:
		n.stop(StopLeft, "left the cluster")
	case m.Status == Removed:
		n.stop(StopRemoved, "this member was removed from the cluster")
	case m.Status == Exiting && previous != Exiting:
		n.exitingSince = n.now
	case m.Status == Up && previous != Up:
		// A heartbeat now, not up to an interval later: the others echo it, and their
		// echoes are this member's first lease grants (its earlier heartbeats may have
		// reached members that did not know it yet).
		n.heartbeat()
	}
}

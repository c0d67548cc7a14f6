package membership

import (
	"fmt"
	"hash/fnv"
	"slices"
	"time"
)

// resolveSplitBrain downs members once the unreachability this member sees has been stable
// for stable-after. Every member decides for itself, from its own view, with the strategy
// of Akka's DowningStrategy (partitionView.decide, downing.go):
//
//   - the members the decision downs that include this one: it marks itself Down and
//     stops (the losing side, DownAll, or an indirectly connected member);
//   - the others: the leader of this side marks them Down.
//
// So Down is only ever written about another member by a side the strategy keeps; a side
// that loses only stops itself. Down members are removed (and their shards moved) only
// once their majority lease has run out (Node.leaseExpired), and after down-removal-margin.
//
// A decision waits until the unreachability (who is unreachable, statuses, and who is
// indirectly connected) has been stable for stable-after and no member counted on this
// side is late (no heartbeat for two heartbeat intervals, yet not unreachable), so a
// partition whose failure detectors fire one by one is decided on its whole extent. Unreachable members
// that are all Exiting need no decision: they are gone.
//
// It looks at the view on every tick (as Akka's resolver, which ticks every second), not
// after every input: during a partition of a large cluster the view changes with every
// observation that spreads, and each look reads every observation. The time of a change
// is when the view changed, not the tick that saw it.
func (n *Node) resolveSplitBrain() {
	cfg := n.cfg.SplitBrainResolver
	if cfg.ActiveStrategy == DownOff || n.dirty || !n.ticking {
		return
	}
	if n.leaseWait != nil || n.leaseRelease != nil {
		n.tickLease()
		if n.leaseWait != nil || n.stopped != nil {
			return // a decision waits for the lease: nothing else is decided meanwhile, as in Akka
		}
	}
	if len(n.unreachable) == 0 {
		n.sbrSignature, n.unstableSince = "", time.Time{}
		return
	}
	p := n.resolverView()
	if !p.needsDecision() {
		n.sbrSignature, n.unstableSince = "", time.Time{}
		return
	}
	if obs := n.pvObservations; obs != n.observations || n.unstableSince.IsZero() {
		n.observations = obs
		if n.unstableSince.IsZero() {
			n.unstableSince = n.viewAt
		}
	}
	if n.unstable(cfg) {
		return
	}
	if sig := p.signature(); sig != n.sbrSignature {
		n.sbrSignature, n.sbrSince = sig, n.now
		switch {
		case n.decidedAt.After(n.resolvedAt):
			// Since the last look, a member became unreachable or reachable or changed
			// status: the wait starts then, not at a later change of the view that does not
			// count (another detector confirming an unreachable member).
			n.sbrSince = n.decidedAt
		case n.viewAt.After(n.resolvedAt):
			n.sbrSince = n.viewAt // the view changed since the last look (who is indirectly connected): then
		}
		n.resolvedAt = n.now
		return
	}
	n.resolvedAt = n.now
	if n.now.Sub(n.sbrSince) < cfg.StableAfter {
		return
	}
	// A member counted on this side whose heartbeats are late may be on the other side of the
	// same partition with its detector not yet fired (detectors adapt to each peer's history
	// and fire at different times): deciding now could count it on the wrong side. Wait until
	// every member of this side it exchanges heartbeats with is fresh or unreachable.
	for _, m := range p.withRole(true, false, +1) {
		if m.Node != n.self.Node && n.neighbors[m.Node] && n.late(m.Node) {
			return
		}
	}
	d, why := p.decide()
	nodes, d := p.nodesToDown(d)
	ic, _, _ := p.indirectlyConnected()
	decision := Downed{Decision: d, Strategy: cfg.ActiveStrategy, Indirect: sortedSet(ic), Unreachable: sortedSet(p.unreachable)}
	for _, m := range p.withRole(false, false, +1) {
		decision.Side = append(decision.Side, m.Node)
	}
	for _, m := range p.withRole(false, false, -1) {
		decision.Others = append(decision.Others, m.Node)
	}
	slices.Sort(decision.Side)
	slices.Sort(decision.Others)
	if d.acquiresLease() {
		// Only the leader of this side asks for the lease and acts, as Akka's: a member of
		// the side that loses is downed by its leader, not by itself.
		if n.leader == n.self.Node && !n.suspect {
			decision.Reason = fmt.Sprintf("%s, %s: %s", cfg.ActiveStrategy, d, why)
			n.awaitLease(p, d, decision)
		}
		return
	}
	if slices.Contains(nodes, n.self.Node) {
		decision.Nodes = []NodeID{n.self.Node}
		decision.Reason = fmt.Sprintf("%s, %s: %s; downing itself", cfg.ActiveStrategy, d, why)
		n.emit(decision)
		n.setStatus(n.self.Node, Down)
		n.unstableSince = time.Time{}
		return
	}
	// Only a side the strategy keeps downs others. When it keeps none (down-all, or this
	// side lost), every member downs itself; one that is Exiting (not downable) has left.
	if d == DownReachable || d == DownAll || n.leader != n.self.Node || n.suspect {
		return // the leader of this side downs the others; a suspect member decides only about itself
	}
	for _, id := range nodes {
		if n.v.members[id].Status < Down {
			decision.Nodes = append(decision.Nodes, id)
		}
	}
	if len(decision.Nodes) == 0 {
		return
	}
	decision.Reason = fmt.Sprintf("%s, %s: %s; downing %s", cfg.ActiveStrategy, d, why, shortIDs(decision.Nodes))
	n.emit(decision)
	for _, id := range decision.Nodes {
		n.setStatus(id, Down)
	}
	n.unstableSince = time.Time{}
}

// DecisionDue returns when the split-brain resolver's next decision falls due: the
// unreachability it waits on will then have been stable for stable-after. A tick at that
// moment decides, rather than the first periodic tick after it (up to a tick interval later,
// which a failover waits for). Zero when no decision is pending, or it is due already (the
// periodic ticks look again: a member of this side may be late).
func (n *Node) DecisionDue() time.Time {
	if n.sbrSignature == "" || len(n.unreachable) == 0 || n.leaseWait != nil || n.stopped != nil {
		return time.Time{}
	}
	due := n.sbrSince.Add(n.cfg.SplitBrainResolver.StableAfter)
	if !due.After(n.now) {
		return time.Time{}
	}
	return due
}

// unstable applies down-all-when-unstable: when the observations of unreachability have kept
// changing for stable-after plus down-all-when-unstable since the first change
// (unstableSince) without a decision, this member downs itself, as every member does: no side
// can be trusted to decide as the other does. It reports whether it did.
func (n *Node) unstable(cfg SBRConfig) bool {
	if cfg.DownAllWhenUnstable == Off || n.unstableSince.IsZero() || n.now.Sub(n.unstableSince) <= cfg.StableAfter+cfg.DownAllWhenUnstable {
		return false
	}
	e := Downed{Decision: DownAll, Strategy: cfg.ActiveStrategy, Unreachable: sortedSet(n.unreachable), Nodes: []NodeID{n.self.Node},
		Reason: fmt.Sprintf("down-all-when-unstable: no decision %v after the first change of reachability (stable-after %v + down-all-when-unstable %v); downing itself",
			n.now.Sub(n.unstableSince).Round(time.Millisecond), cfg.StableAfter, cfg.DownAllWhenUnstable)}
	n.emit(e)
	n.setStatus(n.self.Node, Down)
	return true
}

// resolverView returns the partition view of this member's view now. The observations are
// read again only when what counts of them changed (view.reachAt); the members, who is
// unreachable, who could become a voter and who has seen the view are read every time.
func (n *Node) resolverView() *partitionView {
	if n.pvRecords == nil || n.pvRecordsAt != n.v.reachAt {
		n.pvRecords, n.pvRecordsAt = n.records(), n.v.reachAt
		n.pvObservations = (&partitionView{records: n.pvRecords}).observations()
		n.pvByObserver, n.pvBySubject = map[NodeID][]NodeID{}, map[NodeID][]NodeID{}
		for _, r := range n.pvRecords {
			n.pvByObserver[r.observer] = append(n.pvByObserver[r.observer], r.subject)
			n.pvBySubject[r.subject] = append(n.pvBySubject[r.subject], r.observer)
		}
	}
	p := n.partitionViewOf(n.pvRecords)
	p.byObserver, p.bySubject = n.pvByObserver, n.pvBySubject
	return p
}

// partitionViewOf returns what a split-brain decision reads of this member's view: the
// members (Removed ones count nowhere), the observations (records: of the current
// incarnations of members that are neither Down nor Removed, as Akka leaves out those of
// downed observers), and the members whose last heartbeat carried this view's digest (they
// have seen it).
func (n *Node) partitionViewOf(records []reachRecord) *partitionView {
	p := &partitionView{
		cfg:         n.cfg.SplitBrainResolver,
		members:     n.v.members, // read only
		unreachable: n.unreachable,
		possible:    map[NodeID]bool{},
		records:     records,
		seen:        n.seen(),
	}
	for _, m := range n.v.possiblePromotions(n.cfg) {
		p.possible[m.Node] = true
	}
	return p
}

// records returns the observations that count, sorted: of observers whose rows count
// (view.counts), about members that are neither Down nor Removed.
func (n *Node) records() []reachRecord {
	var out []reachRecord
	for obs := range n.v.counts {
		for _, s := range n.v.reach[obs].Unreachable {
			if sm, ok := n.v.members[s]; ok && sm.countsAsMember() {
				out = append(out, reachRecord{observer: obs, subject: s})
			}
		}
	}
	slices.SortFunc(out, func(a, b reachRecord) int {
		if c := compareIDs(a.observer, b.observer); c != 0 {
			return c
		}
		return compareIDs(a.subject, b.subject)
	})
	return out
}

// seen returns the members known to have seen this member's view (their last heartbeat
// carried its digest), this one included: of those it exchanges heartbeats with, the only
// ones that report it.
func (n *Node) seen() map[NodeID]bool {
	seen := map[NodeID]bool{n.self.Node: true}
	for id, pr := range n.peers {
		if m := n.v.members[id]; m != nil && pr.incarnation == m.Incarnation && pr.hasDigest && pr.digest == n.digest {
			seen[id] = true
		}
	}
	return seen
}

// needsDecision reports whether some member is unreachable that has not left: Exiting
// members are gone, Down ones decided already.
func (p *partitionView) needsDecision() bool {
	for id := range p.unreachable {
		if m := p.members[id]; m != nil && m.Status != Exiting {
			return true
		}
	}
	return false
}

// signature sums up what a decision depends on, so the resolver can wait until it has
// been stable: who is unreachable, the status of every member, and who is indirectly
// connected. Not who observes whom: as in Akka (which restarts stable-after on
// UnreachableMember and ReachableMember, not on ReachabilityChanged), another member's
// detector confirming an unreachable member changes no decision, and restarting the wait
// for it put the decision stable-after past the last detector to fire rather than the
// first (+0.2-0.5 s in a kill -9 failover). It is read only while some member is
// unreachable; the statuses are summed in any order, without sorting the members.
func (p *partitionView) signature() string {
	h := fnv.New64a()
	for _, id := range sortedSet(p.unreachable) {
		h.Write([]byte(id))
		h.Write([]byte{0})
	}
	var statuses uint64
	for id, m := range p.members {
		e := fnv.New64a()
		e.Write([]byte(id))
		e.Write([]byte{byte(m.Status)})
		statuses += e.Sum64()
	}
	ic, _, _ := p.indirectlyConnected()
	return fmt.Sprintf("%016x %016x %v", h.Sum64(), statuses, sortedSet(ic))
}

// observations hashes who cannot reach whom: what down-all-when-unstable counts changes of (as
// Akka counts its reachability events; member statuses are not counted).
func (p *partitionView) observations() uint64 {
	h := fnv.New64a()
	for _, r := range p.records {
		h.Write([]byte(r.observer))
		h.Write([]byte{0})
		h.Write([]byte(r.subject))
		h.Write([]byte{1})
	}
	return h.Sum64()
}

func sortedSet(s map[NodeID]bool) []NodeID {
	out := make([]NodeID, 0, len(s))
	for id := range s {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

// late reports whether no heartbeat from id has arrived for two heartbeat intervals.
func (n *Node) late(id NodeID) bool {
	p := n.peers[id]
	return p == nil || n.now.Sub(p.fd.last) > 2*n.cfg.FailureDetector.HeartbeatInterval
}

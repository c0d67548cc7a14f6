package membership

import (
	"fmt"
	"slices"
	"strings"
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
func (n *Node) resolveSplitBrain() {
	cfg := n.cfg.SplitBrainResolver
	if cfg.ActiveStrategy == DownOff || n.dirty {
		return
	}
	if len(n.unreachable) == 0 {
		n.sbrSignature = ""
		return
	}
	p := n.partitionView()
	if !p.needsDecision() {
		n.sbrSignature = ""
		return
	}
	if sig := p.signature(); sig != n.sbrSignature {
		n.sbrSignature, n.sbrSince = sig, n.now
		return
	}
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
	if slices.Contains(nodes, n.self.Node) {
		decision.Nodes = []NodeID{n.self.Node}
		decision.Reason = fmt.Sprintf("%s, %s: %s; downing itself", cfg.ActiveStrategy, d, why)
		n.emit(decision)
		n.setStatus(n.self.Node, Down)
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
}

// partitionView returns what a split-brain decision reads of this member's view: the
// members not Removed, the observations of the current incarnations of members that are
// neither Down nor Removed (as Akka leaves out those of downed observers), and the members
// whose last heartbeat carried this view's digest (they have seen it).
func (n *Node) partitionView() *partitionView {
	p := &partitionView{
		cfg:         n.cfg.SplitBrainResolver,
		members:     make(map[NodeID]*Member, len(n.v.members)),
		unreachable: n.unreachable,
		seen:        map[NodeID]bool{n.self.Node: true},
		possible:    map[NodeID]bool{},
	}
	for _, m := range n.v.possiblePromotions(n.cfg) {
		p.possible[m.Node] = true
	}
	for id, m := range n.v.members {
		if m.Status != Removed {
			p.members[id] = m
		}
	}
	for obs, row := range n.v.reach {
		om, ok := n.v.members[obs]
		if !ok || !om.countsAsMember() || om.Incarnation != row.Incarnation {
			continue
		}
		for _, s := range row.Unreachable {
			if sm, ok := n.v.members[s]; ok && sm.countsAsMember() {
				p.records = append(p.records, reachRecord{observer: obs, subject: s})
			}
		}
	}
	slices.SortFunc(p.records, func(a, b reachRecord) int {
		if c := compareIDs(a.observer, b.observer); c != 0 {
			return c
		}
		return compareIDs(a.subject, b.subject)
	})
	for id, pr := range n.peers {
		if m, ok := n.v.members[id]; ok && pr.incarnation == m.Incarnation && pr.hasDigest && pr.digest == n.digest {
			p.seen[id] = true
		}
	}
	return p
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
// first (+0.2-0.5 s in a kill -9 failover).
func (p *partitionView) signature() string {
	var b strings.Builder
	for _, id := range sortedSet(p.unreachable) {
		fmt.Fprintf(&b, "%s ", id)
	}
	ids := make([]NodeID, 0, len(p.members))
	for id := range p.members {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		fmt.Fprintf(&b, "%s=%d ", id, p.members[id].Status)
	}
	ic, _, _ := p.indirectlyConnected()
	fmt.Fprint(&b, sortedSet(ic))
	return b.String()
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

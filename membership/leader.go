package membership

import (
	"fmt"
	"slices"
	"time"
)

// computeLeader returns the first voter in node id order that is reachable and Up or
// Leaving; when no voter is, the first such member; while no member is Up yet, the first
// reachable Joining (or WeaklyUp) member (so the first member of a new cluster can move itself Up); and
// when only Exiting members are left, the first of them (so the last member of a cluster that
// leaves can remove itself). The leader is a voter whenever one is reachable: a voter
// exchanges heartbeats with every member (topology.go), so it learns from them that every
// member has seen its view. In a cluster where every member votes this is Akka's leader.
func (n *Node) computeLeader() NodeID {
	var voter NodeID
	for id := range n.v.voters {
		if m := n.v.members[id]; !n.unreachable[id] && (m.Status == Up || m.Status == Leaving) && (voter == "" || id < voter) {
			voter = id
		}
	}
	if voter != "" {
		return voter // the common case: no look at every member
	}
	var leader, joining, exiting NodeID
	first := func(cur *NodeID, id NodeID) {
		if *cur == "" || id < *cur {
			*cur = id
		}
	}
	for id, m := range n.v.members {
		if n.unreachable[id] {
			continue
		}
		switch m.Status {
		case Up, Leaving:
			first(&leader, id)
		case Joining, WeaklyUp:
			first(&joining, id)
		case Exiting:
			first(&exiting, id)
		}
	}
	switch {
	case leader != "":
		return leader
	case joining != "":
		return joining
	}
	return exiting
}

// convergence reports whether every reachable member that is not Down has reported this
// member's digest, of the members it exchanges heartbeats with (the leader exchanges them
// with every member). An unreachable member blocks convergence unless it is Exiting (it has
// gone) — Down members never count.
func (n *Node) convergence() bool {
	for id, m := range n.v.members {
		if id == n.self.Node || !m.countsAsMember() {
			continue
		}
		if n.unreachable[id] {
			if m.Status == Exiting {
				continue
			}
			return false
		}
		if !n.neighbors[id] {
			if n.leader == n.self.Node {
				return false // not yet a neighbor: the topology follows the view
			}
			continue
		}
		p := n.peers[id]
		if p == nil || p.incarnation != m.Incarnation || !p.hasDigest || p.digest != n.digest {
			return false
		}
	}
	return true
}

// leaderActions moves members forward when this member leads and the view has converged.
// Only the members that have somewhere to go are looked at (view.pending), and convergence is
// checked only when there is something to do: an idle cluster's leader spends nothing per
// member on it.
//
// Without convergence for allow-weakly-up-members, it moves the Joining members it can reach
// to WeaklyUp (weaklyUp), as Akka's leader does.
func (n *Node) leaderActions() {
	if n.leader != n.self.Node || n.suspect || n.dirty || (len(n.v.pending) == 0 && !n.votersMissing()) {
		n.noConvergenceSince = time.Time{}
		return
	}
	if !n.convergence() {
		n.weaklyUp()
		return
	}
	n.noConvergenceSince = time.Time{}
	ids := make([]NodeID, 0, len(n.v.pending))
	for id := range n.v.pending {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	if n.enoughMembers() {
		maxUp := n.v.maxUp
		for _, id := range ids {
			if m := n.v.members[id]; m.joining() {
				maxUp++
				c := m.clone()
				c.Status, c.UpNumber = Up, maxUp
				n.v.put(c)
				n.dirty = true
			}
		}
	}
	n.promoteVoters()
	for _, id := range ids {
		m := n.v.members[id]
		switch m.Status {
		case Leaving:
			n.setStatus(id, Exiting)
		case Exiting:
			n.setStatus(id, Removed)
		case Down:
			if n.leaseExpired(id) {
				n.setStatus(id, Removed)
			}
		}
	}
}

// weaklyUp is the leader's action without convergence: once it has lasted
// allow-weakly-up-members, the Joining members it can reach become WeaklyUp, if enough
// members have joined (min-nr-of-members). A WeaklyUp member is counted as a Joining one
// everywhere (it may be Up on the other side of a partition only once every member saw it
// so), serves nothing, and is moved Up at the next convergence.
func (n *Node) weaklyUp() {
	wait := n.cfg.AllowWeaklyUpMembers
	if wait == Off {
		return
	}
	if n.noConvergenceSince.IsZero() {
		n.noConvergenceSince = n.now
	}
	if n.now.Sub(n.noConvergenceSince) < wait || !n.enoughMembers() {
		return
	}
	ids := make([]NodeID, 0, len(n.v.pending))
	for id := range n.v.pending {
		if n.v.members[id].Status == Joining && !n.unreachable[id] {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	for _, id := range ids {
		n.setStatus(id, WeaklyUp)
	}
}

// RestartQuorum reports how many members a forming cluster waits for before the leader
// moves any Up, and how many have joined: a majority of the largest cluster a joining
// member was last Up in (Member.LastClusterSize). need is 0 once the cluster has formed (a
// member has been Up) or when every member is new.
//
// This is what makes a full-cluster restart safe for the replicated store. Its quorums are
// majorities of the members of the moment; a member restarted alone would form a cluster of
// one and read the coordinator state (the last coordinator term, the directives) from its
// own replica, which may have missed the last writes — it was dead while they were made,
// and restarted just before the cluster stopped. Its coordinator then claims a term
// another coordinator already had, and the fenced entity state refuses every save of its
// allocations (found by the chaos suite: 775 of 2,000 counters). Waiting for a majority of
// the last cluster makes the first coordinator's majority read meet the last majority
// write of the cluster before, as the reads of a cluster that never stopped do.
func (n *Node) RestartQuorum() (need, joined int) {
	for _, m := range n.v.members {
		if m.UpNumber > 0 {
			return 0, 0 // formed: a member has been Up
		}
		if m.Status == Joining {
			joined++
			if m.LastClusterSize > 1 { // a cluster of one before: nothing to wait for
				need = max(need, int(m.LastClusterSize)/2+1)
			}
		}
	}
	return need, joined
}

// RestartWait says what a restarted cluster waits for (RestartQuorum's need and joined),
// and what an operator can do about it; "" when need is 0 or met.
func RestartWait(need, joined int) string {
	if joined >= need {
		return ""
	}
	return fmt.Sprintf("a restarted cluster moves no member Up before %d members of its last cluster have joined (a majority), so that its coordinator reads what that cluster stored (joined so far: %d). Start the others, or, if they are gone for good, restart the members with --set cluster.forget-last-cluster=on", need, joined)
}

// ClusterSize reports how many members (not Down or Removed) the cluster has while this
// member is in it, Joining or Up: what a member keeps on disk as the LastClusterSize of its
// next process. A Joining member counts once the cluster has formed (a member has been
// Up): it is one of the store's replicas from then on, and what it stores may be the only
// copy of a write its next process must not form a cluster without (sim runtime soak seed
// 110: a member that joined but never got Up, restarted first after a full stop, formed a
// cluster alone and claimed a coordinator term the cluster had had). ok is false while a
// restarted cluster forms, and once this member leaves — every member of a cluster stopped
// as a whole leaves, and the sizes seen then are not the cluster's.
func (n *Node) ClusterSize() (size uint32, ok bool) {
	me, in := n.v.members[n.self.Node]
	if !in || n.stopped != nil || (me.Status != Up && (me.Status != Joining || !n.formed())) {
		return 0, false
	}
	return uint32(len(n.ring)), true // the ring holds the members that count (topology.go)
}

// formed reports whether the cluster has formed: a member of the view has been moved Up.
func (n *Node) formed() bool {
	for _, m := range n.v.members {
		if m.UpNumber > 0 {
			return true
		}
	}
	return false
}

// enoughMembers reports whether min-nr-of-members (overall and per role) and the restart
// quorum have joined.
func (n *Node) enoughMembers() bool {
	if need, joined := n.RestartQuorum(); joined < need {
		return false
	}
	count := func(role string) int {
		c := 0
		for _, m := range n.v.members {
			if (m.joining() || m.Status == Up) && m.HasRole(role) {
				c++
			}
		}
		return c
	}
	if count("") < n.cfg.MinNrOfMembers {
		return false
	}
	roles := make([]string, 0, len(n.cfg.RoleMinNrOfMembers))
	for r := range n.cfg.RoleMinNrOfMembers {
		roles = append(roles, r)
	}
	slices.Sort(roles)
	for _, r := range roles {
		if count(r) < n.cfg.RoleMinNrOfMembers[r] {
			return false
		}
	}
	return true
}

// leaseExpired reports whether a Down member can be removed: down-removal-margin has passed
// since this member saw it Down, and its majority lease has certainly run out. Called only
// at convergence: every member that is not Down has seen it Down, so none grants it the
// lease any more (a grant needs the grantor's view to equal the Down member's, which then
// has it Down and stops). What the grants given before are worth decides how long to wait:
//
//   - At once when every voter counted here (this one included, if it is one) observes it
//     unreachable and those voters outnumber the rest of the whole of the voters
//     (everyoneObservesUnreachable). A grant is dated when the grantee sent the heartbeat
//     the grantor echoes (an Echo), so it ends acceptable-heartbeat-pause after a heartbeat
//     the grantor's failure detector counted; the detector marks a member unreachable only
//     after more than that pause without one, and a member that has seen another Down
//     counts none of its heartbeats. So every grant from those voters has ended. This is a
//     member killed or cut off: removed as soon as it is Down, not a lease later.
//   - Otherwise (an operator's down of a member still reachable, or one some member still
//     hears) acceptable-heartbeat-pause plus a heartbeat interval after the convergence.
//
// Grants from members that are themselves Down — cut off on the same side — are not covered
// by either rule: with the first they are fewer than half; otherwise that side's own
// split-brain resolver decision stops it, within stable-after, which down-removal-margin
// then covers (its default with the strategies that may down a majority).
func (n *Node) leaseExpired(id NodeID) bool {
	converged, ok := n.downConverged[id]
	if !ok {
		n.downConverged[id] = n.now // called only at convergence
		converged = n.now
	}
	seen, ok := n.downSeen[id]
	if !ok || n.now.Sub(seen) < n.cfg.DownRemovalMargin {
		return false
	}
	fd := n.cfg.FailureDetector
	return n.everyoneObservesUnreachable(id) || n.now.Sub(converged) >= fd.AcceptableHeartbeatPause+fd.HeartbeatInterval
}

// everyoneObservesUnreachable reports whether every voter counted here (Up or Leaving) but
// id, this member included if it is one, has id in its reachability row of its current
// incarnation, and those voters outnumber the rest of the whole (voterWhole: Exiting and Down
// voters, possible voters). id's grants come only from voters of its own view; the voters that
// observe it unreachable grant it nothing, and every other member of its whole is one of the
// rest of this whole — fewer than half.
func (n *Node) everyoneObservesUnreachable(id NodeID) bool {
	observers, rest := 0, 0
	for _, m := range n.whole {
		switch {
		case m.Node == id:
			rest++
		case m.Voter && m.counted():
			if !n.v.observes(m.Node, m.Incarnation, id) {
				return false
			}
			observers++
		default:
			rest++
		}
	}
	return observers > rest
}

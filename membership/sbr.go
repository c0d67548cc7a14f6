package membership

import (
	"fmt"
	"slices"
	"strings"
)

// resolveSplitBrain downs members once the set of unreachable members has been stable for
// stable-after. Every member decides for itself from its own view:
//
//   - a member that some other member cannot reach (it is indirectly connected or cut off)
//     downs itself;
//   - otherwise the counted members (Up, Leaving or Exiting, with the configured role) split
//     into this member's side (reachable) and the other side (unreachable; Down members not
//     yet removed count there too), and the strategy picks the surviving side; on the
//     surviving side the leader marks the other side Down, on the losing side each member
//     marks itself Down and stops.
//
// A decision waits until the unreachable set has been stable for stable-after and no member
// counted on this side is late (no heartbeat for two heartbeat intervals, yet not
// unreachable), so a partition whose failure detectors fire one by one is decided on its
// whole extent.
//
// So Down is only ever written about another member by a side that holds the quorum; the
// losing side only stops itself. Down members are removed (and their shards moved) only once
// their majority lease has run out (Node.leaseExpired), and after down-removal-margin.
func (n *Node) resolveSplitBrain() {
	cfg := n.cfg.SplitBrainResolver
	if cfg.ActiveStrategy == DownOff || n.dirty {
		return
	}
	if len(n.unreachable) == 0 {
		n.sbrSignature = ""
		return
	}
	var side, others []NodeID
	for _, id := range n.v.sortedIDs() {
		m := n.v.members[id]
		if !m.HasRole(cfg.Role) {
			continue
		}
		switch {
		case m.Status == Down:
			// Down but not yet removed: it may not know it is Down — downed by an operator
			// a moment before a partition cut it off — and count itself, and this side,
			// on its own side (sim seed 2,289: both sides won keep-majority). Counted on
			// the other side, it can only make this side lose where the two views differ.
			others = append(others, id)
		case m.Status == Joining || m.Status == Removed:
			// Not counted. Exiting is, as Leaving: the two sides can disagree on which of the
			// two a leaving member is when a partition falls between (sim soak seed 6,284:
			// one side counted it, the other did not, and both won).
			continue
		case n.unreachable[id]:
			others = append(others, id)
		default:
			side = append(side, id)
		}
	}
	unreachable := make([]NodeID, 0, len(n.unreachable))
	for id := range n.unreachable {
		unreachable = append(unreachable, id)
	}
	slices.Sort(unreachable)
	sig := fmt.Sprint(unreachable, side, others)
	if sig != n.sbrSignature {
		n.sbrSignature, n.sbrSince = sig, n.now
		return
	}
	if n.now.Sub(n.sbrSince) < cfg.StableAfter {
		return
	}
	// A member counted on this side whose heartbeats are late may be on the other side of the
	// same partition with its detector not yet fired (detectors adapt to each peer's history
	// and fire at different times): deciding now could count it on the wrong side. Wait until
	// every member of this side is fresh or unreachable.
	for _, id := range side {
		if id != n.self.Node && n.late(id) {
			return
		}
	}
	decision := Downed{Side: side, Others: others, Strategy: cfg.ActiveStrategy}
	if n.unreachable[n.self.Node] {
		decision.Nodes = []NodeID{n.self.Node}
		decision.Reason = "another member cannot reach this one; downing itself"
		n.emit(decision)
		n.setStatus(n.self.Node, Down)
		return
	}
	win, why := decide(cfg, side, others, n.v.members)
	if !win {
		decision.Nodes = []NodeID{n.self.Node}
		decision.Reason = fmt.Sprintf("%s: this side lost (%s); downing itself", cfg.ActiveStrategy, why)
		n.emit(decision)
		n.setStatus(n.self.Node, Down)
		return
	}
	if n.leader != n.self.Node || n.suspect {
		return // the leader of this side downs the others; a suspect member decides only about itself
	}
	decision.Nodes = unreachable
	decision.Reason = fmt.Sprintf("%s: this side survives (%s); downing the unreachable members", cfg.ActiveStrategy, why)
	n.emit(decision)
	for _, id := range unreachable {
		n.setStatus(id, Down)
	}
}

// decide applies the strategy to this side and the other side (both sorted node ids) and
// reports whether this side survives, and why in words.
func decide(cfg SBRConfig, side, others []NodeID, members map[NodeID]*Member) (bool, string) {
	counts := fmt.Sprintf("%d here, %d unreachable", len(side), len(others))
	switch cfg.ActiveStrategy {
	case StaticQuorum:
		// With more than 2*quorum-1 members, both sides could hold a quorum: no safe decision
		// exists and, as in Akka, every side downs itself.
		if total := len(side) + len(others); total > 2*cfg.QuorumSize-1 {
			return false, fmt.Sprintf("%s: %d members exceed 2*quorum-size-1 = %d, so no side can be trusted", counts, total, 2*cfg.QuorumSize-1)
		}
		return len(side) >= cfg.QuorumSize, fmt.Sprintf("%s, quorum %d", counts, cfg.QuorumSize)
	case KeepOldest:
		var oldest *Member
		for _, id := range slices.Concat(side, others) {
			if m := members[id]; oldest == nil || m.OlderThan(oldest) {
				oldest = m
			}
		}
		if oldest == nil {
			return false, counts + ", no counted member"
		}
		here := slices.Contains(side, oldest.Node)
		where := "here"
		if !here {
			where = "on the other side"
		}
		why := fmt.Sprintf("%s, oldest %s %s", counts, oldest.Node.Short(), where)
		if cfg.DownIfAlone {
			if here && len(side) == 1 && len(others) > 0 {
				return false, why + " and alone"
			}
			if !here && len(others) == 1 && len(side) > 0 {
				return true, why + " and alone"
			}
		}
		return here, why
	default: // keep-majority
		switch {
		case len(side) > len(others):
			return true, counts
		case len(side) < len(others):
			return false, counts
		case len(side) == 0:
			return false, counts + ", no counted member"
		}
		lowest := slices.Min(slices.Concat(side, others))
		here := slices.Contains(side, lowest)
		return here, fmt.Sprintf("%s, a tie: the side with the lowest node id %s wins", counts, strings.TrimSpace(lowest.Short()))
	}
}

// late reports whether no heartbeat from id has arrived for two heartbeat intervals.
func (n *Node) late(id NodeID) bool {
	p := n.peers[id]
	return p == nil || n.now.Sub(p.fd.last) > 2*n.cfg.FailureDetector.HeartbeatInterval
}

package membership

import (
	"hash/fnv"
	"slices"
)

// Who exchanges heartbeats with whom.
//
// Heartbeating every member would cost each member a message to and from every other member
// every interval: a cost that grows with the cluster. Instead each member exchanges heartbeats
// with its neighbors (as Akka's HeartbeatNodeRing, each member is watched by a bounded number
// of others):
//
//   - the members nearest to it on a ring ordered by a hash of their node ids, half of
//     cluster.failure-detector.monitored-by-nr-of-members on either side (rounded up): they
//     watch each other, and write what they cannot reach in their reachability rows, which
//     spread by gossip;
//   - the voters (voters.go), whose echoes of its heartbeats are its lease grants;
//   - and, for a voter or the leader, every member: a voter grants the lease to every member,
//     so it watches every member (a grant must end before its failure detector could find the
//     grantee unreachable), and the leader learns from these heartbeats that every member has
//     seen its view before it acts.
//
// A member's cost is then a heartbeat to and from about monitored-by-nr-of-members + voters
// members each interval, whatever the cluster's size; a voter's grows with the cluster, by one
// small message each way per member and interval (1,000 a second at 1,000 members).
//
// Heartbeats go both ways: a member also answers, for the acceptable heartbeat pause, any
// member that heartbeats it, so two members whose views disagree for a moment on who watches
// whom do not find each other unreachable.

// ringHash places a member on the ring.
func ringHash(id NodeID) uint64 {
	h := fnv.New64a()
	h.Write([]byte(id))
	return h.Sum64()
}

// refreshTopology recomputes the ring and this member's neighbors from the view; flush calls
// it after every change.
func (n *Node) refreshTopology() {
	n.whole = n.voterWhole()
	n.ring = n.ring[:0]
	for id, m := range n.v.members {
		if m.countsAsMember() {
			n.ring = append(n.ring, id)
		}
	}
	slices.SortFunc(n.ring, func(a, b NodeID) int {
		ha, hb := ringHash(a), ringHash(b)
		switch {
		case ha < hb:
			return -1
		case ha > hb:
			return 1
		}
		return compareIDs(a, b)
	})
	clear(n.neighbors)
	me, _ := n.v.members[n.self.Node]
	all := me != nil && (me.Voter || n.leader == n.self.Node)
	if all || len(n.ring) <= n.cfg.FailureDetector.MonitoredByNrOfMembers+1 {
		for _, id := range n.ring {
			n.neighbors[id] = true
		}
	} else {
		i := slices.Index(n.ring, n.self.Node)
		half := (n.cfg.FailureDetector.MonitoredByNrOfMembers + 1) / 2
		for d := 1; i >= 0 && d <= half; d++ {
			n.neighbors[n.ring[(i+d)%len(n.ring)]] = true
			n.neighbors[n.ring[(i-d+len(n.ring))%len(n.ring)]] = true
		}
		for _, m := range n.whole {
			if m.countsAsMember() {
				n.neighbors[m.Node] = true
			}
		}
	}
	delete(n.neighbors, n.self.Node)
	n.neighborList = n.neighborList[:0]
	for id := range n.neighbors {
		n.neighborList = append(n.neighborList, id)
	}
	slices.Sort(n.neighborList)
}

// heartbeatTargets returns whom this member heartbeats now: its neighbors, and the members
// that heartbeated it within the acceptable heartbeat pause.
func (n *Node) heartbeatTargets() []NodeID {
	out := slices.Clone(n.neighborList)
	for id, p := range n.peers {
		if !n.neighbors[id] && !p.fd.last.IsZero() && !p.fd.assumed && n.now.Sub(p.fd.last) <= n.cfg.FailureDetector.AcceptableHeartbeatPause {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

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
// whom do not find each other unreachable. An answer is marked (Heartbeat.Answer) and is not
// answered in turn: two members that were neighbors once would otherwise keep each other
// heartbeating for good (at 1,000 members started in batches, a third more heartbeats).

// ringHash places a member on the ring.
func ringHash(id NodeID) uint64 {
	h := fnv.New64a()
	h.Write([]byte(id))
	return h.Sum64()
}

// refreshTopology brings the ring up to date with the members written since the last flush
// (touched) and recomputes this member's neighbors; flush calls it after every change.
func (n *Node) refreshTopology(touched []NodeID) {
	n.whole = n.voterWhole()
	n.updateRing(touched)
	clear(n.neighbors)
	me, _ := n.v.members[n.self.Node]
	all := me != nil && (me.Voter || n.leader == n.self.Node)
	if all || len(n.ring) <= n.cfg.FailureDetector.MonitoredByNrOfMembers+1 {
		for _, id := range n.ring {
			n.neighbors[id] = true
		}
	} else {
		i, found := slices.BinarySearchFunc(n.ring, n.self.Node, n.ringOrder)
		half := (n.cfg.FailureDetector.MonitoredByNrOfMembers + 1) / 2
		for d := 1; found && d <= half; d++ {
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

// updateRing puts the members of touched that started counting as members on the ring, and
// takes those that stopped off it.
func (n *Node) updateRing(touched []NodeID) {
	for _, id := range touched {
		i, in := slices.BinarySearchFunc(n.ring, id, n.ringOrder)
		switch counts := n.v.members[id].countsAsMember(); {
		case counts && !in:
			n.ring = slices.Insert(n.ring, i, id)
		case !counts && in:
			n.ring = slices.Delete(n.ring, i, i+1)
		}
	}
}

// ringOrder orders the ring: by ringHash, ties by id. The hashes are remembered per member.
func (n *Node) ringOrder(a, b NodeID) int {
	ha, hb := n.hashOf(a), n.hashOf(b)
	switch {
	case ha < hb:
		return -1
	case ha > hb:
		return 1
	}
	return compareIDs(a, b)
}

func (n *Node) hashOf(id NodeID) uint64 {
	h, ok := n.ringHashes[id]
	if !ok {
		h = ringHash(id)
		n.ringHashes[id] = h
	}
	return h
}

// heartbeatTargets returns whom this member heartbeats now: its neighbors, and the members
// that heartbeated it within the acceptable heartbeat pause, not as an answer
// (Heartbeat.Answer).
func (n *Node) heartbeatTargets() []NodeID {
	out := slices.Clone(n.neighborList)
	for id, p := range n.peers {
		if !n.neighbors[id] && !p.askedAt.IsZero() && n.now.Sub(p.askedAt) <= n.cfg.FailureDetector.AcceptableHeartbeatPause {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

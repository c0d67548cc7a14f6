package membership

import "slices"

// Voters: the members whose majority decides.
//
// A member serves only while a majority grants it the lease, and keep-majority keeps the side
// that holds a majority. Taken over every member, a member's lease would cost it a grant from
// half the cluster every heartbeat interval: a cost that grows with the cluster. So a bounded
// set decides, the voters: the oldest Up members with the split-brain resolver's role, up to
// cluster.voters (Config.Voters, 5). A cluster with no more Up members than that is all voters,
// as a cluster is all counted in Akka.
//
// The set changes only by leader actions at convergence, as Up moves do: the leader marks the
// oldest Up non-voters Voter while fewer than cluster.voters voters are not Removed, and a
// voter stays one until it is Removed. So two sides of a partition see the voters
// differently only by the one action a leader took at the instant the partition fell: the
// members it made voters. The whole of a majority (voterWhole) holds, besides the voters not
// Removed, every member a leader could have made a voter in another view at that instant;
// grants come only from the voters Up in this one — not Leaving: a Leaving voter may be
// Exiting on the other side, where it is in the whole but grants nothing, as keep-majority's
// edge case does not count it on this side. Every member that grants on one side
// is then in the whole of the other, and two majorities, one of each whole, always meet (the
// argument of majorityLease).

// voterWhole returns the members in the whole of a majority as this member sees it: the
// voters not Removed, and the possible voters (possiblePromotions).
func (n *Node) voterWhole() []*Member {
	whole := make([]*Member, 0, n.cfg.Voters+2)
	for id := range n.v.voters {
		whole = append(whole, n.v.members[id])
	}
	slices.SortFunc(whole, func(a, b *Member) int { return compareIDs(a.Node, b.Node) })
	return append(whole, n.v.possiblePromotions(n.cfg)...)
}

// VoterWhole returns the members a majority is taken of, as this member sees it (voterWhole):
// the voters not Removed and the possible voters, sorted. Two sides of a partition cannot both
// hold a majority of their wholes' grants (majorityLease).
func (n *Node) VoterWhole() []NodeID {
	out := make([]NodeID, len(n.whole))
	for i, m := range n.whole {
		out[i] = m.Node
	}
	slices.Sort(out)
	return out
}

// Voters returns the voters not Removed, sorted: the members whose grants make the serving
// lease (majorityLease takes grants from the voters alone) and whose majority keep-majority
// keeps. A side that holds a majority of the whole holds a majority of them. The replicated
// store keeps the cluster metadata, the split-brain resolver's lease among it, on them (node's
// placementOf): where the cluster may serve, a majority of the metadata's replicas is.
func (n *Node) Voters() []NodeID {
	out := make([]NodeID, 0, len(n.v.voters))
	for id := range n.v.voters {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

// votersMissing reports whether fewer than cluster.voters voters are not Removed, so the
// leader has voters to make (promoteVoters) once Up members without a vote are there.
func (n *Node) votersMissing() bool { return len(n.v.voters) < n.cfg.Voters }

// possiblePromotions returns the members a leader could have made voters in a view that
// parted from this one at a leader action: while fewer than cluster.voters voters are
// counted (Up or Leaving: an Exiting or Down voter here may have been removed there, freeing
// its place), the oldest non-voters with the role that could be Up there (Up, Leaving;
// Joining members after them, in the order the leader moves them Up), as many as are
// missing. Down non-voters met on the way are in too, without counting towards that number:
// Down here, one may not be Down on the other side.
func (v *view) possiblePromotions(cfg Config) []*Member {
	role := cfg.SplitBrainResolver.Role
	missing := cfg.Voters
	for id := range v.voters {
		if m := v.members[id]; m.HasRole(role) && m.counted() {
			missing--
		}
	}
	if missing <= 0 {
		return nil // the common case: no look at every member
	}
	var candidates []*Member
	for _, m := range v.members {
		if m.HasRole(role) && m.Status != Removed && m.Status != Exiting && !m.Voter {
			candidates = append(candidates, m)
		}
	}
	slices.SortFunc(candidates, byAge) // Joining members (no up-number) last, by node id
	var out []*Member
	for _, m := range candidates {
		if missing == 0 {
			break
		}
		out = append(out, m)
		if m.Status != Down {
			missing--
		}
	}
	return out
}

// promoteVoters is the leader's action at convergence: the oldest Up members with the role
// that are not voters become voters while fewer than cluster.voters voters are not Removed.
// A voter that is Leaving, Exiting or Down keeps its place until it is Removed: a side cut
// off with it may still count it, and the members its grants came from must stay the whole
// until it is gone (leaseExpired judges its removal against that whole).
func (n *Node) promoteVoters() {
	if !n.votersMissing() {
		return
	}
	role := n.cfg.SplitBrainResolver.Role
	placed := len(n.v.voters)
	var candidates []*Member
	for _, m := range n.v.members {
		if !m.Voter && m.Status == Up && m.HasRole(role) {
			candidates = append(candidates, m)
		}
	}
	if len(candidates) == 0 {
		return
	}
	slices.SortFunc(candidates, byAge)
	for _, m := range candidates[:min(len(candidates), n.cfg.Voters-placed)] {
		c := m.clone()
		c.Voter = true
		n.v.put(c)
		n.dirty = true
	}
}

// byAge orders members oldest first (Member.OlderThan).
func byAge(a, b *Member) int {
	switch {
	case a.Node == b.Node:
		return 0
	case a.OlderThan(b):
		return -1
	}
	return 1
}

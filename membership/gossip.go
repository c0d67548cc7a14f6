package membership

import (
	"encoding/binary"
	"hash/fnv"
	"math/bits"
	"slices"
)

// How the view spreads: push-pull exchanges of the parts that differ.
//
// Broadcasting the whole state on every change would cost each member the whole state of the
// cluster per change and member. Instead two members compare their state bucket by bucket
// and send each other only the buckets that differ (as Cassandra's repair compares ranges by
// hash):
//
//  1. A sends B a GossipStatus: the digest of each bucket of its state (member records and
//     reachability rows, placed by a hash of the node id).
//  2. B answers with a Gossip holding its records of every bucket whose digest differs, and
//     its own bucket digests (Reply).
//  3. A merges them; every bucket that still differs from B's holds something B lacks, and A
//     sends B those records.
//
// A member starts an exchange every gossip-interval with a neighbor whose heartbeats report
// another view (or, while it has changed its own view within the last few intervals, with a
// member picked at random), and at once with gossipFanout members when its own view changes.
// An idle cluster exchanges nothing but heartbeats; a change costs its bucket, a few members
// in each, per exchange.

// gossipFanout is how many members a member starts an exchange with when its view changes.
const gossipFanout = 3

// bucketCount returns how many buckets a state of members members is compared in: about 8
// members a bucket, a power of two from 1 to 256.
func bucketCount(members int) int {
	b := 1
	if members > 8 {
		b = 1 << bits.Len(uint(members-1)/8)
	}
	return min(b, 256)
}

func bucketOf(id NodeID, buckets int) int { return int(ringHash(id) % uint64(buckets)) }

// bucketDigests returns the digest of each of buckets buckets of the view: what merge compares
// of the member records and reachability rows placed in it, in node id order.
func (v *view) bucketDigests(buckets int) []uint64 {
	hs := make([]uint64, buckets)
	var b [8]byte
	mix := func(i int, parts ...uint64) {
		h := fnv.New64a()
		binary.LittleEndian.PutUint64(b[:], hs[i])
		h.Write(b[:])
		for _, p := range parts {
			binary.LittleEndian.PutUint64(b[:], p)
			h.Write(b[:])
		}
		hs[i] = h.Sum64()
	}
	for _, id := range v.sortedIDs() {
		m := v.members[id]
		voter := uint64(0)
		if m.Voter {
			voter = 1
		}
		mix(bucketOf(id, buckets), ringHash(id), m.Incarnation, uint64(m.Status), m.UpNumber, voter)
	}
	obs := make([]NodeID, 0, len(v.reach))
	for id := range v.reach {
		obs = append(obs, id)
	}
	slices.Sort(obs)
	for _, id := range obs {
		r := v.reach[id]
		parts := []uint64{ringHash(id) ^ 0x5eed, r.Incarnation, r.Version}
		for _, u := range r.Unreachable {
			parts = append(parts, ringHash(u))
		}
		mix(bucketOf(id, buckets), parts...)
	}
	return hs
}

// part returns the records of the view in the given buckets (of buckets buckets), sorted as
// snapshot sorts them.
func (v *view) part(buckets int, in func(bucket int) bool) State {
	var s State
	for _, id := range v.sortedIDs() {
		if in(bucketOf(id, buckets)) {
			s.Members = append(s.Members, *v.members[id].clone())
		}
	}
	obs := make([]NodeID, 0, len(v.reach))
	for id := range v.reach {
		obs = append(obs, id)
	}
	slices.Sort(obs)
	for _, id := range obs {
		if in(bucketOf(id, buckets)) {
			r := *v.reach[id]
			r.Unreachable = slices.Clone(r.Unreachable)
			s.Reach = append(s.Reach, r)
		}
	}
	return s
}

// startExchange opens a push-pull exchange with member to.
func (n *Node) startExchange(to NodeID) {
	if to == n.self.Node {
		return
	}
	n.lastExchange[to] = n.now
	buckets := bucketCount(len(n.v.members))
	n.send(to, GossipStatus{From: n.self.Node, Digest: n.digest, Buckets: n.v.bucketDigests(buckets)})
}

// answerStatus is step 2: the records of every bucket that differs, and this member's digests.
func (n *Node) answerStatus(st GossipStatus) {
	if st.Digest == n.digest || len(st.Buckets) == 0 || len(st.Buckets) > 256 {
		return
	}
	mine := n.v.bucketDigests(len(st.Buckets))
	part := n.v.part(len(st.Buckets), func(b int) bool { return mine[b] != st.Buckets[b] })
	n.send(st.From, Gossip{From: n.self.Node, State: part, Buckets: mine, Reply: true})
}

// answerReply is step 3: after merging the reply, the records of every bucket that still
// differs from the other member's, which it lacks.
func (n *Node) answerReply(g Gossip) {
	mine := n.v.bucketDigests(len(g.Buckets))
	if slices.Equal(mine, g.Buckets) {
		return
	}
	part := n.v.part(len(g.Buckets), func(b int) bool { return mine[b] != g.Buckets[b] })
	n.send(g.From, Gossip{From: n.self.Node, State: part})
}

// gossipTick starts, every gossip-interval, one exchange: with a neighbor whose heartbeats
// report another view, or — while this member's view changed within the last few intervals,
// so that a change reaches the whole cluster in a few rounds — with a member at random.
func (n *Node) gossipTick() {
	if n.now.Sub(n.lastGossip) < n.cfg.GossipInterval {
		return
	}
	n.lastGossip = n.now
	var behind []NodeID
	for _, id := range n.neighborList {
		if p := n.peers[id]; p != nil && p.hasDigest && p.digest != n.digest && !n.unreachable[id] {
			behind = append(behind, id)
		}
	}
	switch {
	case len(behind) > 0:
		n.startExchange(behind[n.rng.IntN(len(behind))])
	case n.now.Sub(n.viewChangedAt) < 5*n.cfg.GossipInterval:
		n.startExchange(n.randomMember())
	}
}

// gossipChange starts exchanges with gossipFanout members at once after this member's view
// changed: neighbors first, then members at random.
func (n *Node) gossipChange() {
	n.viewChangedAt = n.now
	picked := map[NodeID]bool{}
	for range gossipFanout {
		to := n.randomMember()
		if to == "" || picked[to] {
			continue
		}
		picked[to] = true
		n.startExchange(to)
	}
}

// randomMember returns a member other than this one that takes part in the cluster and is
// reachable, picked at random ("" when there is none).
func (n *Node) randomMember() NodeID {
	if len(n.ring) < 2 {
		return ""
	}
	for range 4 {
		id := n.ring[n.rng.IntN(len(n.ring))]
		if id != n.self.Node && !n.unreachable[id] {
			return id
		}
	}
	return ""
}

// tellStatus sends a member that is Down or Removed, yet still heartbeats, its own record, so
// it learns and stops; at most once per gossip-interval.
func (n *Node) tellStatus(to NodeID) {
	if n.now.Sub(n.lastExchange[to]) < n.cfg.GossipInterval {
		return
	}
	n.lastExchange[to] = n.now
	m := n.v.members[to]
	n.send(to, Gossip{From: n.self.Node, State: State{Members: []Member{*m.clone()}}})
}

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

// fineBuckets is how many buckets the view keeps a digest of (view.buckets): the most an
// exchange compares. An exchange in fewer buckets unites fine buckets i, i+b, i+2b, … into
// its bucket i of b (ringHash % b is (ringHash % fineBuckets) % b for b a power of two).
const fineBuckets = 256

func fineBucketOf(id NodeID) int { return int(ringHash(id) % fineBuckets) }

// bucketSum returns the digest of fine bucket i — of what merge compares of the member
// records and reachability rows in it, in node id order — computing it again only when it
// was written since.
func (v *view) bucketSum(i int) uint64 {
	b := &v.buckets[i]
	if !b.stale {
		return b.sum
	}
	h := fnv.New64a()
	var buf [8]byte
	num := func(n uint64) {
		binary.LittleEndian.PutUint64(buf[:], n)
		h.Write(buf[:])
	}
	str := func(s NodeID) {
		num(uint64(len(s)))
		h.Write([]byte(s))
	}
	for _, id := range b.ids {
		m := v.members[id]
		str(id)
		num(m.Incarnation)
		num(uint64(m.Status))
		num(m.UpNumber)
		if m.Voter {
			num(1)
		} else {
			num(0)
		}
	}
	num(^uint64(0)) // members end, rows begin
	for _, id := range b.obs {
		r := v.reach[id]
		str(id)
		num(r.Incarnation)
		num(r.Version)
		num(uint64(len(r.Unreachable)))
		for _, u := range r.Unreachable {
			str(u)
		}
	}
	b.sum, b.stale = h.Sum64(), false
	return b.sum
}

// bucketDigests returns the digest of each of buckets buckets of the view (a power of two up
// to fineBuckets): the digest of its fine buckets' digests.
func (v *view) bucketDigests(buckets int) []uint64 {
	hs := make([]uint64, buckets)
	var buf [8]byte
	for i := range hs {
		h := fnv.New64a()
		for j := i; j < fineBuckets; j += buckets {
			binary.LittleEndian.PutUint64(buf[:], v.bucketSum(j))
			h.Write(buf[:])
		}
		hs[i] = h.Sum64()
	}
	return hs
}

// part returns the records of the view in the given buckets (of buckets buckets). The records
// share their slices with the view, which never changes a record in place (view.put).
func (v *view) part(buckets int, in func(bucket int) bool) State {
	var s State
	for j := range fineBuckets {
		if !in(j % buckets) {
			continue
		}
		b := &v.buckets[j]
		for _, id := range b.ids {
			s.Members = append(s.Members, *v.members[id])
		}
		for _, id := range b.obs {
			s.Reach = append(s.Reach, *v.reach[id])
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

// pull starts an exchange with member from, whose heartbeat reports a view this member never
// had (it knows something this one does not). A change spreads by the exchanges its members
// start (gossipChange), which leave a few members out (with a fanout of 3, about one in
// twenty); they learn it from the first heartbeat of a neighbor that has it, not at their
// next gossip-interval. A member pulls at most once every tenth of gossip-interval: a pull
// asked for sooner is put off to the first tick after that (pullIfDue), not dropped — two
// changes a moment apart (a leaving member's Leaving, then its Exiting) would otherwise
// leave a member that pulled the first without the second until its next gossip-interval.
func (n *Node) pull(from NodeID) {
	if n.unreachable[from] {
		return
	}
	if n.now.Sub(n.lastPull) < n.cfg.GossipInterval/10 {
		n.pullDue = from
		return
	}
	n.lastPull, n.pullDue = n.now, ""
	n.startExchange(from)
}

// pullIfDue carries out a pull that was put off, if the member still reports a view this
// member never had.
func (n *Node) pullIfDue() {
	if n.pullDue == "" || n.now.Sub(n.lastPull) < n.cfg.GossipInterval/10 {
		return
	}
	from := n.pullDue
	n.pullDue = ""
	if p := n.peers[from]; p != nil && p.hasDigest && !n.agrees(p.digest) {
		n.pull(from)
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

package membership

import (
	"fmt"
	"slices"
	"time"
)

// A member given a static list of seeds (JoinSeeds) joins through the first of them that
// admits it. When none can — the whole cluster restarting cold, or restarted after the
// split-brain resolver downed every member — each would wait for the others for ever. So,
// as Akka Cluster Bootstrap does for members found by discovery (discovery.Bootstrap does it
// for --join-dns), exactly one of them forms a new cluster: the one with the lowest node
// id, once every seed it was given has answered that it is in no cluster either
// (NotMember), that its own seeds are in none, and that it knows no lower id, and all of
// that has held for seed-node-timeout. A seed that is a member admits at once, and one that
// does not answer holds the decision back, so a member restarted into a running cluster
// joins it. A cluster formed so still moves nobody Up before min-nr-of-members and, after a
// restart, a majority of the last cluster's size have joined (RestartQuorum): two members
// that formed on lists that did not overlap cannot both get that far.

// seedBootstrap is the state of the rule above.
type seedBootstrap struct {
	seeds  []NodeID               // every seed given, sorted, without this member
	nacks  map[NodeID]notMemberAt // the latest NotMember of each seed
	askers map[NodeID]time.Time   // members in no cluster that asked this one to admit them
	since  time.Time              // since when the rule has held; zero: it does not
}

type notMemberAt struct {
	at     time.Time
	lowest NodeID
	inNone bool // its seeds are all in no cluster
}

// JoinSeeds gives the whole list of seeds this member was configured with (a member that
// forms a cluster or joins by discovery gives none). JoinVia still asks each one as it
// becomes reachable.
func (n *Node) JoinSeeds(now time.Time, seeds []NodeID) {
	n.now = now
	if n.joined || n.stopped != nil {
		return
	}
	b := &seedBootstrap{nacks: map[NodeID]notMemberAt{}, askers: map[NodeID]time.Time{}}
	for _, s := range seeds {
		if s != n.self.Node && !slices.Contains(b.seeds, s) {
			b.seeds = append(b.seeds, s)
		}
	}
	if len(b.seeds) == 0 {
		return
	}
	slices.Sort(b.seeds)
	n.boot = b
}

// bootFresh is how long a NotMember or a join request counts: two rounds of join requests.
func (n *Node) bootFresh() time.Duration { return 2 * n.cfg.SeedNodeTimeout }

// lowestLooking is the lowest node id this member knows of the members looking for a
// cluster: itself, its seeds, the members that asked it lately, and the lowest its seeds
// named lately.
func (n *Node) lowestLooking() NodeID {
	low := n.self.Node
	b := n.boot
	if b == nil {
		return low
	}
	if len(b.seeds) > 0 && b.seeds[0] < low {
		low = b.seeds[0]
	}
	for id, at := range b.askers {
		if n.now.Sub(at) <= n.bootFresh() && id < low {
			low = id
		}
	}
	for _, k := range b.nacks {
		if n.now.Sub(k.at) <= n.bootFresh() && k.lowest != "" && k.lowest < low {
			low = k.lowest
		}
	}
	return low
}

// seedsInNone reports whether every seed this member was given answered lately that it is
// in no cluster.
func (n *Node) seedsInNone() bool {
	if n.boot == nil {
		return false
	}
	for _, s := range n.boot.seeds {
		k, ok := n.boot.nacks[s]
		if !ok || n.now.Sub(k.at) > n.bootFresh() {
			return false
		}
	}
	return true
}

// answerNotMember answers a join request while this member is in no cluster.
func (n *Node) answerNotMember(from NodeID, req JoinRequest) {
	if n.stopped != nil || !req.AsksNotMember {
		return
	}
	if n.boot != nil {
		n.boot.askers[from] = n.now
	}
	n.send(from, NotMember{From: n.self.Node, Lowest: n.lowestLooking(), SeedsInNone: n.seedsInNone()})
}

func (n *Node) handleNotMember(from NodeID, m NotMember) {
	if n.joined || n.boot == nil || m.From != from || !slices.Contains(n.boot.seeds, from) {
		return
	}
	n.boot.nacks[from] = notMemberAt{at: n.now, lowest: m.Lowest, inNone: m.SeedsInNone}
}

// bootstrapTick forms a new cluster when the rule above says this member is the one.
func (n *Node) bootstrapTick() {
	b := n.boot
	if b == nil || n.joined || n.stopped != nil {
		return
	}
	holds := n.lowestLooking() == n.self.Node && n.seedsInNone() // every seed answered lately
	for _, s := range b.seeds {
		if k := b.nacks[s]; k.lowest != n.self.Node || !k.inNone {
			holds = false // it knows a lower id, or waits for a seed of its own
			break
		}
	}
	switch {
	case !holds:
		b.since = time.Time{}
		return
	case b.since.IsZero():
		b.since = n.now
		return
	case n.now.Sub(b.since) < n.cfg.SeedNodeTimeout:
		return
	}
	n.emit(Formed{Why: fmt.Sprintf("none of the %d seeds given is in a cluster, and this member has the lowest node id of those looking for one, for %v (seed-node-timeout)",
		len(b.seeds), n.cfg.SeedNodeTimeout)})
	n.boot = nil
	n.FormCluster(n.now)
}

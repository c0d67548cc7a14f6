package sim

import (
	"time"

	"github.com/shardmesh/shardmesh/membership"
	"github.com/shardmesh/shardmesh/node"
)

// The split-brain resolver's lease (lease-majority), as an external lease every node reaches
// (the store lease, or a lock service): one owner at a time, renewed while its process runs
// (a paused process renews nothing), taken by another once it expired. Nodes cut from it
// (CutResolverLease) are answered no.

// resolverLeaseTTL is how long the lease lasts without renewal (the store lease's
// heartbeat-timeout, scaled to the simulation's short stable-after).
const resolverLeaseTTL = 3 * time.Second

type resolverLease struct {
	owner   membership.NodeID
	inc     uint64
	expires time.Time
	cut     map[int]bool // nodes that cannot reach the lease
}

// CutResolverLease makes the resolver's lease unreachable from nodes (their acquisitions are
// answered no), none when nodes is empty.
func (s *Sim) CutResolverLease(nodes ...int) {
	s.resolverLease().cut = map[int]bool{}
	for _, i := range nodes {
		s.resolverLease().cut[i] = true
	}
}

func (s *Sim) resolverLease() *resolverLease {
	if s.sbrLease == nil {
		s.sbrLease = &resolverLease{cut: map[int]bool{}}
	}
	return s.sbrLease
}

// holdsResolverLease reports whether node n holds the resolver's lease now.
func (s *Sim) holdsResolverLease(n *Node) bool {
	l := s.resolverLease()
	return l.owner == n.ID && l.inc == n.Incarnation && s.now.Before(l.expires)
}

// resolverLeaseOp carries out an operation on the resolver's lease, answering an acquisition
// after a small delay.
func (s *Sim) resolverLeaseOp(n *Node, op membership.LeaseOp) {
	l, inc := s.resolverLease(), n.Incarnation
	if op.Release {
		if l.owner == n.ID && l.inc == inc {
			l.owner, l.inc = "", 0
		}
		s.logf("%s releases the resolver's lease", n.ID)
		return
	}
	s.schedule(time.Duration(1+s.auxRng.IntN(20))*time.Millisecond, func() {
		if !n.Alive || n.Incarnation != inc {
			return
		}
		ok := !l.cut[n.Index] && (l.owner == "" || !s.now.Before(l.expires) || (l.owner == n.ID && l.inc == inc))
		if ok {
			l.owner, l.inc, l.expires = n.ID, inc, s.now.Add(resolverLeaseTTL)
		}
		s.logf("%s asks for the resolver's lease: %v", n.ID, ok)
		s.input(n, inc, node.ResolverLeaseResult{Seq: op.Seq, Held: ok})
	})
}

// renewResolverLease renews the resolver's lease for its holder n (at n's ticks), unless n is
// cut from it.
func (s *Sim) renewResolverLease(n *Node) {
	if l := s.sbrLease; l != nil && s.holdsResolverLease(n) && !l.cut[n.Index] {
		l.expires = s.now.Add(resolverLeaseTTL)
	}
}

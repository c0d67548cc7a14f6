package sim

import (
	"cmp"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/shardmesh/shardmesh/engine"
	"github.com/shardmesh/shardmesh/membership"
	"github.com/shardmesh/shardmesh/node"
	"github.com/shardmesh/shardmesh/shard"
)

// The shards' leases (use-lease), as an external lease service every node reaches (the
// lock service two clusters formed by mistake would share): a table of owners and expiries.
// A holder renews its leases on every tick while it runs; a lease not renewed for leaseTTL
// expires and can be taken by another; a holder notices a lost lease on its next tick.

// leaseTTL is how long a lease lasts without renewal.
const leaseTTL = 3 * time.Second

type leaseKey struct {
	typ   string
	shard shard.ID
}

type simLease struct {
	owner   membership.NodeID
	inc     uint64
	expires time.Time
}

// leaseOp answers a node's lease operation after a small delay.
func (s *Sim) leaseOp(n *Node, op engine.LeaseOp) {
	k, inc := leaseKey{op.Type, op.Shard}, n.Incarnation
	switch op.Kind {
	case engine.LeaseRelease:
		if l := s.leases[k]; l != nil && l.owner == n.ID && l.inc == inc {
			delete(s.leases, k)
		}
		delete(n.leases, k)
	case engine.LeaseAcquire:
		s.schedule(time.Duration(1+s.auxRng.IntN(20))*time.Millisecond, func() {
			if !n.Alive || n.Incarnation != inc {
				return
			}
			l := s.leases[k]
			ok := l == nil || !s.now.Before(l.expires) || (l.owner == n.ID && l.inc == inc)
			if ok {
				s.leases[k] = &simLease{owner: n.ID, inc: inc, expires: s.now.Add(leaseTTL)}
				n.leases[k] = op.Gen
			}
			s.input(n, inc, node.LeaseAcquired{Op: op, OK: ok})
		})
	}
}

// tickLeases renews the leases node n holds (the resolver's too) and reports those it lost.
func (s *Sim) tickLeases(n *Node) {
	s.renewResolverLease(n)
	keys := slices.SortedFunc(maps.Keys(n.leases), func(a, b leaseKey) int {
		return cmp.Or(strings.Compare(a.typ, b.typ), strings.Compare(string(a.shard), string(b.shard)))
	})
	for _, k := range keys {
		gen := n.leases[k]
		l := s.leases[k]
		if l != nil && l.owner == n.ID && l.inc == n.Incarnation && s.now.Before(l.expires) {
			l.expires = s.now.Add(leaseTTL)
			continue
		}
		delete(n.leases, k)
		s.logf("%s: lease of %s/%s lost", n.ID, k.typ, k.shard)
		n.Core.Step(s.now, node.LeaseLost{Op: engine.LeaseOp{Kind: engine.LeaseAcquire, Type: k.typ, Shard: k.shard, Gen: gen}})
	}
}

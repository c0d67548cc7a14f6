package node

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/shardmesh/shardmesh/engine"
	"github.com/shardmesh/shardmesh/lease"
	"github.com/shardmesh/shardmesh/shard"
)

// leaseKey names a local shard's lease.
type leaseKey struct {
	typ   string
	shard shard.ID
}

// leases holds the leases of the local shards that use one: one Lease per shard for the
// member's life (a Provider makes one per name and owner), and the generation of the local
// shard that last asked for it — a release from an older generation must not give up what a
// newer one holds.
type leases struct {
	mu       sync.Mutex
	provider lease.Provider
	of       map[leaseKey]lease.Lease
	gen      map[leaseKey]uint64
}

// leaseName is the lease of a shard, as Akka names it: <cluster>-shard-<type>-<shard>.
func (n *Node) leaseName(typ string, s shard.ID) string {
	return fmt.Sprintf("%s-shard-%s-%s", n.cfg.ClusterName, typ, s)
}

// Lease carries out a lease operation on its own goroutine (an acquisition is a store
// round or an external call): Env.
func (e *nodeEnv) Lease(op engine.LeaseOp) {
	n := (*Node)(e)
	{
		k := leaseKey{op.Type, op.Shard}
		switch op.Kind {
		case engine.LeaseAcquire:
			n.leases.mu.Lock()
			l := n.leases.of[k]
			if l == nil {
				l = n.leases.provider.Lease(n.leaseName(op.Type, op.Shard), string(n.self.Node))
				n.leases.of[k] = l
			}
			n.leases.gen[k] = op.Gen
			n.leases.mu.Unlock()
			go n.acquireLease(l, op)
		case engine.LeaseRelease:
			n.leases.mu.Lock()
			l := n.leases.of[k]
			current := n.leases.gen[k] == op.Gen
			if current {
				delete(n.leases.gen, k)
			}
			n.leases.mu.Unlock()
			if l != nil && current {
				go func() {
					defer n.caught("releasing a shard lease")
					ctx, cancel := context.WithTimeout(n.ctx, 10*time.Second)
					defer cancel()
					if err := l.Release(ctx); err != nil && n.ctx.Err() == nil {
						n.log.Warn("lease not released; it expires by itself", "type", op.Type, "shard", op.Shard, "err", err)
					}
				}()
			}
		}
	}
}

func (n *Node) acquireLease(l lease.Lease, op engine.LeaseOp) {
	defer n.caught("acquiring a shard lease")
	ctx, cancel := context.WithTimeout(n.ctx, 10*time.Second)
	defer cancel()
	ok, err := l.Acquire(ctx, func(err error) {
		n.log.Warn("shard lease lost: stopping its entities", "type", op.Type, "shard", op.Shard, "err", err)
		n.post(LeaseLost{Op: op})
	})
	if err != nil && n.ctx.Err() == nil {
		n.log.Info("shard lease not acquired; trying again after lease-retry-interval", "type", op.Type, "shard", op.Shard, "err", err)
	}
	n.post(LeaseAcquired{Op: op, OK: ok && err == nil})
}

// releaseLeases gives up every lease this member holds, the split-brain resolver's too (it is
// closing): another member may take them at once, and their renewals stop.
func (n *Node) releaseLeases(ctx context.Context) {
	n.leases.mu.Lock()
	held := make([]lease.Lease, 0, len(n.leases.gen))
	for k := range n.leases.gen {
		held = append(held, n.leases.of[k])
	}
	clear(n.leases.gen)
	n.leases.mu.Unlock()
	if n.resolverLease != nil { // the split-brain resolver's; the loop has stopped
		held = append(held, n.resolverLease)
	}
	for _, l := range held {
		if err := l.Release(ctx); err != nil {
			n.log.Debug("lease not released at close; it expires by itself", "err", err)
		}
	}
}

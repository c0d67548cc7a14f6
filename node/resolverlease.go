package node

import (
	"context"
	"time"

	"github.com/shardmesh/shardmesh/membership"
)

// The split-brain resolver's lease (lease-majority): the membership machine asks for it in its
// Ready (engine.Ready.ResolverLease) and is told the result; this carries the operations out
// on the lease Config.ResolverLease makes, each on its own goroutine (an acquisition is a store
// round or an external call).

// resolverLeaseName is the lease's name when lease-majority.lease-name is not set.
func (n *Node) resolverLeaseName(name string) string {
	if name != "" {
		return name
	}
	return n.cfg.ClusterName + "-shardmesh-sbr"
}

func (n *Node) resolverLeaseOps(ops []membership.LeaseOp) {
	for _, op := range ops {
		if n.resolverLease == nil { // op.Name is lease-majority.lease-name, as the store was told (store.go)
			n.resolverLease = n.cfg.ResolverLease(n.store).Lease(n.resolverLeaseName(op.Name), string(n.self.Node))
		}
		l := n.resolverLease
		timeout := n.cfg.Membership.SplitBrainResolver.LeaseMajority.LeaseOperationTimeout
		if op.Release {
			go func() {
				ctx, cancel := context.WithTimeout(n.ctx, timeout)
				defer cancel()
				if err := l.Release(ctx); err != nil && n.ctx.Err() == nil {
					n.log.Warn("split-brain resolver: lease not released; it expires by itself", "err", err)
				}
			}()
			continue
		}
		go func() {
			ctx, cancel := context.WithTimeout(n.ctx, timeout)
			defer cancel()
			held, err := l.Acquire(ctx, func(err error) {
				n.log.Warn("split-brain resolver: lease lost", "err", err)
			})
			if err != nil && n.ctx.Err() == nil {
				n.log.Warn("split-brain resolver: lease not acquired", "err", err)
			}
			n.command(func(now time.Time) { n.eng.ResolverLeaseResult(now, op.Seq, held && err == nil) })
		}()
	}
}

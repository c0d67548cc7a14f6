package node

import (
	"context"

	"github.com/shardmesh/shardmesh/membership"
)

// The split-brain resolver's lease (lease-majority): the membership machine asks for it in its
// Ready (engine.Ready.ResolverLease), the Core hands the operations to its Env, and the answer
// comes back as a ResolverLeaseResult. Node carries them out on the lease Config.ResolverLease
// makes, each on its own goroutine (an acquisition is a store round or an external call).

// ResolverLeaseName is the name of the split-brain resolver's lease: lease-majority.lease-name
// (name), or <cluster>-shardmesh-sbr when it is not set.
func ResolverLeaseName(cluster, name string) string {
	if name != "" {
		return name
	}
	return cluster + "-shardmesh-sbr"
}

// ResolverLease carries out an operation on the resolver's lease (Env).
func (e *nodeEnv) ResolverLease(op membership.LeaseOp) {
	n := (*Node)(e)
	if n.resolverLease == nil {
		n.resolverLease = n.cfg.ResolverLease(n.store).Lease(ResolverLeaseName(n.cfg.ClusterName, op.Name), string(n.self.Node))
	}
	l := n.resolverLease
	timeout := n.cfg.Membership.SplitBrainResolver.LeaseMajority.LeaseOperationTimeout
	if op.Release {
		go func() {
			defer n.caught("releasing the split-brain resolver's lease")
			ctx, cancel := context.WithTimeout(n.ctx, timeout)
			defer cancel()
			if err := l.Release(ctx); err != nil && n.ctx.Err() == nil {
				n.log.Warn("split-brain resolver: lease not released; it expires by itself", "err", err)
			}
		}()
		return
	}
	go func() {
		defer n.caught("acquiring the split-brain resolver's lease")
		ctx, cancel := context.WithTimeout(n.ctx, timeout)
		defer cancel()
		held, err := l.Acquire(ctx, func(err error) {
			n.log.Warn("split-brain resolver: lease lost", "err", err)
		})
		if err != nil && n.ctx.Err() == nil {
			n.log.Warn("split-brain resolver: lease not acquired", "err", err)
		}
		n.post(ResolverLeaseResult{Seq: op.Seq, Held: held && err == nil})
	}()
}

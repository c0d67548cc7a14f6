package node

import (
	"context"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/shardmesh/shardmesh/membership"
	"github.com/shardmesh/shardmesh/p2p"
)

// Discovery finds the members to join when Config.Join is empty (discovery.DNS). Run runs
// in the background from the start until joined reports true or ctx ends; it calls joinVia
// for each member found (connected first, through host) and form when this member is to
// form a new cluster, with the reason for the log.
type Discovery interface {
	Run(ctx context.Context, host *p2p.Host, joined func() bool, joinVia func(peer.ID), form func(why string))
}

// discoverByConfig runs Config.Discovery in place of forming a cluster at once.
func (n *Node) discoverByConfig() {
	defer n.wg.Done()
	joined := func() bool { v := n.core.View(); return v != nil && v.Joined }
	joinVia := func(id peer.ID) { n.post(JoinVia{Seed: membership.NodeID(id.String())}) }
	form := func(why string) {
		n.log.Info("forming a new cluster", "why", why, "last_cluster_size", n.self.LastClusterSize)
		n.post(FormCluster{})
	}
	n.cfg.Discovery.Run(n.ctx, n.host, joined, joinVia, form)
}

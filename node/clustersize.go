package node

import (
	"time"

	"github.com/shardmesh/shardmesh/datadir"
	"github.com/shardmesh/shardmesh/membership"
)

// noteClusterSize hands a changed cluster size to writeClusterSize; called by publishView on
// the loop, the only writer of sizeLatest.
func (n *Node) noteClusterSize(m *membership.Node) {
	size, ok := m.ClusterSize()
	if !ok || size == n.sizeLatest.Load() {
		return
	}
	n.sizeLatest.Store(size)
	select {
	case n.sizeDue <- struct{}{}:
	default: // a write is due already; it takes the latest size
	}
}

// writeClusterSize keeps the last cluster size on disk, off the loop (a write and an fsync
// per membership change); a failed write is tried again every second until one succeeds.
func (n *Node) writeClusterSize() {
	defer n.wg.Done()
	var written uint32
	failing := false
	for {
		if size := n.sizeLatest.Load(); size != written {
			err := n.dir.WriteLastClusterSize(size)
			if err == nil {
				written, failing = size, false
			} else {
				if !failing {
					n.log.Warn("cannot keep the size of the cluster; a restart of the whole cluster may read a stale coordinator state; retrying every second", "file", n.dir.File(datadir.LastClusterFile), "err", err)
				}
				failing = true
				select {
				case <-n.ctx.Done():
					return
				case <-time.After(time.Second):
				}
				continue
			}
		}
		select {
		case <-n.ctx.Done():
			return
		case <-n.sizeDue:
		}
	}
}

// warnRestartQuorum logs membership.RestartWait once the wait has lasted 5 s, and every 10 s
// while it lasts (a restart of a whole cluster waits a moment for its members as they start,
// which is no news); called by publishView on the loop.
func (n *Node) warnRestartQuorum(v *View) {
	why := membership.RestartWait(v.RestartNeed, v.RestartJoined)
	if why == "" || !v.Joined {
		n.quorumWaitSince = time.Time{}
		return
	}
	now := time.Now()
	if n.quorumWaitSince.IsZero() {
		n.quorumWaitSince = now
	}
	if now.Sub(n.quorumWaitSince) < 5*time.Second || now.Sub(n.quorumWarned) < 10*time.Second {
		return
	}
	n.quorumWarned = now
	n.log.Warn("waiting for members of the last cluster: " + why)
}

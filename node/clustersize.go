package node

import (
	"time"

	"github.com/shardmesh/shardmesh/datadir"
)

// KeepClusterSize hands a changed cluster size to writeClusterSize (Env); called on the loop,
// the only writer of sizeLatest.
func (e *nodeEnv) KeepClusterSize(size uint32) {
	e.sizeLatest.Store(size)
	select {
	case e.sizeDue <- struct{}{}:
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

package node

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/shardmesh/shardmesh/membership"
)

// The size of the last cluster: how many members (not Down or Removed) the cluster had the
// last time this member was Up in it, kept in the data directory so that the member's next
// process can ask a forming cluster to wait for a majority of it (membership.RestartQuorum)
// before anything reads the replicated store.
const lastClusterFile = "last-cluster-size"

// lastClusterSize reads the size of the last cluster; 0 when there was none.
func (d *dataDir) lastClusterSize() (uint32, error) {
	data, err := os.ReadFile(d.file(lastClusterFile))
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	size, err := strconv.ParseUint(strings.TrimSpace(string(data)), 10, 16) // up-numbers, and so clusters, stop at 65,535
	if err != nil {
		return 0, fmt.Errorf("%s is corrupt (%q): remove it to start as a new member (or set cluster.forget-last-cluster=on)", d.file(lastClusterFile), data)
	}
	return uint32(size), nil
}

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
			err := writeFileAtomic(n.dir.file(lastClusterFile), []byte(strconv.FormatUint(uint64(size), 10)+"\n"))
			if err == nil {
				written, failing = size, false
			} else {
				if !failing {
					n.log.Warn("cannot keep the size of the cluster; a restart of the whole cluster may read a stale coordinator state; retrying every second", "file", n.dir.file(lastClusterFile), "err", err)
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

// RestartWait says what a restarted cluster waits for, and what to do about it; "" when
// need is 0 or met.
func RestartWait(need, joined int) string {
	if joined >= need {
		return ""
	}
	return fmt.Sprintf("a restarted cluster moves no member Up before %d members of its last cluster have joined (a majority), so that its coordinator reads what that cluster stored (joined so far: %d). Start the others, or, if they are gone for good, restart the members with --set cluster.forget-last-cluster=on", need, joined)
}

// warnRestartQuorum logs RestartWait once the wait has lasted 5 s, and every 10 s while it
// lasts (a restart of a whole cluster waits a moment for its members as they start, which is
// no news); called by publishView on the loop.
func (n *Node) warnRestartQuorum(v *View) {
	why := RestartWait(v.RestartNeed, v.RestartJoined)
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

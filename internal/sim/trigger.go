package sim

import (
	"fmt"

	"github.com/shardmesh/shardmesh/membership"
)

// LeaderAction is a membership change only the leader makes, at convergence.
type LeaderAction uint8

// Leader actions a partition can be timed to.
const (
	ActionUp      LeaderAction = iota + 1 // Joining (or WeaklyUp) → Up
	ActionExiting                         // Leaving → Exiting
	ActionRemoved                         // Exiting or Down → Removed
)

var actionNames = [...]string{ActionUp: "up", ActionExiting: "exiting", ActionRemoved: "removed"}

func (a LeaderAction) String() string {
	if int(a) < len(actionNames) && actionNames[a] != "" {
		return actionNames[a]
	}
	return fmt.Sprintf("LeaderAction(%d)", uint8(a))
}

// ParseLeaderAction is the inverse of LeaderAction.String.
func ParseLeaderAction(s string) (LeaderAction, error) {
	for i, n := range actionNames {
		if n != "" && n == s {
			return LeaderAction(i), nil
		}
	}
	return 0, fmt.Errorf("unknown leader action %q (up, exiting or removed)", s)
}

// trigger is a partition armed to fall at the instant a leader takes an action: the leader
// has changed its own view, and its gossip of the change has not left yet.
type trigger struct {
	action LeaderAction
	node   membership.NodeID // the member the action is about; "": any
	groups [][]int
	fired  bool
}

// PartitionAtLeaderAction arms a partition into groups (as Network.Partition) that falls the
// first time a leader takes action about node (0: any member). Fired reports when it has.
func (s *Sim) PartitionAtLeaderAction(action LeaderAction, node int, groups ...[]int) {
	t := &trigger{action: action, groups: groups}
	if node > 0 {
		t.node = s.nodes[node].ID
	}
	s.trigger = t
}

// Fired reports whether the partition armed by PartitionAtLeaderAction has fallen.
func (s *Sim) Fired() bool { return s.trigger != nil && s.trigger.fired }

// fire partitions the network if e, observed by n, is the armed leader action. The leader
// is the first to observe its own action, before it sends anything about it.
func (s *Sim) fire(n *Node, e membership.MemberChanged) {
	t := s.trigger
	if t == nil || t.fired || e.New || n.M.Leader() != n.ID || (t.node != "" && e.Member.Node != t.node) {
		return
	}
	var a LeaderAction
	switch {
	case (e.Previous == membership.Joining || e.Previous == membership.WeaklyUp) && e.Member.Status == membership.Up:
		a = ActionUp
	case e.Previous == membership.Leaving && e.Member.Status == membership.Exiting:
		a = ActionExiting
	case e.Member.Status == membership.Removed && (e.Previous == membership.Exiting || e.Previous == membership.Down):
		a = ActionRemoved
	}
	if a != t.action {
		return
	}
	t.fired = true
	s.logf("partition %v as %s moves %s %s", t.groups, n.ID, e.Member.Node, e.Member.Status)
	s.Net.Partition(t.groups...)
}

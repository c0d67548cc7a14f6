package membership

import (
	"fmt"
	"slices"
	"strings"
)

// NodeID identifies a member: its libp2p peer id in text form. It is stable across restarts
// of the same data directory; Incarnation tells the processes apart.
type NodeID string

// Short returns the last 6 characters of the id, enough to tell members apart in logs and tables.
func (id NodeID) Short() string {
	if len(id) <= 6 {
		return string(id)
	}
	return string(id[len(id)-6:])
}

// Status is a member's lifecycle status.
type Status uint8

// Member statuses, in merge precedence order: when two records of the same incarnation
// disagree, the later status in this list wins.
const (
	Joining Status = iota // asked to join; not yet moved to Up by the leader
	// WeaklyUp: moved on from Joining by a leader that could not reach convergence for
	// allow-weakly-up-members (a member unreachable, say): a member of the cluster that hosts
	// nothing yet, counted as Joining is. The leader moves it Up at convergence.
	WeaklyUp
	Up      // full member: may host shards and singletons
	Leaving // leaving gracefully; still serving until Exiting
	Exiting // done; will be removed once every member has seen it
	Down    // declared dead (failure or split-brain decision); removed once its majority lease has run out
	Removed // tombstone: no longer a member
)

var statusNames = [...]string{"Joining", "WeaklyUp", "Up", "Leaving", "Exiting", "Down", "Removed"}

func (s Status) String() string {
	if int(s) < len(statusNames) {
		return statusNames[s]
	}
	return fmt.Sprintf("Status(%d)", uint8(s))
}

// ParseStatus is the inverse of Status.String (case-insensitive).
func ParseStatus(s string) (Status, error) {
	for i, n := range statusNames {
		if strings.EqualFold(n, s) {
			return Status(i), nil
		}
	}
	return 0, fmt.Errorf("unknown member status %q (one of %s)", s, strings.Join(statusNames[:], ", "))
}

// Member is one member as the cluster knows it. All fields but Status and UpNumber are set by
// the member itself when it joins and never change within an incarnation.
type Member struct {
	Node        NodeID
	Incarnation uint64   // increases with every process start of the same node
	Addrs       []string // dialable multiaddrs, each ending in /p2p/<Node>
	Roles       []string // sorted
	AppVersion  Version
	Status      Status
	UpNumber    uint64 // age: assigned by the leader when it moves the member Up; lower is older; 0 until Up
	// Voter marks one of the members whose majority decides: they grant the serving lease,
	// and keep-majority keeps the side that holds most of them (voters.go). The leader sets
	// it, at convergence, on the oldest Up members, up to cluster.voters; it stays until the
	// member is Removed.
	Voter bool
	// LastClusterSize is how many members (not Down or Removed) the cluster had when this
	// member's data directory was last Up in one, 0 for a new member. A cluster forming
	// after a restart moves no member Up before a majority of the largest of these has joined
	// (Node.RestartQuorum).
	LastClusterSize uint32
}

// HasRole reports whether m has role r; the empty role matches every member.
func (m *Member) HasRole(r string) bool {
	if r == "" {
		return true
	}
	_, ok := slices.BinarySearch(m.Roles, r)
	return ok
}

// OlderThan reports whether m is older than o: a lower up-number, ties by node id. Members
// that are not yet Up (up-number 0) are younger than every Up member.
func (m *Member) OlderThan(o *Member) bool {
	a, b := m.UpNumber, o.UpNumber
	if a == 0 {
		a = ^uint64(0)
	}
	if b == 0 {
		b = ^uint64(0)
	}
	if a != b {
		return a < b
	}
	return m.Node < o.Node
}

func (m *Member) clone() *Member {
	c := *m
	c.Addrs = slices.Clone(m.Addrs)
	c.Roles = slices.Clone(m.Roles)
	return &c
}

// supersedes reports whether record m should replace record o of the same node in a merge:
// a newer incarnation, or the same incarnation with a later status or a higher up-number
// (view.merge then keeps Voter if either had it).
// Records that agree on all three differ only if the member introduced itself twice with
// different details in one incarnation (it never does); the content then breaks the tie so
// the merge stays commutative.
func (m *Member) supersedes(o *Member) bool {
	if m.Incarnation != o.Incarnation {
		return m.Incarnation > o.Incarnation
	}
	if m.Status != o.Status {
		return m.Status > o.Status
	}
	if m.UpNumber != o.UpNumber {
		return m.UpNumber > o.UpNumber
	}
	if m.Voter != o.Voter {
		return m.Voter
	}
	if c := strings.Compare(string(m.AppVersion), string(o.AppVersion)); c != 0 {
		return c > 0
	}
	if c := slices.Compare(m.Roles, o.Roles); c != 0 {
		return c > 0
	}
	return slices.Compare(m.Addrs, o.Addrs) > 0
}

// counted reports whether m counts in majorities (split-brain decisions, the majority lease,
// confirmations after a pause): Up or Leaving, as Akka's split-brain resolver counts.
func (m *Member) counted() bool { return m.Status == Up || m.Status == Leaving }

// joining reports whether m is Joining or WeaklyUp: a member that a leader may move Up, which
// one side of a partition may see Up and the other not.
func (m *Member) joining() bool { return m.Status == Joining || m.Status == WeaklyUp }

// countsAsMember reports whether m takes part in the cluster: not Down, not Removed.
func (m *Member) countsAsMember() bool { return m.Status < Down }

package membership

import "fmt"

// Event is something the machine observed, for the sharding layer, logs and operators. The
// set is sealed.
type Event interface{ isEvent() }

// MemberChanged reports a member's new status. Previous is the status before; New is true
// when the member (or this incarnation of it) was not known before. A member whose
// incarnation was replaced by a newer one is first reported Removed.
type MemberChanged struct {
	Member   Member
	Previous Status
	New      bool
}

// ReachabilityChanged reports that a member became unreachable (by some observer) or
// reachable again (by all).
type ReachabilityChanged struct {
	Node      NodeID
	Reachable bool
}

// LeaderChanged reports a new leader as this member sees it ("" when none).
type LeaderChanged struct{ Leader NodeID }

// Downed reports a split-brain resolver decision taken by this member.
type Downed struct {
	Nodes       []NodeID // members marked Down
	Decision    Decision
	Side        []NodeID // the counted members of the deciding side (reachable from here)
	Others      []NodeID // the counted members of the other side (unreachable, or Down)
	Indirect    []NodeID // the indirectly connected members, if any
	Unreachable []NodeID // every member some member could not reach
	Strategy    Strategy
	// Lease: the decision was taken holding the resolver's lease (lease-majority).
	Lease  bool
	Reason string
}

// Stopped reports that this member must stop all its work: it was downed, removed, refused
// at join, or has left. The machine ignores everything after it.
type Stopped struct {
	Reason StopReason
	Detail string
}

// StopReason says why a member stopped.
type StopReason uint8

// Reasons for Stopped.
const (
	StopLeft        StopReason = iota // left gracefully: Leaving → Exiting → Removed
	StopDowned                        // marked Down by the split-brain resolver or an operator
	StopRemoved                       // removed by the cluster without having left
	StopJoinRefused                   // the cluster refused the join
	StopSuperseded                    // a newer incarnation of this node has joined
)

func (r StopReason) String() string {
	switch r {
	case StopLeft:
		return "left"
	case StopDowned:
		return "downed"
	case StopRemoved:
		return "removed"
	case StopJoinRefused:
		return "join-refused"
	case StopSuperseded:
		return "superseded"
	}
	return fmt.Sprintf("StopReason(%d)", uint8(r))
}

// Suspended reports that this member was paused (no tick for longer than the acceptable
// heartbeat pause) and serves nothing until a majority confirms it is still a member.
type Suspended struct{}

// Formed reports that this member formed a new cluster by itself: every seed it was given
// is in no cluster, and it is the one to form it (bootstrap.go).
type Formed struct{ Why string }

// Resumed reports that a majority confirmed this member after a pause.
type Resumed struct{}

func (Suspended) isEvent() {}
func (Resumed) isEvent()   {}
func (Formed) isEvent()    {}

func (MemberChanged) isEvent()       {}
func (ReachabilityChanged) isEvent() {}
func (LeaderChanged) isEvent()       {}
func (Downed) isEvent()              {}
func (Stopped) isEvent()             {}

// Ready is what the machine wants done since the last call to Ready: messages to send,
// events to report, in order, and operations on the resolver's lease (lease-majority; see
// LeaseOp), an acquisition to be answered with Node.LeaseResult.
type Ready struct {
	Messages []Envelope
	Events   []Event
	Lease    []LeaseOp
}

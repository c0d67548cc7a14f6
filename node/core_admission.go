package node

import (
	"errors"
	"time"

	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/shardmesh/shardmesh/membership"
)

// Only admitted members speak the member protocols (docs/security.md). The core takes what
// another member sends — membership and coordination messages, messages forwarded to its
// entities, replies to its asks, sharding events — only from the admitted members of its own
// membership: Joining, WeaklyUp, Up, Leaving or Exiting. The check is made here, where what
// was sent would take effect, against the membership machine itself, so the simulation runs
// it as the daemon does; the replica protocol is checked by the store's machine
// (remember.MachineConfig.Gated). What is refused goes to Env.Refused, to be counted and
// logged.
//
// A member admitted a moment ago sends before the news of it reaches every member: its
// coordination messages and forwarded messages wait (trust.Waiting, up to
// trust.AdmitGrace) for the membership that admits it, and are refused only then. Membership
// messages follow their own rules (memberMessage); sharding events are hints and are dropped
// at once.

// ErrNotAdmitted is a frame from a peer that is not an admitted member of this member's
// membership.
var ErrNotAdmitted = errors.New("not an admitted member")

// ShardingEvents names the sharding events (which come by gossip) in refusals.
const ShardingEvents protocol.ID = "sharding-events"

// waitingOverhead is what a waiting input counts for beside its payload, in bytes.
const waitingOverhead = 256

// admitNow reports whether what member from sent may be taken now: from is admitted, and
// nothing it sent before waits (what a member sends keeps its order).
func (c *Core) admitNow(from membership.NodeID) bool { return c.admits(from) && !c.waiting.Holds(from) }

// admits reports whether member from may speak the member protocols here: it is this member,
// or an admitted member of the membership.
func (c *Core) admits(from membership.NodeID) bool {
	if from == c.self.Node {
		return true
	}
	st, ok := c.eng.Membership().Status(from)
	return ok && st < membership.Down
}

// admission is what becomes of what a peer sent: taken, kept until the peer is admitted
// (for up to trust.AdmitGrace), or refused.
type admission uint8

const (
	admitTake admission = iota
	admitHold
	admitRefuse
)

// memberMessage returns what of membership message msg from member from may reach the
// machine, and whether it may now. Joins and their answers come from anyone (the machine
// checks their credentials, and takes answers only from the seeds it asked), and so do
// probes (a member that was paused, and removed meanwhile, learns so from the answer; a
// probe changes nothing). Heartbeats, probe answers and gossip status come from any member
// the membership knows, Down and Removed ones too: a member that is out, yet still
// heartbeats, is told so. Gossip, which the machine merges, is merged only from admitted
// members; a former member's is answered but not merged (stripped of its records: the
// answer tells a member that just left that it was removed). Gossip from a peer the
// membership does not know waits for it to be admitted: a member admitted a moment ago
// gossips before the news of it reaches every member.
func (c *Core) memberMessage(from membership.NodeID, msg membership.Message) (membership.Message, admission) {
	st, known := c.eng.Membership().Status(from)
	switch m := msg.(type) {
	case membership.JoinRequest, membership.JoinReply, membership.NotMember, membership.Probe:
		return msg, admitTake
	case membership.Heartbeat, membership.ProbeAck, membership.GossipStatus:
		if known || from == c.self.Node {
			return msg, admitTake
		}
		// The machine has nothing to do with these from a member it does not know; held and
		// taken later, a heartbeat would bias the failure detector.
		return nil, admitRefuse
	case membership.Gossip:
		switch {
		case c.admitNow(from):
			return msg, admitTake
		case known && st < membership.Down:
			return nil, admitHold // behind what it sent before
		case known && m.Reply:
			m.State = membership.State{}
			return m, admitTake
		}
	default:
		if c.admits(from) {
			return msg, admitTake
		}
	}
	if known {
		return nil, admitRefuse
	}
	return nil, admitHold
}

// wait keeps input in from a peer that is not admitted (yet) until it is, or behind what it
// sent before; it refuses it when too much waits already, or when the peer is a former
// member (Down, Removed: that incarnation is not admitted again).
func (c *Core) wait(now time.Time, from membership.NodeID, in Input) {
	if st, known := c.eng.Membership().Status(from); known && st >= membership.Down {
		c.refuse(from, in)
		return
	}
	size := waitingOverhead
	if d, ok := in.(Deliver); ok {
		size += len(d.Envelope.Payload.(*Message).encoded)
	}
	if !c.waiting.Hold(now, from, in, size) {
		c.refuse(from, in)
	}
}

// refuse drops input in from a peer that is not an admitted member. A forwarded message's
// sender is not answered (it is no member), and the message leaves the member's pipeline.
func (c *Core) refuse(from membership.NodeID, in Input) {
	proto := protocol.ID(MemberProtocol)
	switch in := in.(type) {
	case Deliver:
		proto = RegionProtocol
		in.Envelope.Payload.(*Message).credits.release()
	case CoordMessage:
		proto = CoordProtocol
	case ShardingEventIn:
		proto = ShardingEvents
	}
	c.env.Refused(from, proto, in)
}

// releaseWaiting takes what waited for the members the membership admits now, in the
// order it came.
func (c *Core) releaseWaiting(now time.Time) {
	if c.waiting.Len() == 0 {
		return
	}
	for _, h := range c.waiting.Release(c.admits) {
		c.Step(now, h.Item)
	}
}

// expireWaiting refuses what has waited trust.AdmitGrace for its sender to be admitted.
func (c *Core) expireWaiting(now time.Time) {
	for _, h := range c.waiting.Expire(now) {
		c.refuse(h.From, h.Item)
	}
}

// Waiting returns the inputs waiting for their senders to be admitted, in arrival order
// (inspection: the simulation accounts for the messages among them).
func (c *Core) Waiting() []Input {
	held := c.waiting.Held()
	out := make([]Input, len(held))
	for i, h := range held {
		out[i] = h.Item
	}
	return out
}

// RejectForwarded rejects a message another member forwarded here, before it is stepped
// (its type is not registered here, or out of service): the asker is told why — unless the
// sender is not an admitted member as of the latest view, which is told nothing (it chose
// where the answer would go): then it reports true, and the driver tells Env.Refused. Safe
// from any goroutine.
func (c *Core) RejectForwarded(in *Deliver, err error) (refused bool) {
	m := in.Envelope.Payload.(*Message)
	if !c.view.Load().Admits(in.From) {
		m.credits.release()
		return true
	}
	c.Reject(in.Type, m, err)
	return false
}

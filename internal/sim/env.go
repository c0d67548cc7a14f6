package sim

import (
	"bytes"
	"encoding/binary"
	"time"

	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/shardmesh/shardmesh/engine"
	"github.com/shardmesh/shardmesh/membership"
	"github.com/shardmesh/shardmesh/node"
	"github.com/shardmesh/shardmesh/remember"
	"github.com/shardmesh/shardmesh/wire"
)

// simEnv is a simulated member process as its core's Env: frames go over the simulated
// network, store requests to the member's store (store.go), entities to the simulation's
// entity runtime (entities.go), leases to the shared lease table (lease.go). Nothing here
// calls back into the core while it flushes: what comes back is scheduled (or, for frames,
// sent once the flush is over, so that a partition timed to an event of the flush falls
// before them, as the leader's gossip of its own action leaves after the action).
type simEnv struct {
	s   *Sim
	n   *Node
	inc uint64 // the process this env belongs to

	outbox []outFrame // frames of the flush in progress
}

type outFrame struct {
	to     membership.NodeID
	proto  protocol.ID
	frame  []byte
	done   func(error)
	gossip bool
}

func (e *simEnv) Send(to membership.NodeID, proto protocol.ID, frame []byte, done func(error)) {
	e.outbox = append(e.outbox, outFrame{to: to, proto: proto, frame: frame, done: done})
}

// SendFrames sends each of the frames on its own, as the simulated network carries frames;
// done hears once, after the last, with the first error.
func (e *simEnv) SendFrames(to membership.NodeID, proto protocol.ID, framed []byte, n int, done func(error)) {
	var each func(error)
	if done != nil {
		left, first := n, error(nil)
		each = func(err error) {
			if first == nil {
				first = err
			}
			if left--; left == 0 {
				done(first)
			}
		}
	}
	for rest := bytes.Clone(framed); len(rest) > 0; {
		size, m := binary.Uvarint(rest)
		if m <= 0 || size > uint64(len(rest)-m) {
			e.s.fail("%s: a batch of %d frames for %s is cut short", e.n.ID, n, to)
			return
		}
		e.outbox = append(e.outbox, outFrame{to: to, proto: proto, frame: rest[m : m+int(size)], done: each})
		rest = rest[m+int(size):]
	}
}

func (e *simEnv) Gossip(frame []byte) {
	e.outbox = append(e.outbox, outFrame{frame: frame, gossip: true})
}

// dispatch sends the frames of the last flush, in order.
func (e *simEnv) dispatch() {
	out := e.outbox
	e.outbox = nil
	for _, f := range out {
		if f.gossip {
			e.gossip(f.frame)
			continue
		}
		e.s.sendFrame(e.n, f.to, f.proto, f.frame, f.done)
	}
}

// gossip delivers a sharding event to every other running member it reaches (best effort,
// as gossipsub).
func (e *simEnv) gossip(frame []byte) {
	se, err := wire.DecodeEvent(frame)
	if err != nil {
		e.s.fail("%s gossiped a sharding event that does not decode: %v", e.n.ID, err)
		return
	}
	se.Origin = e.n.ID
	if e.s.meter != nil {
		e.s.meter.gossip(e.n, frame, len(e.s.nodes)-2)
	}
	for _, to := range e.s.nodes[1:] {
		if to == e.n || !to.Alive {
			continue
		}
		inc := to.Incarnation
		e.s.send(e.n, to, e.s.auxRng, func(to *Node) { e.s.input(to, inc, node.ShardingEventIn{Event: se}) }, nil)
	}
}

func (e *simEnv) Store(id uint64, req node.StoreRequest) { e.n.store.request(id, req) }

func (e *simEnv) Lease(op engine.LeaseOp) { e.s.leaseOp(e.n, op) }

func (e *simEnv) HostShard(u remember.Unit, epoch uint64, hosted bool) {
	e.n.store.host(u, epoch, hosted)
}

func (e *simEnv) CareFor(units []remember.Unit) { e.n.store.care(units) }

func (e *simEnv) ResolverLease(op membership.LeaseOp) { e.s.resolverLeaseOp(e.n, op) }

func (e *simEnv) StartEntity(t *node.EntityType, ctx node.EntityContext) node.Incarnation {
	return e.n.entities.start(t, ctx)
}

func (e *simEnv) Publish(ev node.Event) {
	switch ev := ev.(type) {
	case membership.Event:
		e.s.observe(e.n, ev)
	case engine.TypedEvent:
		e.s.observeSharding(e.n, ev)
	case node.RemindersClaimed, node.ReminderFired:
		e.s.observeReminder(e.n, ev)
	}
}

func (e *simEnv) Connect(membership.Member, bool) {}

func (e *simEnv) Serving(time.Time) {}

func (e *simEnv) KeepClusterSize(size uint32) { e.n.LastClusterSize = size }

func (e *simEnv) Stopped(st membership.Stopped) { e.n.Stopped = &st }

// Refused counts what the core refused from a peer that is not an admitted member; a
// message for an entity among it is lost with that cause.
func (e *simEnv) Refused(from membership.NodeID, proto protocol.ID, in node.Input) {
	e.s.refused(e.n, from, string(proto))
	if d, ok := in.(node.Deliver); ok {
		m := d.Envelope.Payload.(*node.Message)
		e.s.traffic.lost(idOf(m, specOf(e.n, d.Type)), "refused: "+string(from)+" is not an admitted member of "+string(e.n.ID))
	}
}

var _ node.Env = (*simEnv)(nil)

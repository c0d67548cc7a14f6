package sim

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/shardmesh/shardmesh/membership"
	"github.com/shardmesh/shardmesh/node"
	"github.com/shardmesh/shardmesh/region"
	"github.com/shardmesh/shardmesh/shard"
	"github.com/shardmesh/shardmesh/wire"
)

// msgID identifies one entity message of a simulation: it is the message's value (and, on
// the wire, its payload in the type's codec).
type msgID uint64

// fate is what became of a message.
type fate uint8

const (
	inFlight  fate = iota // sent; nothing final yet
	handled               // an entity handled it
	rejected              // the sender was told (buffer full, no such type, …)
	lostCause             // lost with a known cause: a dead or stopped member, the network
)

// traffic accounts for every entity message: invariant 3 of the design says each one is
// handled, rejected with an error, or lost with a cause (a crash, the network) — never
// silently lost while buffers have room. Every message is an ask, so the sender learns of
// a rejection (its asker, simAsk).
type traffic struct {
	next    msgID
	fates   map[msgID]fate
	causes  map[string]int
	causeOf map[msgID]string
	onWire  map[msgID]int    // forwards scheduled on the simulated network, not yet arrived or lost
	seen    map[msgID]string // where each message was last seen (for a report on the unaccounted)
	sent    int
}

func newTraffic() *traffic {
	return &traffic{fates: map[msgID]fate{}, causes: map[string]int{}, causeOf: map[msgID]string{}, onWire: map[msgID]int{}, seen: map[msgID]string{}}
}

func (t *traffic) newMessage() msgID {
	t.next++
	t.sent++
	t.fates[t.next] = inFlight
	return t.next
}

// idOf returns the message's id, decoding it when it came encoded.
func idOf(m *node.Message, t *node.EntityType) msgID {
	v, err := m.Value(t)
	if err != nil {
		panic(fmt.Sprintf("sim: a message does not decode: %v", err))
	}
	return v.(msgID)
}

func (t *traffic) handled(m *node.Message, typ *node.EntityType) { t.settle(idOf(m, typ), handled) }

func (t *traffic) rejected(m msgID, err error) {
	if m&remindBit != 0 {
		return // a reminder's: its firing is tried again
	}
	t.causes["rejected: "+err.Error()]++
	t.causeOf[m] = "rejected: " + err.Error()
	t.settle(m, rejected)
}

func (t *traffic) lost(m msgID, cause string) {
	if m&remindBit != 0 {
		return // a reminder's: the shard's next home fires it again
	}
	t.causes["lost: "+cause]++
	t.causeOf[m] = "lost: " + cause
	t.settle(m, lostCause)
}

func (t *traffic) settle(m msgID, f fate) {
	if m&remindBit != 0 {
		return
	}
	if t.fates[m] == inFlight {
		t.fates[m] = f
	}
}

// loseHeld marks lost everything a dying node holds: buffered in its regions, waiting in its
// shards for entities, queued in its entity mailboxes.
func (t *traffic) loseHeld(n *Node, cause string) {
	for _, m := range heldBy(n) {
		t.lost(m, cause+" ("+string(n.ID)+")")
	}
	n.entities.live = map[entityKey]*simEntity{}
}

// loseAsked marks lost the messages asked on a dying process that are still in flight:
// their asker dies with it, and no answer can reach it (what becomes of the message
// elsewhere, no one can tell any more).
func (s *Sim) loseAsked(n *Node, cause string) {
	ids := make([]uint64, 0)
	for id, a := range s.asks {
		if a.from == n.ID && a.inc == n.Incarnation && !a.answered {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	for _, id := range ids {
		a := s.asks[id]
		a.answered = true
		s.traffic.lost(a.msg, "asker "+cause+" ("+string(n.ID)+")")
	}
}

// heldBy lists the messages a node holds.
func heldBy(n *Node) []msgID {
	var out []msgID
	if n.E == nil {
		return nil
	}
	add := func(typ string, envs []region.Envelope) {
		spec := specOf(n, typ)
		for _, env := range envs {
			out = append(out, idOf(env.Payload.(*node.Message), spec))
		}
	}
	for _, typ := range n.E.Types() {
		add(typ, n.E.Region(typ).Held())
		for _, sh := range n.E.Shards(typ) {
			add(typ, sh.Waiting())
		}
	}
	for _, in := range n.Core.Waiting() { // forwarded by a member not admitted here yet
		if d, ok := in.(node.Deliver); ok {
			out = append(out, idOf(d.Envelope.Payload.(*node.Message), specOf(n, d.Type)))
		}
	}
	if n.entities != nil {
		for _, key := range sortedKeys(n.entities.live) {
			e := n.entities.live[key]
			for _, m := range e.queue {
				if !m.IsStop() && !m.IsStart() {
					out = append(out, idOf(m, e.t))
				}
			}
			if e.counter.current != nil {
				out = append(out, idOf(e.counter.current, e.t))
			}
		}
	}
	return out
}

// specOf returns node n's registration of type typ.
func specOf(n *Node, typ string) *node.EntityType { return n.Core.Registered(typ).Spec() }

// unaccounted returns the messages that are neither final nor held by a live node.
func (s *Sim) unaccounted() []msgID {
	held := map[msgID]bool{}
	for _, n := range s.nodes[1:] {
		if n.Alive {
			for _, m := range heldBy(n) {
				held[m] = true
			}
		}
	}
	var out []msgID
	for m, f := range s.traffic.fates {
		if f == inFlight && !held[m] && s.traffic.onWire[m] == 0 {
			out = append(out, m)
		}
	}
	slices.Sort(out)
	return out
}

// TrafficReport summarises what became of the entity messages.
func (s *Sim) TrafficReport() string {
	counts := map[fate]int{}
	for _, f := range s.traffic.fates {
		counts[f]++
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d sent: %d handled, %d rejected, %d lost with a cause, %d in flight\n",
		s.traffic.sent, counts[handled], counts[rejected], counts[lostCause], counts[inFlight])
	causes := make([]string, 0, len(s.traffic.causes))
	for c := range s.traffic.causes {
		causes = append(causes, c)
	}
	slices.Sort(causes)
	for _, c := range causes {
		fmt.Fprintf(&b, "  %s: %d\n", c, s.traffic.causes[c])
	}
	return b.String()
}

// simAsk is the asker of a message the simulation sends: it learns of a rejection, and of
// the reply (the counter's value, with Options.Durable).
type simAsk struct {
	s        *Sim
	id       uint64
	from     membership.NodeID // the member it was asked on
	inc      uint64            // its process
	msg      msgID
	key      entityKey
	answered bool
}

func (a *simAsk) ID() uint64 { return a.id }

func (a *simAsk) Resolve(r node.Reply) {
	if a.answered {
		return
	}
	a.answered = true
	if r.Err != nil {
		a.s.traffic.rejected(a.msg, r.Err)
	}
	a.s.durable.answered(a, r)
}

// Send sends a message to entity of type typ from node i, as a user's Ask would.
func (s *Sim) Send(i int, typ string, entity shard.EntityID) {
	n := s.nodes[i]
	m := s.traffic.newMessage()
	s.nextAsk++
	ask := &simAsk{s: s, id: s.nextAsk, from: n.ID, inc: n.Incarnation, msg: m, key: entityKey{typ, entity}}
	s.traffic.seen[m] = fmt.Sprintf("%s: sent on %s to %s", fmtElapsed(s.Elapsed()), n.ID, entity)
	s.asks[ask.id] = ask
	if !n.Alive || n.Paused {
		s.traffic.lost(m, "sender not running")
		ask.answered = true
		s.durable.answered(ask, node.Reply{Err: errors.New("sender not running")})
		return
	}
	t, err := n.Core.Sender(typ)
	if err == nil {
		var in node.Deliver
		if in, err = node.NewDeliver(t, string(entity), node.NewMessage(m, ask)); err == nil {
			s.input(n, n.Incarnation, in)
			return
		}
	}
	ask.Resolve(node.Reply{Err: err})
}

// sendFrame carries a frame of a member protocol from node from to member to: membership and
// coordination frames at the network's mercy; a forwarded message accounted for (the sender
// learns at once when it cannot be written — partitioned — and the simulation records a
// loss in flight with its cause); a replica frame to the member's store.
func (s *Sim) sendFrame(from *Node, toID membership.NodeID, proto protocol.ID, frame []byte, done func(error)) {
	to := s.byID[toID]
	if to == nil {
		if done != nil {
			done(fmt.Errorf("no member %s", toID))
		}
		return
	}
	if s.meter != nil {
		s.meter.frame(from, proto, frame)
	}
	deliver := func(to *Node) {
		if err := to.Core.Receive(s.now, from.ID, proto, frame); err != nil {
			s.fail("%s: a %s frame from %s does not decode: %v", to.ID, proto, from.ID, err)
		}
		s.flush(to)
	}
	if proto != node.RegionProtocol {
		s.send(from, to, s.rng, deliver, nil)
		return
	}
	var d wire.Deliver
	var r wire.Reply
	kind, err := wire.DecodeRegion(frame, &d, &r)
	if err != nil {
		s.fail("%s sent a region frame that does not decode: %v", from.ID, err)
		return
	}
	if kind == wire.KindReply {
		// A reply lost on its way leaves its asker in the dark: the message's fate, unless
		// already known, is that loss.
		a := s.asks[r.AskID]
		lost := func(cause string) {
			if a != nil && to.ID == a.from {
				s.traffic.lost(a.msg, "reply "+cause)
			}
		}
		if !s.Net.connected(from.Index, to.Index) {
			lost("partitioned")
		} else {
			s.send(from, to, s.rng, func(to *Node) {
				if a != nil && to.ID == a.from && to.Incarnation != a.inc {
					lost("to a restarted asker") // its asks died with its process
				}
				deliver(to)
			}, lost)
		}
		if done != nil {
			done(nil)
		}
		return
	}
	m := msgID(binary.BigEndian.Uint64(d.Payload))
	if !s.Net.connected(from.Index, to.Index) {
		if done != nil {
			done(errors.New("partitioned"))
		}
		return
	}
	if done != nil {
		done(nil) // written: from here on the network may lose it
	}
	s.traffic.onWire[m]++
	s.traffic.seen[m] = fmt.Sprintf("%s: forwarded from %s to %s", fmtElapsed(s.Elapsed()), from.ID, to.ID)
	s.send(from, to, s.rng, func(to *Node) {
		s.traffic.onWire[m]--
		s.traffic.seen[m] = fmt.Sprintf("%s: arrived at %s (incarnation %d)", fmtElapsed(s.Elapsed()), to.ID, to.Incarnation)
		deliver(to)
	}, func(cause string) {
		s.traffic.onWire[m]--
		s.traffic.lost(m, cause)
	})
}

package sim

import (
	"fmt"
	"slices"
	"strings"

	"github.com/shardmesh/shardmesh/region"
	"github.com/shardmesh/shardmesh/shard"
)

// msgID identifies one entity message of a simulation; it is the envelope's payload.
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
// silently lost while buffers have room.
type traffic struct {
	next    msgID
	fates   map[msgID]fate
	causes  map[string]int
	causeOf map[msgID]string
	onWire  map[msgID]int // forwards scheduled on the simulated network, not yet arrived or lost
	sent    int
}

func newTraffic() *traffic {
	return &traffic{fates: map[msgID]fate{}, causes: map[string]int{}, causeOf: map[msgID]string{}, onWire: map[msgID]int{}}
}

func (t *traffic) newMessage() msgID {
	t.next++
	t.sent++
	t.fates[t.next] = inFlight
	return t.next
}

func id(env region.Envelope) msgID { return env.Payload.(msgID) }

func (t *traffic) handled(env region.Envelope) { t.settle(id(env), handled) }

func (t *traffic) rejected(env region.Envelope, err error) {
	t.causes["rejected: "+err.Error()]++
	t.causeOf[id(env)] = "rejected: " + err.Error()
	t.settle(id(env), rejected)
}

func (t *traffic) lost(env region.Envelope, cause string) {
	t.causes["lost: "+cause]++
	t.causeOf[id(env)] = "lost: " + cause
	t.settle(id(env), lostCause)
}

func (t *traffic) settle(m msgID, f fate) {
	if t.fates[m] == inFlight {
		t.fates[m] = f
	}
}

// loseHeld marks lost everything a dying node holds: buffered in its regions, waiting in its
// shards for entities, queued in its entity mailboxes.
func (t *traffic) loseHeld(n *Node, cause string) {
	for _, env := range heldBy(n) {
		t.lost(env, cause+" ("+string(n.ID)+")")
	}
	n.entities.clear()
}

// heldBy lists the envelopes a node holds.
func heldBy(n *Node) []region.Envelope {
	var out []region.Envelope
	if n.E == nil {
		return nil
	}
	for _, typ := range n.E.Types() {
		out = append(out, n.E.Region(typ).Held()...)
		for _, sh := range n.E.Shards(typ) {
			out = append(out, sh.Waiting()...)
		}
	}
	if n.entities != nil {
		out = append(out, n.entities.queued()...)
	}
	return out
}

// unaccounted returns the messages that are neither final nor held by a live node.
func (s *Sim) unaccounted() []msgID {
	held := map[msgID]bool{}
	for _, n := range s.nodes[1:] {
		if n.Alive {
			for _, env := range heldBy(n) {
				held[id(env)] = true
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

// Send sends a message to entity of type typ from node i, as a user's Tell would.
func (s *Sim) Send(i int, typ string, entity shard.EntityID) {
	n := s.nodes[i]
	m := s.traffic.newMessage()
	env := region.Envelope{Shard: s.extract(entity), Entity: entity, Payload: m}
	if !n.Alive || n.Paused {
		s.traffic.lost(env, "sender not running")
		return
	}
	if err := n.E.Deliver(s.now, typ, env); err != nil {
		s.traffic.rejected(env, err)
	}
	s.process(n)
}

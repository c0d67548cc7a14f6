package sim

import (
	"encoding/binary"
	"slices"

	"github.com/libp2p/go-libp2p/core/protocol"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/shardmesh/shardmesh/node"
	"github.com/shardmesh/shardmesh/wire/pb"
)

// A meter counts what members send, by protocol and message kind, at the size of the frame
// the real transport writes for it: the message encoded by wire/ and p2p's uvarint length
// prefix. (The stream's own overhead — yamux, noise, TCP — comes on top, as on every link.)
//
// It counts at the sender, before the simulated network decides the message's fate: what a
// member pays. A sharding event published by gossip counts once per receiver.
type meter struct {
	membership Count
	sharding   Count
	store      Count
	kinds      map[string]*Count // by message kind: "membership heartbeat", "store read", …
	perNode    map[int]*Count    // membership, sharding and store together, by node index
}

// Count is messages and bytes.
type Count struct {
	Messages int64 `json:"messages"`
	Bytes    int64 `json:"bytes"`
}

func (c *Count) add(bytes int) {
	c.Messages++
	c.Bytes += int64(bytes)
}

// Sub returns c − o.
func (c Count) Sub(o Count) Count { return Count{c.Messages - o.Messages, c.Bytes - o.Bytes} }

func newMeter() *meter {
	return &meter{kinds: map[string]*Count{}, perNode: map[int]*Count{}}
}

// MeasureTraffic starts counting what members send (Metered reads it). It costs an encoding
// per message, so it is off unless asked for.
func (s *Sim) MeasureTraffic() {
	if s.meter == nil {
		s.meter = newMeter()
	}
}

// frameSize is the size of a frame p2p writes for a payload of n bytes.
func frameSize(n int) int {
	var b [binary.MaxVarintLen64]byte
	return binary.PutUvarint(b[:], uint64(n)) + n
}

// frame counts a frame of a member protocol that member n sends: membership, or sharding
// (coordination); entity messages (the region protocol) are the users' traffic, not counted.
func (m *meter) frame(n *Node, proto protocol.ID, frame []byte) {
	size := frameSize(len(frame))
	switch proto {
	case node.MemberProtocol:
		m.membership.add(size)
		m.kind("membership", kindOf(frame, memberEnvelope)).add(size)
	case node.CoordProtocol:
		m.sharding.add(size)
		m.kind("sharding", kindOf(frame, coordEnvelope)).add(size)
	default:
		return
	}
	m.node(n).add(size)
}

// gossip counts a sharding event member n publishes, once per receiver (gossipsub relays
// it to each).
func (m *meter) gossip(n *Node, frame []byte, receivers int) {
	size := frameSize(len(frame))
	for range receivers {
		m.sharding.add(size)
		m.kind("sharding", "event").add(size)
		m.node(n).add(size)
	}
}

// replica counts a frame of the replicated store's protocol that member n sends.
func (m *meter) replica(n *Node, frame []byte) {
	size := frameSize(len(frame))
	m.store.add(size)
	m.kind("store", kindOf(frame, replicaEnvelope)).add(size)
	m.node(n).add(size)
}

// The envelopes of the member protocols: a message kind is the name of the field of the
// envelope's oneof that a frame holds.
var (
	memberEnvelope  = (&pb.MemberEnvelope{}).ProtoReflect().Descriptor()
	coordEnvelope   = (&pb.CoordEnvelope{}).ProtoReflect().Descriptor()
	replicaEnvelope = (&pb.ReplicaEnvelope{}).ProtoReflect().Descriptor()
)

// kindOf returns the name of the field of envelope's oneof that frame holds ("heartbeat",
// "write_ack", …), reading the tags only; "?" for a frame it cannot read.
func kindOf(frame []byte, envelope protoreflect.MessageDescriptor) string {
	for len(frame) > 0 {
		num, typ, n := protowire.ConsumeTag(frame)
		if n < 0 {
			return "?"
		}
		if f := envelope.Fields().ByNumber(num); f != nil && f.ContainingOneof() != nil {
			return string(f.Name())
		}
		frame = frame[n:]
		if n = protowire.ConsumeFieldValue(num, typ, frame); n < 0 {
			return "?"
		}
		frame = frame[n:]
	}
	return "?"
}

func (m *meter) kind(protocol, kind string) *Count {
	k := protocol + " " + kind
	c := m.kinds[k]
	if c == nil {
		c = &Count{}
		m.kinds[k] = c
	}
	return c
}

func (m *meter) node(n *Node) *Count {
	c := m.perNode[n.Index]
	if c == nil {
		c = &Count{}
		m.perNode[n.Index] = c
	}
	return c
}

// Metered is what the meter has counted since MeasureTraffic: a snapshot, so two of them
// give the traffic of the time between (Sub).
type Metered struct {
	Membership Count
	Sharding   Count
	Store      Count
	Kinds      map[string]Count
	PerNode    map[int]Count
}

// Metered returns what the meter has counted so far (zero when not measuring).
func (s *Sim) Metered() Metered {
	out := Metered{Kinds: map[string]Count{}, PerNode: map[int]Count{}}
	if s.meter == nil {
		return out
	}
	out.Membership, out.Sharding, out.Store = s.meter.membership, s.meter.sharding, s.meter.store
	for k, c := range s.meter.kinds {
		out.Kinds[k] = *c
	}
	for i, c := range s.meter.perNode {
		out.PerNode[i] = *c
	}
	return out
}

// Sub returns what was counted between o and m.
func (m Metered) Sub(o Metered) Metered {
	out := Metered{Membership: m.Membership.Sub(o.Membership), Sharding: m.Sharding.Sub(o.Sharding), Store: m.Store.Sub(o.Store),
		Kinds: map[string]Count{}, PerNode: map[int]Count{}}
	for k, c := range m.Kinds {
		if d := c.Sub(o.Kinds[k]); d.Messages != 0 {
			out.Kinds[k] = d
		}
	}
	for i, c := range m.PerNode {
		if d := c.Sub(o.PerNode[i]); d.Messages != 0 {
			out.PerNode[i] = d
		}
	}
	return out
}

// Busiest returns the node index that sent the most bytes, and its count.
func (m Metered) Busiest() (int, Count) {
	ids := make([]int, 0, len(m.PerNode))
	for i := range m.PerNode {
		ids = append(ids, i)
	}
	slices.Sort(ids)
	best, bc := 0, Count{}
	for _, i := range ids {
		if c := m.PerNode[i]; c.Bytes > bc.Bytes {
			best, bc = i, c
		}
	}
	return best, bc
}

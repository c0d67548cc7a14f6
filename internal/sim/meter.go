package sim

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/shardmesh/shardmesh/engine"
	"github.com/shardmesh/shardmesh/membership"
	"github.com/shardmesh/shardmesh/wire"
)

// A meter counts what members send, by protocol and message kind, at the size of the frame
// the real transport writes for it: the message encoded by wire/ and p2p's uvarint length
// prefix. (The stream's own overhead — yamux, noise, TCP — comes on top, as on every link.)
//
// It counts at the sender, before the simulated network decides the message's fate: what a
// member pays. Broadcasts (membership.Envelope with no To) count once per receiver, as the
// sim delivers them.
type meter struct {
	buf        []byte
	membership Count
	sharding   Count
	kinds      map[string]*Count // by message kind, "membership heartbeat", "sharding HostShard", …
	perNode    map[int]*Count    // membership and sharding together, by node index
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

func (m *meter) membershipMsg(n *Node, env membership.Envelope, receivers int) {
	m.buf = wire.AppendMembership(m.buf[:0], env.Msg)
	size := frameSize(len(m.buf))
	for range receivers {
		m.membership.add(size)
		m.kind("membership", env.Msg).add(size)
		m.node(n).add(size)
	}
}

func (m *meter) coordination(n *Node, c engine.Coordination) {
	m.buf = wire.AppendCoord(m.buf[:0], c.Type, c.Msg)
	size := frameSize(len(m.buf))
	m.sharding.add(size)
	m.kind("sharding", c.Msg).add(size)
	m.node(n).add(size)
}

func (m *meter) kind(protocol string, msg any) *Count {
	k := fmt.Sprintf("%s %T", protocol, msg)
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
	Kinds      map[string]Count
	PerNode    map[int]Count
}

// Metered returns what the meter has counted so far (zero when not measuring).
func (s *Sim) Metered() Metered {
	out := Metered{Kinds: map[string]Count{}, PerNode: map[int]Count{}}
	if s.meter == nil {
		return out
	}
	out.Membership, out.Sharding = s.meter.membership, s.meter.sharding
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
	out := Metered{Membership: m.Membership.Sub(o.Membership), Sharding: m.Sharding.Sub(o.Sharding),
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

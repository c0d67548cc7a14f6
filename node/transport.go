package node

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/shardmesh/shardmesh/engine"
	"github.com/shardmesh/shardmesh/membership"
	"github.com/shardmesh/shardmesh/p2p"
	"github.com/shardmesh/shardmesh/region"
	"github.com/shardmesh/shardmesh/shard"
	"github.com/shardmesh/shardmesh/wire"
)

// handleMemberFrame decodes a membership frame from a direct stream. A frame that does not
// decode resets the stream (the p2p layer logs and counts it).
func (n *Node) handleMemberFrame(from peer.ID, frame []byte) error {
	msg, err := wire.DecodeMembership(frame)
	if err != nil {
		return err
	}
	n.enqueue(input{kind: inMember, from: membership.NodeID(from.String()), member: msg})
	return nil
}

// handleCoordFrame decodes a coordination frame.
func (n *Node) handleCoordFrame(from peer.ID, frame []byte) error {
	typ, msg, err := wire.DecodeCoord(frame)
	if err != nil {
		return err
	}
	n.enqueue(input{kind: inCoord, from: membership.NodeID(from.String()), typ: typ, coord: msg})
	return nil
}

// handleRegionFrame takes a message forwarded by another member's region, or a reply to one
// of this member's asks. The frame is reused after return: what is kept is copied.
func (n *Node) handleRegionFrame(_ peer.ID, frame []byte) error {
	var d wire.Deliver
	var r wire.Reply
	kind, err := wire.DecodeRegion(frame, &d, &r)
	if err != nil {
		return err
	}
	if kind == wire.KindReply {
		if p := n.asks.take(r.AskID); p != nil {
			if len(r.Err) > 0 {
				p.resolve(askResult{err: &RemoteError{Message: string(r.Err)}})
			} else {
				p.resolve(askResult{encoded: append([]byte(nil), r.Payload...)})
			}
		}
		return nil
	}
	typ := string(d.Type)
	m := &message{encoded: append([]byte(nil), d.Payload...), askID: d.AskID}
	if d.AskID != 0 {
		m.replyTo = membership.NodeID(d.ReplyTo)
	}
	env := region.Envelope{Shard: shard.ID(d.Shard), Entity: shard.EntityID(d.Entity), Payload: m, Hops: d.Hops}
	n.enqueue(input{kind: inDeliver, typ: typ, env: env})
	return nil
}

// enqueue hands an input from a network goroutine to the loop. Backpressure: a full inbox
// blocks the stream's reader, which slows its sender, rather than dropping.
func (n *Node) enqueue(in input) {
	select {
	case n.inbox <- in:
	case <-n.ctx.Done():
	}
}

// receiveGossip feeds the membership topic to the engine; the authenticated origin of each
// message is its sender.
func (n *Node) receiveGossip() {
	defer n.wg.Done()
	for {
		m, err := n.sub.Next(n.ctx)
		if err != nil {
			return
		}
		msg, err := wire.DecodeMembership(m.Data)
		if err != nil {
			n.log.Warn("dropped a malformed gossip message", "from", m.From, "err", err)
			continue
		}
		n.enqueue(input{kind: inMember, from: membership.NodeID(m.From.String()), member: msg})
	}
}

func (n *Node) stepCoord(now time.Time, in input) {
	n.eng.StepCoordination(now, in.from, in.typ, in.coord)
}

// sendMembership publishes a broadcast on the membership topic or queues a direct frame.
func (n *Node) sendMembership(env membership.Envelope) {
	frame := wire.AppendMembership(nil, env.Msg)
	if env.To == "" {
		go func() {
			ctx, cancel := context.WithTimeout(n.ctx, 5*time.Second)
			defer cancel()
			if err := n.gossip.Publish(ctx, frame); err != nil && n.ctx.Err() == nil {
				n.log.Debug("gossip publish failed", "err", err)
			}
		}()
		return
	}
	n.out.send(env.To, MemberProtocol, frame, nil)
}

func (n *Node) sendCoord(c engine.Coordination) {
	n.out.send(c.To, CoordProtocol, wire.AppendCoord(nil, c.Type, c.Msg), nil)
}

// forward sends a message to its shard's home on another member. Encoding happens on the
// outbox's goroutine, off the loop.
func (n *Node) forward(f engine.Forward) {
	m := f.Envelope.Payload.(*message)
	t := n.types[f.Type]
	env := f.Envelope
	n.out.send(f.To, RegionProtocol, nil, func() ([]byte, error) {
		if m.encoded == nil {
			b, err := t.spec.EncodeMessage(m.value)
			if err != nil {
				n.reject(f.Type, m, err)
				return nil, err
			}
			m.encoded = b
		}
		d := wire.Deliver{Type: []byte(f.Type), Shard: []byte(env.Shard), Entity: []byte(env.Entity), Payload: m.encoded, Hops: env.Hops}
		if m.ask != nil {
			n.asks.track(m.ask)
			d.AskID, d.ReplyTo = m.ask.id, []byte(n.self.Node)
		} else if m.askID != 0 {
			d.AskID, d.ReplyTo = m.askID, []byte(m.replyTo)
		}
		return wire.AppendDeliver(nil, &d), nil
	}, func(err error) { n.reject(f.Type, m, err) })
}

// sendReply answers an ask from another member.
func (n *Node) sendReply(to membership.NodeID, askID uint64, payload []byte, err error) {
	r := wire.Reply{AskID: askID, Payload: payload}
	if err != nil {
		r.Err = []byte(err.Error())
	}
	n.out.send(to, RegionProtocol, wire.AppendReply(nil, &r), nil)
}

// outboxes holds one sending goroutine per peer, so a slow dial to one peer never delays the
// loop or another peer, and frames to one peer keep their order across protocols.
type outboxes struct {
	ctx  context.Context
	host *p2p.Host
	log  *slog.Logger
	mu   sync.Mutex
	by   map[membership.NodeID]chan outgoing
}

// outgoing is a frame to send, or a function that encodes one on the outbox's goroutine
// (and fail, called with the error if it cannot be sent).
type outgoing struct {
	proto  protocol.ID
	frame  []byte
	encode func() ([]byte, error)
	fail   func(error)
}

func newOutboxes(ctx context.Context, host *p2p.Host, log *slog.Logger) *outboxes {
	return &outboxes{ctx: ctx, host: host, log: log, by: map[membership.NodeID]chan outgoing{}}
}

// errOutboxFull: more frames wait for a peer than the outbox holds.
var errOutboxFull = errors.New("too many messages waiting for that member")

func (o *outboxes) send(to membership.NodeID, proto protocol.ID, frame []byte, encode func() ([]byte, error), fail ...func(error)) {
	o.mu.Lock()
	ch := o.by[to]
	if ch == nil {
		id, err := peer.Decode(string(to))
		if err != nil {
			o.mu.Unlock()
			o.log.Warn("message to an invalid peer id dropped", "to", to)
			return
		}
		ch = make(chan outgoing, 65536)
		o.by[to] = ch
		go o.run(id, ch)
	}
	o.mu.Unlock()
	out := outgoing{proto: proto, frame: frame, encode: encode}
	if len(fail) > 0 {
		out.fail = fail[0]
	}
	select {
	case ch <- out:
	default:
		if out.fail != nil {
			out.fail(errOutboxFull)
		}
		o.log.Debug("outbox full: dropped a message", "to", to, "protocol", proto)
	}
}

// connect dials a new member in the background so gossip reaches it.
func (o *outboxes) connect(id peer.ID) {
	go func() {
		ctx, cancel := context.WithTimeout(o.ctx, 5*time.Second)
		defer cancel()
		if err := o.host.LibP2P().Connect(ctx, peer.AddrInfo{ID: id}); err != nil && o.ctx.Err() == nil {
			o.log.Debug("cannot connect to a member yet", "member", id, "err", err)
		}
	}()
}

func (o *outboxes) run(id peer.ID, ch chan outgoing) {
	for {
		select {
		case <-o.ctx.Done():
			return
		case out := <-ch:
			frame := out.frame
			if out.encode != nil {
				var err error
				if frame, err = out.encode(); err != nil {
					continue // encode reported it
				}
			}
			ctx, cancel := context.WithTimeout(o.ctx, 5*time.Second)
			err := o.host.Send(ctx, id, out.proto, frame)
			cancel()
			if err != nil && o.ctx.Err() == nil {
				if out.fail != nil {
					out.fail(err)
				}
				o.log.Debug("message not sent", "to", id, "protocol", out.proto, "err", err)
			}
		}
	}
}

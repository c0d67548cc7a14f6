package node

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/shardmesh/shardmesh/membership"
	"github.com/shardmesh/shardmesh/p2p"
	"github.com/shardmesh/shardmesh/wire"
)

// handleMemberFrame decodes a membership frame from a direct stream. A frame that does not
// decode resets the stream (the p2p layer logs and counts it).
func (n *Node) handleMemberFrame(from peer.ID, frame []byte) error {
	msg, err := wire.DecodeMembership(frame)
	if err != nil {
		return err
	}
	n.deliver(membership.NodeID(from.String()), msg)
	return nil
}

// receiveGossip feeds the membership topic to the machine; the authenticated origin of each
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
		n.deliver(membership.NodeID(m.From.String()), msg)
	}
}

func (n *Node) deliver(from membership.NodeID, msg membership.Message) {
	select {
	case n.inbox <- inbound{from: from, msg: msg}:
	case <-n.ctx.Done():
	default:
		// The loop is far behind; membership messages are repeated (heartbeats, gossip), so
		// dropping one costs only time.
		n.log.Warn("membership inbox full: dropped a message", "from", from)
	}
}

// send publishes a broadcast on the membership topic or queues a direct frame.
func (n *Node) send(env membership.Envelope) {
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
	id, err := peer.Decode(string(env.To))
	if err != nil {
		n.log.Warn("message to an invalid peer id dropped", "to", env.To)
		return
	}
	n.out.send(id, frame)
}

// outboxes holds one sending goroutine per peer, so a slow dial to one peer never delays the
// loop or another peer.
type outboxes struct {
	ctx  context.Context
	host *p2p.Host
	log  *slog.Logger
	mu   sync.Mutex
	by   map[peer.ID]chan []byte
}

func newOutboxes(ctx context.Context, host *p2p.Host, log *slog.Logger) *outboxes {
	return &outboxes{ctx: ctx, host: host, log: log, by: map[peer.ID]chan []byte{}}
}

func (o *outboxes) box(id peer.ID) chan []byte {
	o.mu.Lock()
	defer o.mu.Unlock()
	ch := o.by[id]
	if ch == nil {
		ch = make(chan []byte, 1024)
		o.by[id] = ch
		go o.run(id, ch)
	}
	return ch
}

func (o *outboxes) send(id peer.ID, frame []byte) {
	select {
	case o.box(id) <- frame:
	default:
		o.log.Debug("outbox full: dropped a membership message", "to", id)
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

func (o *outboxes) run(id peer.ID, ch chan []byte) {
	for {
		select {
		case <-o.ctx.Done():
			return
		case frame := <-ch:
			ctx, cancel := context.WithTimeout(o.ctx, 5*time.Second)
			err := o.host.Send(ctx, id, MemberProtocol, frame)
			cancel()
			if err != nil && o.ctx.Err() == nil {
				o.log.Debug("membership message not sent", "to", id, "err", fmt.Sprint(err))
			}
		}
	}
}

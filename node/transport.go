package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
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
	if !n.admitsMemberMessage(from, msg) {
		return nil
	}
	n.enqueue(input{ctl: &control{kind: inMember, from: membership.NodeID(from.String()), member: msg}})
	return nil
}

// handleCoordFrame decodes a coordination frame.
func (n *Node) handleCoordFrame(from peer.ID, frame []byte) error {
	typ, msg, err := wire.DecodeCoord(frame)
	if err != nil {
		return err
	}
	n.enqueue(input{typ: typ, ctl: &control{kind: inCoord, from: membership.NodeID(from.String()), coord: msg}})
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
				p.resolve(askResult{encoded: append(make([]byte, 0, len(r.Payload)), r.Payload...)}) // never nil: see nonNil
			}
		}
		return nil
	}
	typ := string(d.Type)
	m := &message{askID: d.AskID}
	if d.AskID != 0 {
		m.replyTo = membership.NodeID(d.ReplyTo)
	}
	t, err := n.sender(typ)
	if err != nil {
		n.reject(typ, m, err)
		return nil
	}
	// A credit first: when this type is saturated here, this stream's reader waits, and TCP
	// slows the sender down.
	if err := t.credits.acquire(n.ctx, n.done); err != nil {
		return nil
	}
	m.credits = t.credits
	// Never nil, even for a value that encodes to nothing: nil would mean "not encoded".
	m.encoded = append(make([]byte, 0, len(d.Payload)), d.Payload...)
	env := region.Envelope{Shard: shard.ID(d.Shard), Entity: shard.EntityID(d.Entity), Payload: m, Hops: d.Hops}
	n.enqueue(input{typ: typ, env: env})
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
			n.log.Warn("dropped a malformed gossip message", "peer", m.From, "err", err)
			continue
		}
		n.enqueue(input{ctl: &control{kind: inMember, from: membership.NodeID(m.From.String()), member: msg}})
	}
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
	n.out.send(env.To, MemberProtocol, frame, nil, nil)
}

func (n *Node) sendCoord(c engine.Coordination) {
	n.out.send(c.To, CoordProtocol, wire.AppendCoord(nil, c.Type, c.Msg), nil, nil)
}

// forward sends a message to its shard's home on another member. The message keeps its
// credit until it is written (or has failed and its sender was told).
func (n *Node) forward(f engine.Forward) {
	m := f.Envelope.Payload.(*message)
	t := n.types[f.Type]
	env := f.Envelope
	encode := func() ([]byte, error) {
		if m.encoded == nil {
			b, err := t.spec.EncodeMessage(m.value)
			if err != nil {
				return nil, fmt.Errorf("encode message for %s: %w", f.Type, err)
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
	}
	t.m.forwarded()
	n.out.send(f.To, RegionProtocol, nil, encode, func(err error) {
		m.credits.release()
		if err != nil {
			n.reject(f.Type, m, fmt.Errorf("%w: %w", errSendFailed, err))
		}
	})
}

// sendReply answers an ask from another member — or from this one, when the ask went to
// another member and was forwarded back here (a shard home that moved while the ask was on
// its way): libp2p does not dial itself, so that reply is resolved here, not sent (it was
// dropped, and the asker timed out: found by the chaos suite after a full restart).
func (n *Node) sendReply(to membership.NodeID, askID uint64, payload []byte, err error) {
	if to == n.self.Node {
		if p := n.asks.take(askID); p != nil {
			if err != nil {
				p.resolve(askResult{err: err})
			} else {
				p.resolve(askResult{encoded: nonNil(payload)})
			}
		}
		return
	}
	r := wire.Reply{AskID: askID, Payload: payload}
	if err != nil {
		r.Err = []byte(err.Error())
	}
	n.out.send(to, RegionProtocol, wire.AppendReply(nil, &r), nil, nil)
}

// outboxes holds one sending goroutine per peer, so a slow dial to one peer never delays the
// loop or another peer, and frames to one peer keep their order across protocols. The queues
// are unbounded: messages for entities hold credits (see maxInflight) until their outbox has
// written them, which bounds what can wait here; control frames are few.
type outboxes struct {
	ctx  context.Context
	host *p2p.Host
	log  *slog.Logger
	met  *metrics // nil without metrics
	mu   sync.Mutex
	by   map[membership.NodeID]*outbox
}

type outbox struct {
	mu      sync.Mutex
	queue   []outgoing
	pending atomic.Int64  // queued or being written
	wake    chan struct{} // buffered 1: something was queued
	peer    peer.ID
	parent  *outboxes
}

// outgoing is a frame to send, or a function that encodes one; done (if set) is called once,
// with nil when the frame was written and the error otherwise.
type outgoing struct {
	proto  protocol.ID
	frame  []byte
	encode func() ([]byte, error)
	done   func(error)
}

func newOutboxes(ctx context.Context, host *p2p.Host, log *slog.Logger, met *metrics) *outboxes {
	return &outboxes{ctx: ctx, host: host, log: log, met: met, by: map[membership.NodeID]*outbox{}}
}

// finish reports a frame's fate to its sender, counting the frames not written.
func (o *outboxes) finish(proto protocol.ID, done func(error), err error) {
	if err != nil && o.ctx.Err() == nil {
		o.met.frameUnsent(string(proto))
	}
	if done != nil {
		done(err)
	}
}

// send queues a frame (or its encoder) for member to. When nothing waits for that member and
// its stream is open with room, the frame is handed to the stream at once, on the caller's
// goroutine, saving a goroutine hop; otherwise the outbox's goroutine sends it, in order.
func (o *outboxes) send(to membership.NodeID, proto protocol.ID, frame []byte, encode func() ([]byte, error), done func(error)) {
	b, err := o.box(to)
	if err != nil {
		o.finish(proto, done, err)
		return
	}
	if b.pending.Load() == 0 {
		if frame == nil {
			if frame, err = safeEncode(encode); err != nil {
				o.finish(proto, done, err)
				return
			}
			encode = nil
		}
		err := o.host.TrySend(b.peer, proto, frame)
		if err == nil || !errors.Is(err, p2p.ErrWouldBlock) {
			o.finish(proto, done, err)
			return
		}
	}
	b.pending.Add(1)
	b.mu.Lock()
	b.queue = append(b.queue, outgoing{proto: proto, frame: frame, encode: encode, done: done})
	b.mu.Unlock()
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

func (o *outboxes) box(to membership.NodeID) (*outbox, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	b := o.by[to]
	if b == nil {
		id, err := peer.Decode(string(to))
		if err != nil {
			return nil, fmt.Errorf("member %q has an invalid peer id: %w", to, err)
		}
		b = &outbox{wake: make(chan struct{}, 1), peer: id, parent: o}
		o.by[to] = b
		go b.run()
	}
	return b, nil
}

// safeEncode runs an entity type's encoder, turning a panic into an error.
func safeEncode(encode func() ([]byte, error)) (frame []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("encoder panicked: %v", r)
		}
	}()
	return encode()
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

// sendTimeout bounds how long one frame waits for a connection or for room in the stream's
// queue before it is given up (and its sender told).
const sendTimeout = 30 * time.Second

func (b *outbox) run() {
	o := b.parent
	var batch []outgoing
	for {
		select {
		case <-o.ctx.Done():
			return
		case <-b.wake:
		}
		b.mu.Lock()
		batch, b.queue = b.queue, batch[:0]
		b.mu.Unlock()
		for i, out := range batch {
			frame, err := out.frame, error(nil)
			if frame == nil && out.encode != nil {
				frame, err = safeEncode(out.encode)
			}
			if err == nil {
				err = b.write(out.proto, frame)
			}
			if err != nil && o.ctx.Err() == nil {
				o.log.Debug("message not sent", "member", b.peer, "protocol", out.proto, "err", err)
			}
			o.finish(out.proto, out.done, err)
			b.pending.Add(-1)
			batch[i] = outgoing{}
		}
	}
}

// write sends one frame, waiting while the stream's queue is full (backpressure, not loss).
// The common case — the stream is open and its queue has room — takes the fast path, without
// the timeout context (and its timer) a wait needs: that was 13% of a remote Tell's CPU.
func (b *outbox) write(proto protocol.ID, frame []byte) error {
	o := b.parent
	if err := o.host.TrySend(b.peer, proto, frame); !errors.Is(err, p2p.ErrWouldBlock) {
		return err
	}
	ctx, cancel := context.WithTimeout(o.ctx, sendTimeout)
	defer cancel()
	wait := 50 * time.Microsecond
	for {
		err := o.host.Send(ctx, b.peer, proto, frame)
		if !errors.Is(err, p2p.ErrQueueFull) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
		wait = min(wait*2, 10*time.Millisecond)
	}
}

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
	n.enqueue(MemberMessage{From: membership.NodeID(from.String()), Msg: msg})
	return nil
}

// handleCoordFrame decodes a coordination frame.
func (n *Node) handleCoordFrame(from peer.ID, frame []byte) error {
	typ, msg, err := wire.DecodeCoord(frame)
	if err != nil {
		return err
	}
	n.enqueue(CoordMessage{From: membership.NodeID(from.String()), Type: typ, Msg: msg})
	return nil
}

// handleRegionFrame takes a message forwarded by another member's region, or a reply to one
// of this member's asks (resolved here, on the stream's goroutine). The frame is reused
// after return: what is kept is copied.
func (n *Node) handleRegionFrame(from peer.ID, frame []byte) error {
	in, err := n.core.DecodeRegionFrame(frame)
	if err != nil || in == nil {
		return err
	}
	m := in.Envelope.Payload.(*Message)
	m.fromP = from // a NodeID only if it must be refused (refuseNotHome)
	t, err := n.core.Sender(in.Type)
	if err != nil {
		n.core.Reject(in.Type, m, err)
		return nil
	}
	// A credit first: when this type is saturated here, this stream's reader waits, and TCP
	// slows the sender down.
	if err := t.credits.acquire(n.ctx, n.done); err != nil {
		return nil
	}
	m.credits = t.credits
	n.enqueue(*in)
	return nil
}

// enqueue hands an input from a network goroutine to the loop. Backpressure: a full inbox
// blocks the stream's reader, which slows its sender, rather than dropping.
func (n *Node) enqueue(in Input) {
	select {
	case n.inbox <- in:
	case <-n.ctx.Done():
	}
}

// receiveGossip feeds the membership topic to the loop; the authenticated origin of each
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
		n.enqueue(MemberMessage{From: membership.NodeID(m.From.String()), Msg: msg})
	}
}

// Send hands a frame to a member's outbox (Env).
func (e *nodeEnv) Send(to membership.NodeID, proto protocol.ID, frame []byte, done func(error)) {
	e.out.send(to, proto, frame, done)
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

// outgoing is a frame to send; done (if set) is called once, with nil when the frame was
// written and the error otherwise.
type outgoing struct {
	proto protocol.ID
	frame []byte
	done  func(error)
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

// send queues a frame for member to. When nothing waits for that member and its stream is
// open with room, the frame is handed to the stream at once, on the caller's goroutine,
// saving a goroutine hop; otherwise the outbox's goroutine sends it, in order.
func (o *outboxes) send(to membership.NodeID, proto protocol.ID, frame []byte, done func(error)) {
	b, err := o.box(to)
	if err != nil {
		o.finish(proto, done, err)
		return
	}
	if b.pending.Load() == 0 {
		err := o.host.TrySend(b.peer, proto, frame)
		if err == nil || !errors.Is(err, p2p.ErrWouldBlock) {
			o.finish(proto, done, err)
			return
		}
	}
	b.pending.Add(1)
	b.mu.Lock()
	b.queue = append(b.queue, outgoing{proto: proto, frame: frame, done: done})
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
			err := b.write(out.proto, out.frame)
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

package node

import (
	"bytes"
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
	n.enqueue(MemberMessage{From: n.nameOf(from), Msg: msg})
	return nil
}

// handleCoordFrame decodes a coordination frame.
func (n *Node) handleCoordFrame(from peer.ID, frame []byte) error {
	typ, msg, err := wire.DecodeCoord(frame)
	if err != nil {
		return err
	}
	n.enqueue(CoordMessage{From: n.nameOf(from), Type: typ, Msg: msg})
	return nil
}

// regionSink takes the frames of one region stream from another member: messages
// forwarded by its regions, and replies to this member's asks (resolved here, on the
// stream's goroutine). The messages of the frames that arrived together go to the loop in
// one batch. Whether the sender is an admitted member is decided in the core, where the
// messages take effect (core_admission.go); a reply, resolved here, is checked here.
type regionSink struct {
	n     *Node
	from  peer.ID
	name  membership.NodeID // from's text form
	batch []Deliver
}

func (n *Node) newRegionSink(from peer.ID) p2p.FrameSink {
	return &regionSink{n: n, from: from, name: n.nameOf(from)}
}

// Frame decodes a frame, which is reused after return: what is kept is copied.
func (s *regionSink) Frame(frame []byte) error {
	n := s.n
	in, ok, err := n.core.DecodeRegionFrame(s.name, frame)
	if errors.Is(err, ErrNotAdmitted) {
		n.gate.Refused(s.from, RegionProtocol)
		return nil
	}
	if err != nil || !ok {
		return err
	}
	m := in.Envelope.Payload.(*Message)
	t, err := n.core.Sender(in.Type)
	if err != nil {
		if n.core.RejectForwarded(&in, err) {
			n.gate.Refused(s.from, RegionProtocol)
		}
		return nil
	}
	// A credit first: when this type is saturated here, this stream's reader waits, and TCP
	// slows the sender down. The batch so far goes first, since it holds credits too.
	if !t.credits.tryAcquire() {
		_ = s.Flush()
		if err := t.credits.acquire(n.ctx, n.done); err != nil {
			return nil
		}
	}
	m.credits = t.credits
	s.batch = append(s.batch, in)
	return nil
}

// Flush hands the batch to the loop.
func (s *regionSink) Flush() error {
	s.n.deliveries.pushAll(s.batch)
	clear(s.batch)
	s.batch = s.batch[:0]
	return nil
}

// nameOf returns the text form of peer id p (base58: worth encoding once per peer, not per
// frame).
func (n *Node) nameOf(p peer.ID) membership.NodeID {
	if v, ok := n.names.Load(p); ok {
		return v.(membership.NodeID)
	}
	id := membership.NodeID(p.String())
	if n.namesKept.Add(1) > maxNames {
		n.names.Clear() // peers come and go: keep the cache bounded
		n.namesKept.Store(1)
	}
	n.names.Store(p, id)
	return id
}

// maxNames bounds the peer ids whose text form Node.nameOf keeps.
const maxNames = 4096

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
		n.enqueue(MemberMessage{From: n.nameOf(m.From), Msg: msg})
	}
}

// Send hands a frame to a member's outbox (Env).
func (e *nodeEnv) Send(to membership.NodeID, proto protocol.ID, frame []byte, done func(error)) {
	e.out.send(to, proto, outgoing{proto: proto, frame: frame, done: done})
}

// SendFrames hands frames framed back to back to a member's outbox (Env).
func (e *nodeEnv) SendFrames(to membership.NodeID, proto protocol.ID, framed []byte, n int, done func(error)) {
	e.out.send(to, proto, outgoing{proto: proto, frame: framed, frames: n, done: done})
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

// outgoing is a frame to send, or frames framed back to back (frames > 0, as
// Env.SendFrames takes them); done (if set) is called once, with nil when they were written
// and the error otherwise.
type outgoing struct {
	proto  protocol.ID
	frame  []byte
	frames int
	done   func(error)
}

// trySend hands out to the stream if it is open with room (p2p.ErrWouldBlock otherwise).
func (o *outboxes) trySend(to peer.ID, out outgoing) error {
	if out.frames > 0 {
		return o.host.TrySendFrames(to, out.proto, out.frame, out.frames)
	}
	return o.host.TrySend(to, out.proto, out.frame)
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

// send queues out for member to. When nothing waits for that member and its stream is
// open with room, it is handed to the stream at once, on the caller's goroutine, saving a
// goroutine hop; otherwise the outbox's goroutine sends it, in order.
func (o *outboxes) send(to membership.NodeID, proto protocol.ID, out outgoing) {
	b, err := o.box(to)
	if err != nil {
		o.finish(proto, out.done, err)
		return
	}
	if b.pending.Load() == 0 {
		err := o.trySend(b.peer, out)
		if err == nil || !errors.Is(err, p2p.ErrWouldBlock) {
			o.finish(proto, out.done, err)
			return
		}
	}
	if out.frames > 0 {
		out.frame = bytes.Clone(out.frame) // SendFrames lends its frames for the call only
	}
	b.pending.Add(1)
	b.mu.Lock()
	b.queue = append(b.queue, out)
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
			err := b.write(out)
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
func (b *outbox) write(out outgoing) error {
	o := b.parent
	if err := o.trySend(b.peer, out); !errors.Is(err, p2p.ErrWouldBlock) {
		return err
	}
	ctx, cancel := context.WithTimeout(o.ctx, sendTimeout)
	defer cancel()
	wait := 50 * time.Microsecond
	for {
		var err error
		if out.frames > 0 {
			err = o.host.SendFrames(ctx, b.peer, out.proto, out.frame, out.frames)
		} else {
			err = o.host.Send(ctx, b.peer, out.proto, out.frame)
		}
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

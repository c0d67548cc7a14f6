package node

import (
	"errors"
	"fmt"
	"sync"
	"time"
	"unsafe"

	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/shardmesh/shardmesh/coordinator"
	"github.com/shardmesh/shardmesh/engine"
	"github.com/shardmesh/shardmesh/membership"
	"github.com/shardmesh/shardmesh/p2p"
	"github.com/shardmesh/shardmesh/region"
	"github.com/shardmesh/shardmesh/shard"
	"github.com/shardmesh/shardmesh/wire"
)

// RegisteredType is an entity type registered on this member.
type RegisteredType struct {
	spec    EntityType
	home    EntityHome // the type on this member, shared by its entities' contexts
	credits *credits
	live    int          // incarnations running (owned by the core's driver)
	m       *typeMetrics // nil without metrics
}

// Spec returns the type as it was registered.
func (t *RegisteredType) Spec() *EntityType { return &t.spec }

// applyEntityOp carries out an engine entity operation.
func (c *Core) applyEntityOp(now time.Time, op *engine.EntityOp) {
	if op.Kind == engine.OpDeliver && op.Slot != nil {
		// The hot path: the incarnation is in its slot, no lookups.
		m := op.Envelope.Payload.(*Message)
		if m.ext != nil {
			c.traceLeft(now, m)
		}
		inc, _ := op.Slot.Runtime.(Incarnation)
		switch err := enqueue(inc, m); {
		case err != nil:
			c.Reject(op.Type, m, fmt.Errorf("entity %s: %w", op.Entity, err))
		default:
			c.delivered++
			if c.metrics != nil {
				c.types[op.Type].m.delivered()
			}
		}
		c.returned.add(m.credits) // the message leaves the member's pipeline here
		return
	}
	t := c.types[op.Type]
	if t == nil {
		return
	}
	slot := op.Slot
	if slot == nil {
		slot = c.eng.Slot(op.Type, op.Shard, op.Entity)
	}
	var inc Incarnation
	if slot != nil {
		inc, _ = slot.Runtime.(Incarnation)
	}
	switch op.Kind {
	case engine.OpStart:
		inc = c.env.StartEntity(&t.spec, NewEntityContext(&t.home, op.Shard, op.Entity, op.Epoch))
		// The shard keeps the incarnation with the entity's record: no map of its own here.
		slot.Runtime = inc
		t.live++
		t.m.entityStarted(t.live)
		if t.spec.Settings.Shard.Remember.Enabled {
			// A remembered entity runs even without a message: its behaviour starts now.
			c.recovery.inFlight.Add(1)
			if err := inc.Enqueue(&Message{start: true, ext: &msgExt{at: now}}); err != nil {
				c.recovery.inFlight.Add(-1)
				c.log.Debug("start signal not queued", "type", op.Type, "entity", op.Entity, "err", err)
			}
		}
	case engine.OpDeliver:
		m := op.Envelope.Payload.(*Message)
		c.traceLeft(now, m)
		defer m.credits.release() // the message leaves the member's pipeline here
		if err := enqueue(inc, m); err != nil {
			c.Reject(op.Type, m, fmt.Errorf("entity %s: %w", op.Entity, err))
			return
		}
		c.delivered++
		t.m.delivered()
	case engine.OpStop:
		if inc != nil {
			c.stopRequested(t, op.Shard)
			if err := inc.Enqueue(&Message{stop: true}); err != nil {
				c.log.Debug("stop message not queued", "type", op.Type, "entity", op.Entity, "err", err)
			}
		}
	case engine.OpForceStop:
		if inc != nil {
			c.log.Warn("entity did not stop in time; stopping it by force", "type", op.Type, "shard", op.Shard, "entity", op.Entity, "epoch", op.Epoch.String())
			if t.m != nil {
				t.m.force.Inc()
			}
			c.entityStopped(now, EntityStopped{Type: op.Type, Shard: op.Shard, Entity: op.Entity, Inc: inc, Remaining: inc.Close()})
		}
	}
}

// StartTaken reports that an entity runtime took the start signal m of a remembered entity
// off its mailbox at now: handled (its behaviour created) or dropped. The adaptive
// recovery budget follows it. Safe from any goroutine.
func (c *Core) StartTaken(m *Message, now time.Time, handled bool) {
	c.recovery.inFlight.Add(-1)
	if handled {
		c.recovery.started(now.Sub(m.x().at))
	}
}

// enqueue queues m for inc, naming the entity as not running when it cannot take it.
func enqueue(inc Incarnation, m *Message) error {
	if inc == nil {
		return errNotRunning
	}
	if err := inc.Enqueue(m); err != nil {
		return fmt.Errorf("%w: %w", errNotRunning, err)
	}
	return nil
}

// entityStopped reports an ended incarnation to the engine. What it had not handled comes
// back into the engine and takes credits again.
func (c *Core) entityStopped(now time.Time, in EntityStopped) {
	var unhandled []region.Envelope
	for _, m := range in.Remaining {
		switch {
		case !m.signal():
			m.credits.readmit()
			unhandled = append(unhandled, region.Envelope{Shard: in.Shard, Entity: in.Entity, Payload: m, Epoch: m.homeEpoch()})
		case m.start:
			c.recovery.inFlight.Add(-1) // never handled
		}
	}
	t := c.types[in.Type]
	if t == nil {
		return
	}
	slot := c.eng.Slot(in.Type, in.Shard, in.Entity)
	if slot == nil || slot.Runtime != in.Inc {
		// Already reported (a forced stop raced with the entity's own stop); anything it
		// still had goes back to the region.
		if len(unhandled) > 0 {
			c.eng.EntityStopped(now, in.Type, in.Shard, in.Entity, unhandled)
		}
		return
	}
	slot.Runtime = nil // reported
	t.live--
	t.m.entityEnded(t.live)
	c.eng.EntityStopped(now, in.Type, in.Shard, in.Entity, unhandled)
}

// stopRequested counts a stop the shard asked for: a passivation unless the shard is
// handing off.
func (c *Core) stopRequested(t *RegisteredType, s shard.ID) {
	if t.m == nil {
		return
	}
	if r := c.eng.Region(t.spec.Name); r != nil {
		if _, stopping, ok := r.LocalEpoch(s); ok && stopping {
			return
		}
	}
	t.m.passivations.Inc()
}

// forward queues a message for its shard's home on another member, in the batch of this
// Flush for that member (sendForwards sends them). The message keeps its credit until it
// is written (or has failed and its sender was told).
func (c *Core) forward(f engine.Forward) {
	m := f.Envelope.Payload.(*Message)
	if m.ext != nil {
		c.traceLeft(c.now, m)
	}
	t := c.types[f.Type]
	frame, err := safeEncode(func() ([]byte, error) { return c.encodeForward(t, f.To, f.Envelope, m) })
	if err == nil && len(frame) > maxForwardFrame {
		err = fmt.Errorf("the message is %d bytes encoded, more than a frame may hold (%d)", len(frame), maxForwardFrame)
	}
	if err != nil {
		m.credits.release()
		c.Reject(f.Type, m, fmt.Errorf("%w: %w", errSendFailed, err))
		return
	}
	t.m.forwarded()
	b := c.forwardBatch(f.To)
	b.framed = p2p.AppendFrame(b.framed, frame)
	*b.msgs = append(*b.msgs, forwarded{typ: f.Type, m: m})
	if len(b.framed) >= forwardBatchBytes {
		c.sendBatch(b)
	}
}

// maxForwardFrame is the largest frame a forwarded message may take: the stream's limit.
const maxForwardFrame = p2p.DefaultMaxFrameSize

// forwardBatchBytes is the size at which a member's batch leaves before the Flush ends.
const forwardBatchBytes = 64 << 10

// forwardBatch is the messages of one Flush for one member, framed back to back: they
// leave together (Env.SendFrames), in the order the engine forwarded them.
type forwardBatch struct {
	to     membership.NodeID
	framed []byte
	msgs   *[]forwarded // from forwardedLists
}

// maxFreeBatches bounds the emptied batches kept for reuse.
const maxFreeBatches = 8

// forwards is a Flush's batches of forwarded messages.
type forwards struct {
	batches []*forwardBatch                     // in the order their members came up
	by      map[membership.NodeID]*forwardBatch // the same, by member
	free    []*forwardBatch                     // emptied batches, their buffers kept
}

// forwarded is a message in a forwardBatch, kept to release its credit and to tell its
// sender when the batch is not written.
type forwarded struct {
	typ string
	m   *Message
}

// forwardBatch returns the batch of this Flush for member to.
func (c *Core) forwardBatch(to membership.NodeID) *forwardBatch {
	f := &c.fwd
	if n := len(f.batches); n > 0 && f.batches[n-1].to == to { // a run of messages to one member
		return f.batches[n-1]
	}
	if b := f.by[to]; b != nil {
		return b
	}
	var b *forwardBatch
	if n := len(f.free); n > 0 {
		b, f.free = f.free[n-1], f.free[:n-1]
		b.to = to
	} else {
		b = &forwardBatch{to: to, msgs: forwardedLists.Get().(*[]forwarded)}
	}
	f.batches = append(f.batches, b)
	if f.by == nil {
		f.by = map[membership.NodeID]*forwardBatch{}
	}
	f.by[to] = b
	return b
}

// sendForwards sends the batches of this Flush, in the order their members were first
// forwarded to.
func (c *Core) sendForwards() {
	f := &c.fwd
	for _, b := range f.batches {
		if len(*b.msgs) > 0 {
			c.sendBatch(b)
		}
		delete(f.by, b.to)
	}
	// A few emptied batches are kept with their buffers; a Flush to many members does not
	// pin a buffer for each.
	f.free = append(f.free, f.batches[:min(len(f.batches), maxFreeBatches-len(f.free))]...)
	clear(f.batches)
	f.batches = f.batches[:0]
}

// sendBatch hands b's messages to the Env and empties b: its frames for reuse, its list
// of messages to the callback that tells their fate.
func (c *Core) sendBatch(b *forwardBatch) {
	msgs := b.msgs
	c.env.SendFrames(b.to, RegionProtocol, b.framed, len(*msgs), func(err error) {
		for i, f := range *msgs {
			f.m.credits.release()
			if err != nil {
				c.Reject(f.typ, f.m, fmt.Errorf("%w: %w", errSendFailed, err))
			}
			(*msgs)[i] = forwarded{}
		}
		*msgs = (*msgs)[:0]
		forwardedLists.Put(msgs)
	})
	b.framed = b.framed[:0]
	b.msgs = forwardedLists.Get().(*[]forwarded)
}

// forwardedLists recycles the lists of forwarded messages, which their callbacks give back
// from the goroutine that writes them.
var forwardedLists = sync.Pool{New: func() any { return new([]forwarded) }}

// refuseNotHome sends a message forwarded here back to the member that forwarded it, which
// takes this member for the shard's home (with an epoch this member no longer has): that
// member drops its stale home and routes the message again. False when the sender is not
// known (the message is then rejected).
func (c *Core) refuseNotHome(typ string, env region.Envelope, m *Message, nh *region.NotHomeError) bool {
	from := m.from
	t := c.types[typ]
	if from == "" || from == c.self.Node || t == nil {
		return false
	}
	var d wire.Deliver
	if _, err := safeEncode(func() (_ []byte, err error) { d, err = c.forwardOf(t, from, env, m); return nil, err }); err != nil {
		return false
	}
	d.NotHome, d.Home, d.HomeEpoch = true, bytesOf(string(nh.Home)), uint64(nh.HomeEpoch)
	c.metrics.rejectedMsg(typ, true, nh)
	c.env.Send(from, RegionProtocol, wire.AppendDeliver(nil, &d), func(err error) {
		m.credits.release()
		if err != nil {
			c.Reject(typ, m, fmt.Errorf("%w: %w", errSendFailed, err))
		}
	})
	return true
}

// encodeForward returns the frame that carries m to member to, in the Core's scratch
// buffer (valid until the next call).
func (c *Core) encodeForward(t *RegisteredType, to membership.NodeID, env region.Envelope, m *Message) ([]byte, error) {
	d, err := c.forwardOf(t, to, env, m)
	if err != nil {
		return nil, err
	}
	c.scratch = wire.AppendDeliver(c.scratch[:0], &d)
	return c.scratch, nil
}

// forwardOf returns what carries m to member to (its value encoded once). Its byte fields
// are views of m's and the Core's strings, valid while they are.
func (c *Core) forwardOf(t *RegisteredType, to membership.NodeID, env region.Envelope, m *Message) (wire.Deliver, error) {
	if m.encoded == nil && !m.startEn {
		b, err := t.spec.EncodeMessage(m.value)
		if err != nil {
			return wire.Deliver{}, fmt.Errorf("encode message for %s: %w", t.spec.Name, err)
		}
		m.encoded = b
	}
	// The wire's byte fields only read these strings: views, not copies.
	d := wire.Deliver{Type: bytesOf(t.spec.Name), Shard: bytesOf(string(env.Shard)), Entity: bytesOf(string(env.Entity)), Payload: m.encoded, Hops: env.Hops,
		Start: m.startEn, Epoch: uint64(env.Epoch)}
	if m.ext != nil {
		d.Trace = traceBytes(m)
	}
	if m.ask != nil {
		c.asks.track(m.ask, to)
		d.AskID, d.ReplyTo = m.ask.ID(), bytesOf(string(c.self.Node))
	} else if m.askID != 0 {
		d.AskID, d.ReplyTo = m.askID, bytesOf(string(m.replyTo))
	}
	return d, nil
}

// bytesOf returns the bytes of s without copying them; they must never be written.
func bytesOf(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

// safeEncode runs an entity type's encoder, turning a panic into an error.
func safeEncode(encode func() ([]byte, error)) (frame []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("encoder panicked: %v", r)
		}
	}()
	return encode()
}

// Answer sends an entity's reply (or error) to the asker of m. Safe from any goroutine.
func (c *Core) Answer(t *EntityType, m *Message, reply any, err error) {
	if m.ask != nil {
		m.ask.Resolve(Reply{Value: reply, Err: err})
		return
	}
	if m.askID == 0 {
		return
	}
	var payload []byte
	if err == nil && reply != nil {
		payload, err = t.EncodeReply(reply)
		if err != nil {
			err = fmt.Errorf("encode reply of %s: %w", t.Name, err)
		}
	}
	c.sendReply(m.replyTo, m.askID, payload, err)
}

// Reject tells the sender of a message that it will not be handled. Safe from any
// goroutine.
func (c *Core) Reject(typ string, m *Message, err error) {
	if c.metrics != nil {
		_, known := c.specs.Load(typ)
		c.metrics.rejectedMsg(typ, known, err)
	}
	switch {
	case m.ask != nil:
		m.ask.Resolve(Reply{Err: err})
	case m.askID != 0:
		c.sendReply(m.replyTo, m.askID, nil, err)
	default:
		c.log.Debug("a message was not delivered", "type", typ, "err", err)
	}
}

// sendReply answers an ask from another member — or from this one, when the ask went to
// another member and was forwarded back here (a shard home that moved while the ask was on
// its way): libp2p does not dial itself, so that reply is resolved here, not sent (it was
// dropped, and the asker timed out: found by the chaos suite after a full restart).
func (c *Core) sendReply(to membership.NodeID, askID uint64, payload []byte, err error) {
	if to == c.self.Node {
		c.ResolveReply(askID, payload, err)
		return
	}
	r := wire.Reply{AskID: askID, Payload: payload}
	if err != nil {
		r.Err = []byte(err.Error())
	}
	c.env.Send(to, RegionProtocol, wire.AppendReply(nil, &r), nil)
}

// ResolveReply answers the ask askID of this member waiting for another member's reply:
// payload in the type's reply codec, or err. Safe from any goroutine.
func (c *Core) ResolveReply(askID uint64, payload []byte, err error) {
	p := c.asks.take(askID)
	if p == nil {
		return
	}
	if err != nil {
		p.Resolve(Reply{Err: err})
		return
	}
	p.Resolve(Reply{Encoded: nonNil(payload)})
}

// DecodeRegionFrame takes a frame of the region protocol from member from: a reply
// resolves its ask at once (ok is false) when from is a member, or was one, as of the latest
// view (an ask went to it while it was; else the error wraps ErrNotAdmitted); a message for
// an entity comes back as the Deliver to step (which admits it or not), its payload copied
// out of frame (which the caller may reuse). Another error means the frame did not decode.
// Safe from any goroutine.
func (c *Core) DecodeRegionFrame(from membership.NodeID, frame []byte) (in Deliver, ok bool, err error) {
	var d wire.Deliver
	var r wire.Reply
	kind, err := wire.DecodeRegion(frame, &d, &r)
	if err != nil {
		return Deliver{}, false, err
	}
	v := c.view.Load()
	if kind == wire.KindReply {
		if !v.Knows(from) {
			return Deliver{}, false, fmt.Errorf("a reply to an ask from %s: %w", from, ErrNotAdmitted)
		}
		var rerr error
		if len(r.Err) > 0 {
			rerr = &RemoteError{Message: string(r.Err)}
		}
		// The payload is copied: the frame is reused after return.
		c.ResolveReply(r.AskID, append(make([]byte, 0, len(r.Payload)), r.Payload...), rerr)
		return Deliver{}, false, nil
	}
	// Only an admitted member's ids are kept in the interned table: a peer not admitted
	// fills none of it.
	ids := &c.ids
	if !v.Admits(from) {
		ids = nil
	}
	m := &Message{askID: d.AskID, startEn: d.Start, from: from}
	if d.AskID != 0 {
		m.replyTo = membership.NodeID(ids.of(d.ReplyTo))
	}
	// Never nil, even for a value that encodes to nothing: nil would mean "not encoded".
	m.encoded = append(make([]byte, 0, len(d.Payload)), d.Payload...)
	if c.tracer != nil && len(d.Trace) > 0 {
		if sc, ok := traceFrom(d.Trace); ok {
			m.x().tr = &msgTrace{sc: sc}
		}
	}
	in = Deliver{Type: c.typeName(d.Type), Envelope: region.Envelope{Shard: shard.ID(ids.of(d.Shard)), Entity: shard.EntityID(d.Entity), Payload: m, Hops: d.Hops,
		Epoch: coordinator.Epoch(d.Epoch)}, From: from}
	if d.NotHome {
		// Taken only once from is admitted (Core.Deliver).
		m.x().bounce = &region.NotHomeError{Shard: in.Envelope.Shard, Epoch: in.Envelope.Epoch, Home: membership.NodeID(ids.of(d.Home)), HomeEpoch: coordinator.Epoch(d.HomeEpoch)}
	}
	return in, true, nil
}

// typeName returns the name of the type registered here as name, without allocating, or
// name as a new string (a type this member does not know).
func (c *Core) typeName(name []byte) string {
	if all := c.registered.Load(); all != nil {
		for _, t := range *all {
			if t.spec.Name == string(name) {
				return t.spec.Name
			}
		}
	}
	return string(name)
}

// Receive takes a frame of a member protocol from member from and steps what it carries:
// what a driver without stream goroutines of its own does (the simulation). A frame that
// does not decode is returned as an error.
func (c *Core) Receive(now time.Time, from membership.NodeID, proto protocol.ID, frame []byte) error {
	switch proto {
	case MemberProtocol:
		msg, err := wire.DecodeMembership(frame)
		if err != nil {
			return err
		}
		c.Step(now, MemberMessage{From: from, Msg: msg})
	case CoordProtocol:
		typ, msg, err := wire.DecodeCoord(frame)
		if err != nil {
			return err
		}
		c.Step(now, CoordMessage{From: from, Type: typ, Msg: msg})
	case RegionProtocol:
		in, ok, err := c.DecodeRegionFrame(from, frame)
		if errors.Is(err, ErrNotAdmitted) {
			c.env.Refused(from, RegionProtocol, nil)
			return nil
		}
		if err != nil || !ok {
			return err
		}
		if _, err := c.Sender(in.Type); err != nil {
			if c.RejectForwarded(&in, err) {
				c.env.Refused(from, RegionProtocol, in)
			}
			return nil
		}
		c.Deliver(now, in)
	default:
		return fmt.Errorf("no member protocol %s", proto)
	}
	return nil
}

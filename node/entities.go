package node

import (
	"fmt"
	"time"

	"github.com/shardmesh/shardmesh/engine"
	"github.com/shardmesh/shardmesh/internal/mailbox"
	"github.com/shardmesh/shardmesh/region"
	"github.com/shardmesh/shardmesh/shard"
)

// typeRuntime is a registered entity type on this member.
type typeRuntime struct {
	spec     EntityType
	credits  *credits
	group    *mailbox.Group[*message]
	entities map[shard.EntityID]*entity // owned by the loop goroutine
	m        *typeMetrics               // nil without metrics
}

// entity is one incarnation of an entity: its mailbox and its behaviour. Everything but the
// mailbox is used only on the entity's turn (by one worker at a time).
type entity struct {
	mb            mailbox.Mailbox[*message]
	n             *Node
	t             *typeRuntime
	ctx           EntityContext
	behavior      Behavior
	current       *message
	stopAfterTurn bool
	finished      bool
}

// Receive handles one message on the entity's turn.
func (e *entity) Receive(m *message) {
	if m.start {
		// Handled (or dropped) now: no longer in flight, also if New panics.
		defer e.n.recovery.inFlight.Add(-1)
	}
	if e.finished {
		e.n.reject(e.t.spec.Name, m, ErrStopped)
		return
	}
	// A process woken from a long pause (SIGSTOP, a GC stall) must not handle what was
	// queued before it has checked that it still holds its lease.
	if !e.n.awaitServing() {
		e.n.reject(e.t.spec.Name, m, ErrStopped)
		return
	}
	e.current = m
	if m.start {
		if e.behavior == nil {
			e.behavior = e.t.spec.New(&e.ctx)
		}
		e.n.recovery.started(time.Since(m.at))
	} else if m.stop {
		if e.t.spec.StopMessage == nil {
			e.stopAfterTurn = true
		} else {
			e.handle(&message{value: e.t.spec.StopMessage()})
		}
	} else {
		e.handle(m)
	}
	e.current = nil
	if e.stopAfterTurn {
		e.finish()
	}
}

func (e *entity) handle(m *message) {
	value := m.value
	if value == nil && m.encoded != nil {
		v, err := e.t.spec.DecodeMessage(m.encoded)
		if err != nil {
			// Per message: debug only; counted (reason undecodable) and answered.
			e.n.log.Debug("dropped a message the entity type's codec cannot decode", "type", e.t.spec.Name, "shard", e.ctx.Shard, "entity", e.ctx.Entity, "err", err)
			err = fmt.Errorf("decode message for %s: %w: %w", e.t.spec.Name, ErrUndecodable, err)
			e.n.metrics.rejectedMsg(e.t.spec.Name, true, err)
			e.n.answer(e.t, m, nil, err)
			return
		}
		value = v
	}
	if e.behavior == nil {
		e.behavior = e.t.spec.New(&e.ctx)
	}
	reply, err := e.behavior.Receive(&e.ctx, value)
	if m.isAsk() {
		e.n.answer(e.t, m, reply, err)
	}
}

// Failed handles a panic of the behaviour: the message's asker gets an error, and the
// incarnation stops; the entity's next message starts a fresh one.
func (e *entity) Failed(r any, stack []byte) {
	e.n.log.Error("entity panicked; its incarnation stops", "type", e.t.spec.Name, "shard", e.ctx.Shard, "entity", e.ctx.Entity, "epoch", e.ctx.Epoch.String(), "panic", fmt.Sprint(r), "stack", string(stack))
	if e.current != nil && e.current.isAsk() {
		e.n.answer(e.t, e.current, nil, fmt.Errorf("%w: %v", ErrEntityFailed, r))
	}
	e.current = nil
	e.finish()
}

// finish ends the incarnation after its turn: what is still queued goes back to the shard
// for the next incarnation.
func (e *entity) finish() {
	if e.finished {
		return
	}
	e.finished = true
	remaining := e.mb.Close(nil)
	e.n.command(func(now time.Time) { e.n.entityStopped(now, e, remaining) })
}

func (e *entity) passivate() {
	e.n.command(func(now time.Time) {
		if e.t.entities[e.ctx.Entity] == e {
			e.n.eng.Passivate(now, e.t.spec.Name, e.ctx.Shard, e.ctx.Entity)
		}
	})
}

// applyEntityOp carries out an engine entity operation (on the loop goroutine).
func (n *Node) applyEntityOp(now time.Time, op engine.EntityOp) {
	if op.Kind == engine.OpDeliver && op.Slot != nil {
		// The hot path: the incarnation is in its slot, no lookups.
		m := op.Envelope.Payload.(*message)
		e, _ := op.Slot.Runtime.(*entity)
		if e == nil {
			n.reject(op.Type, m, fmt.Errorf("entity %s: %w", op.Entity, errNotRunning))
		} else if err := e.mb.Enqueue(m); err != nil {
			n.reject(op.Type, m, fmt.Errorf("entity %s: %w: %w", op.Entity, errNotRunning, err))
		} else {
			n.delivered++
			e.t.m.delivered()
		}
		m.credits.release() // the message leaves the member's pipeline here
		return
	}
	t := n.types[op.Type]
	if t == nil {
		return
	}
	e := t.entities[op.Entity]
	switch op.Kind {
	case engine.OpStart:
		e = &entity{n: n, t: t, ctx: EntityContext{Type: op.Type, Shard: op.Shard, Entity: op.Entity, Node: n.self.Node, Epoch: op.Epoch}}
		e.ctx.e = e
		e.mb.Init(t.group, e)
		t.entities[op.Entity] = e
		t.m.entityStarted(len(t.entities))
		if op.Slot != nil {
			op.Slot.Runtime = e
		}
		if t.spec.Settings.Shard.Remember.Enabled {
			// A remembered entity runs even without a message: its behaviour starts now.
			n.recovery.inFlight.Add(1)
			if err := e.mb.Enqueue(&message{start: true, at: now}); err != nil {
				n.recovery.inFlight.Add(-1)
				n.log.Debug("start signal not queued", "type", op.Type, "entity", op.Entity, "err", err)
			}
		}
	case engine.OpDeliver:
		m := op.Envelope.Payload.(*message)
		defer m.credits.release() // the message leaves the member's pipeline here
		if e == nil {
			n.reject(op.Type, m, fmt.Errorf("entity %s: %w", op.Entity, errNotRunning))
			return
		}
		if err := e.mb.Enqueue(m); err != nil {
			n.reject(op.Type, m, fmt.Errorf("entity %s: %w: %w", op.Entity, errNotRunning, err))
		} else {
			n.delivered++
			t.m.delivered()
		}
	case engine.OpStop:
		if e != nil {
			n.stopRequested(t, op.Shard)
			if err := e.mb.Enqueue(&message{stop: true}); err != nil {
				n.log.Debug("stop message not queued", "type", op.Type, "entity", op.Entity, "err", err)
			}
		}
	case engine.OpForceStop:
		if e != nil {
			n.log.Warn("entity did not stop in time; stopping it by force", "type", op.Type, "shard", op.Shard, "entity", op.Entity, "epoch", e.ctx.Epoch.String())
			if t.m != nil {
				t.m.force.Inc()
			}
			e.finished = true
			n.entityStopped(now, e, e.mb.Close(nil))
		}
	}
}

// entityStopped reports an ended incarnation to the engine (on the loop goroutine). What it
// had not handled comes back into the engine and takes credits again.
func (n *Node) entityStopped(now time.Time, e *entity, remaining []*message) {
	for _, m := range remaining {
		if !m.signal() {
			m.credits.readmit()
		} else if m.start {
			n.recovery.inFlight.Add(-1) // never handled
		}
	}
	if e.t.entities[e.ctx.Entity] != e {
		// Already reported (a forced stop raced with the entity's own stop); anything it
		// still had goes back to the region.
		var unhandled []*message
		for _, m := range remaining {
			if !m.signal() {
				unhandled = append(unhandled, m)
			}
		}
		if len(unhandled) > 0 {
			n.eng.EntityStopped(now, e.t.spec.Name, e.ctx.Shard, e.ctx.Entity, envelopes(e, unhandled))
		}
		return
	}
	delete(e.t.entities, e.ctx.Entity)
	e.t.m.entityEnded(len(e.t.entities))
	var unhandled []*message
	for _, m := range remaining {
		if !m.signal() {
			unhandled = append(unhandled, m)
		}
	}
	n.eng.EntityStopped(now, e.t.spec.Name, e.ctx.Shard, e.ctx.Entity, envelopes(e, unhandled))
}

func envelopes(e *entity, ms []*message) []region.Envelope {
	out := make([]region.Envelope, 0, len(ms))
	for _, m := range ms {
		out = append(out, region.Envelope{Shard: e.ctx.Shard, Entity: e.ctx.Entity, Payload: m})
	}
	return out
}

// answer sends an entity's reply (or error) to the asker.
func (n *Node) answer(t *typeRuntime, m *message, reply any, err error) {
	if m.ask != nil {
		m.ask.resolve(askResult{value: reply, err: err})
		return
	}
	if m.askID == 0 {
		return
	}
	var payload []byte
	if err == nil && reply != nil {
		payload, err = t.spec.EncodeReply(reply)
		if err != nil {
			err = fmt.Errorf("encode reply of %s: %w", t.spec.Name, err)
		}
	}
	n.sendReply(m.replyTo, m.askID, payload, err)
}

// reject tells the sender of a message that it will not be handled.
func (n *Node) reject(typ string, m *message, err error) {
	if n.metrics != nil {
		_, known := n.specs.Load(typ)
		n.metrics.rejectedMsg(typ, known, err)
	}
	switch {
	case m.ask != nil:
		m.ask.resolve(askResult{err: err})
	case m.askID != 0:
		n.sendReply(m.replyTo, m.askID, nil, err)
	default:
		n.log.Debug("a message was not delivered", "type", typ, "err", err)
	}
}

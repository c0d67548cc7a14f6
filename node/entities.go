package node

import (
	"context"
	"fmt"
	"time"

	"github.com/shardmesh/shardmesh/internal/mailbox"
)

// entity is one incarnation of an entity: its mailbox and its behaviour. Everything but the
// mailbox is used only on the entity's turn (by one worker at a time). It is kept small (192
// bytes): a member may hold millions of idle ones.
type entity struct {
	mb            mailbox.Mailbox[*Message]
	k             *entityKind
	ctx           EntityContext
	behavior      Behavior
	current       *Message
	stopAfterTurn bool
	finished      bool
}

// entityKind is what the incarnations of one entity type on this member share.
type entityKind struct {
	n     *Node
	t     *EntityType
	group *mailbox.Group[*Message]
}

// StartEntity starts an incarnation on the entity workers (Env).
func (env *nodeEnv) StartEntity(t *EntityType, ctx EntityContext) Incarnation {
	n := (*Node)(env)
	k := n.kinds[t]
	if k == nil {
		g, _ := n.groups.Load(t.Name)
		k = &entityKind{n: n, t: t, group: g.(*mailbox.Group[*Message])}
		n.kinds[t] = k
	}
	e := &entity{k: k}
	e.ctx = ctx.WithTurns(e)
	e.mb.Init(k.group, e)
	return e
}

// Enqueue queues m for the incarnation's turns. Only the loop calls it (the core's entity
// operations): the entity joins the loop's batch of runnable entities, which the workers get
// at the loop's next flush.
func (e *entity) Enqueue(m *Message) error { return e.mb.EnqueueTo(&e.k.n.runnable, m) }

// Close ends the incarnation at once (a forced stop) and returns what it had queued.
func (e *entity) Close() []*Message {
	e.finished = true
	return e.mb.Close(nil)
}

// Stop ends the incarnation after the current turn (EntityContext.Stop).
func (e *entity) Stop() { e.stopAfterTurn = true }

// LoadState and SaveState: EntityContext's, on this member's store.
func (e *entity) LoadState(ctx context.Context, c *EntityContext) ([]byte, error) {
	return e.k.n.loadState(ctx, c)
}

func (e *entity) SaveState(ctx context.Context, c *EntityContext, state []byte) error {
	return e.k.n.saveState(ctx, c, state)
}

// Receive handles one message on the entity's turn.
func (e *entity) Receive(m *Message) {
	c := e.k.n.core
	started := false
	if m.start {
		// Taken off the mailbox now: no longer in flight, also if New panics.
		defer func() { c.StartTaken(m, time.Now(), started) }()
	}
	if e.finished {
		c.Reject(e.k.t.Name, m, ErrStopped)
		return
	}
	// A process woken from a long pause (SIGSTOP, a GC stall) must not handle what was
	// queued before it has checked that it still holds its lease.
	if !e.k.n.awaitServing() {
		c.Reject(e.k.t.Name, m, ErrStopped)
		return
	}
	e.current = m
	if m.start {
		if e.behavior == nil {
			e.behavior = e.k.t.New(&e.ctx)
		}
		started = true
	} else if m.stop {
		if e.k.t.StopMessage == nil {
			e.stopAfterTurn = true
		} else {
			e.handle(&Message{value: e.k.t.StopMessage()})
		}
	} else {
		e.handle(m)
	}
	e.current = nil
	if e.stopAfterTurn {
		e.finish()
	}
}

func (e *entity) handle(m *Message) {
	c := e.k.n.core
	value, err := m.Value(e.k.t)
	if err != nil {
		// Per message: debug only; counted (reason undecodable) and answered.
		e.k.n.log.Debug("dropped a message the entity type's codec cannot decode", "type", e.k.t.Name, "shard", e.ctx.Shard, "entity", e.ctx.Entity, "err", err)
		err = fmt.Errorf("decode message for %s: %w: %w", e.k.t.Name, ErrUndecodable, err)
		c.metrics.rejectedMsg(e.k.t.Name, true, err)
		c.Answer(e.k.t, m, nil, err)
		return
	}
	if e.behavior == nil {
		e.behavior = e.k.t.New(&e.ctx)
	}
	reply, err := e.behavior.Receive(&e.ctx, value)
	if m.IsAsk() {
		c.Answer(e.k.t, m, reply, err)
	}
}

// Failed handles a panic of the behaviour: the message's asker gets an error, and the
// incarnation stops; the entity's next message starts a fresh one.
func (e *entity) Failed(r any, stack []byte) {
	e.k.n.log.Error("entity panicked; its incarnation stops", "type", e.k.t.Name, "shard", e.ctx.Shard, "entity", e.ctx.Entity, "epoch", e.ctx.Epoch.String(), "panic", fmt.Sprint(r), "stack", string(stack))
	if e.current != nil && e.current.IsAsk() {
		e.k.n.core.Answer(e.k.t, e.current, nil, fmt.Errorf("%w: %v", ErrEntityFailed, r))
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
	e.k.n.post(EntityStopped{Type: e.k.t.Name, Shard: e.ctx.Shard, Entity: e.ctx.Entity, Inc: e, Remaining: remaining})
}

// Passivate asks the shard to stop this incarnation (EntityContext.Passivate).
func (e *entity) Passivate() {
	e.k.n.post(Passivate{Type: e.k.t.Name, Shard: e.ctx.Shard, Entity: e.ctx.Entity, Inc: e})
}

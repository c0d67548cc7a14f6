package node

import (
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/shardmesh/shardmesh/internal/mailbox"
)

// entity is one incarnation of an entity: its mailbox and its behaviour. Everything but the
// mailbox is used only on the entity's turn (by one worker at a time). It is kept small (192
// bytes): a member may hold millions of idle ones.
type entity struct {
	mb            mailbox.Mailbox[*Message]
	ctx           EntityContext // its home holds the entityKind
	behavior      Behavior
	current       *Message
	stopAfterTurn bool
	finished      bool
}

// entityKind is what the incarnations of one entity type on this member share, kept in
// their EntityHome (so that an incarnation does not pay a pointer for it).
type entityKind struct {
	n     *Node
	t     *EntityType
	group *mailbox.Group[*Message]
}

// StartEntity starts an incarnation on the entity workers (Env).
func (env *nodeEnv) StartEntity(t *EntityType, ctx EntityContext) Incarnation {
	n := (*Node)(env)
	k := ctx.home.kind
	if k == nil {
		g, _ := n.groups.Load(t.Name)
		k = &entityKind{n: n, t: t, group: g.(*mailbox.Group[*Message])}
		ctx.home.kind = k // before any incarnation of the type runs: the loop's write only
	}
	e := &entity{}
	e.ctx = ctx.WithTurns(e)
	e.mb.Init(k.group, e)
	return e
}

// k returns what the incarnations of e's type share.
func (e *entity) k() *entityKind { return e.ctx.home.kind }

// Enqueue queues m for the incarnation's turns. Only the loop calls it (the core's entity
// operations): the entity joins the loop's batch of runnable entities, which the workers get
// at the loop's next flush.
func (e *entity) Enqueue(m *Message) error { return e.mb.EnqueueTo(&e.k().n.runnable, m) }

// Close ends the incarnation at once (a forced stop) and returns what it had queued.
func (e *entity) Close() []*Message {
	e.finished = true
	return e.mb.Close(nil)
}

// Stop ends the incarnation after the current turn (EntityContext.Stop).
func (e *entity) Stop() { e.stopAfterTurn = true }

// LoadState and SaveState: EntityContext's, on this member's store.
func (e *entity) LoadState(ctx context.Context, c *EntityContext) ([]byte, error) {
	return e.k().n.loadState(ctx, c)
}

func (e *entity) SaveState(ctx context.Context, c *EntityContext, state []byte) error {
	return e.k().n.saveState(ctx, c, state)
}

// Remind carries out a reminder operation through the core and waits for it, lending the
// entity's worker to the others meanwhile (Turns).
func (e *entity) Remind(ctx context.Context, op ReminderOp) ([]Reminder, error) {
	n := e.k().n
	type answer struct {
		rs  []Reminder
		err error
	}
	ch := make(chan answer, 1)
	op.Done = func(rs []Reminder, err error) { ch <- answer{rs, err} }
	n.pool.Block()
	defer n.pool.Unblock()
	if err := n.servingFor(ctx); err != nil {
		return nil, err
	}
	if err := n.input(ctx, op); err != nil {
		return nil, err
	}
	select {
	case a := <-ch:
		return a.rs, a.err
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-n.done:
		return nil, ErrStopped
	}
}

// Timer hands a timer operation of this incarnation to the core (Turns).
func (e *entity) Timer(op TimerOp) {
	op.Inc = e
	e.k().n.post(op)
}

// Receive handles one message on the entity's turn.
func (e *entity) Receive(m *Message) {
	c := e.k().n.core
	started := false
	if m.start {
		// Taken off the mailbox now: no longer in flight, also if New panics.
		defer func() { c.StartTaken(m, time.Now(), started) }()
	}
	if e.finished {
		c.Reject(e.k().t.Name, m, ErrStopped)
		return
	}
	// A process woken from a long pause (SIGSTOP, a GC stall) must not handle what was
	// queued before it has checked that it still holds its lease.
	if !e.k().n.awaitServing() {
		c.Reject(e.k().t.Name, m, ErrStopped)
		return
	}
	e.current = m
	if m.start {
		if e.behavior == nil {
			e.behavior = e.k().t.New(&e.ctx)
		}
		started = true
	} else if m.startEn {
		// StartEntity: the behaviour is created, nothing is delivered; the asker learns it runs.
		if e.behavior == nil {
			e.behavior = e.k().t.New(&e.ctx)
		}
		c.Answer(e.k().t, m, nil, nil)
	} else if m.stop {
		if e.k().t.StopMessage == nil {
			e.stopAfterTurn = true
		} else {
			e.handle(&Message{value: e.k().t.StopMessage()})
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
	c := e.k().n.core
	if m.Stale() {
		c.Answer(e.k().t, m, nil, ErrNotHome) // its home handed the shard off since it fired
		return
	}
	if x := m.ext; x != nil && x.timer != nil {
		if !e.ctx.takeTimer(m) {
			return // cancelled or replaced since it was queued
		}
		e.ctx.x().timerKey = x.timer.key
		defer func() { e.ctx.ext.timerKey = "" }()
	}
	if x := m.ext; x != nil && x.firing != nil {
		e.ctx.x().firing, e.ctx.ext.stale = x.firing, x.stale
		defer func() { e.ctx.ext.firing, e.ctx.ext.stale = nil, nil }()
	}
	value, err := m.Value(e.k().t)
	if err != nil {
		// Per message: debug only; counted (reason undecodable) and answered.
		e.k().n.log.Debug("dropped a message the entity type's codec cannot decode", "type", e.k().t.Name, "shard", e.ctx.Shard, "entity", e.ctx.Entity, "err", err)
		err = fmt.Errorf("decode message for %s: %w: %w", e.k().t.Name, ErrUndecodable, err)
		c.metrics.rejectedMsg(e.k().t.Name, true, err)
		c.Answer(e.k().t, m, nil, err)
		return
	}
	if e.behavior == nil {
		e.behavior = e.k().t.New(&e.ctx)
	}
	var span trace.Span
	if m.ext != nil && m.ext.tr != nil {
		span = c.startReceive(e.k().t.Name, m)
		e.ctx.x().span = span
		defer func() { e.ctx.ext.span = nil }()
	}
	reply, err := e.behavior.Receive(&e.ctx, value)
	if span != nil {
		endSpan(span, err)
	}
	if m.IsAsk() {
		c.Answer(e.k().t, m, reply, err)
	}
}

// Failed handles a panic of the behaviour: the message's asker gets an error, and the
// incarnation stops; the entity's next message starts a fresh one.
func (e *entity) Failed(r any, stack []byte) {
	e.k().n.log.Error("entity panicked; its incarnation stops", "type", e.k().t.Name, "shard", e.ctx.Shard, "entity", e.ctx.Entity, "epoch", e.ctx.Epoch.String(), "panic", fmt.Sprint(r), "stack", string(stack))
	if e.current != nil && e.current.IsAsk() {
		e.k().n.core.Answer(e.k().t, e.current, nil, fmt.Errorf("%w: %v", ErrEntityFailed, r))
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
	e.k().n.post(EntityStopped{Type: e.k().t.Name, Shard: e.ctx.Shard, Entity: e.ctx.Entity, Inc: e, Remaining: remaining})
}

// Passivate asks the shard to stop this incarnation (EntityContext.Passivate).
func (e *entity) Passivate() {
	e.k().n.post(Passivate{Type: e.k().t.Name, Shard: e.ctx.Shard, Entity: e.ctx.Entity, Inc: e})
}

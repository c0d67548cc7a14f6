package sim

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/shardmesh/shardmesh/coordinator"
	"github.com/shardmesh/shardmesh/node"
	"github.com/shardmesh/shardmesh/shard"
)

// entityKey names an entity across the cluster.
type entityKey struct {
	typ    string
	entity shard.EntityID
}

// String names an entity for messages.
func (k entityKey) String() string { return fmt.Sprintf("%s/%s", k.typ, k.entity) }

// simEntity is one incarnation of an entity on a node, as the simulation's entity runtime
// runs it: a mailbox handled one message at a time with a small random processing delay,
// as the real mailbox scheduler does (stop after what is queued, a forced stop returning the
// queue). With Options.Durable it is a durable counter (durable.go).
type simEntity struct {
	r           *entityRuntime
	key         entityKey
	shard       shard.ID
	epoch       coordinator.Epoch
	incarnation uint64
	t           *node.EntityType
	queue       []*node.Message
	busy        bool
	closed      bool
	stopAfter   bool

	counter counterState // Options.Durable
}

// entityRuntime plays the entity runtime of one node process.
type entityRuntime struct {
	s    *Sim
	n    *Node
	inc  uint64
	live map[entityKey]*simEntity
}

// incarnations counts entity incarnations across the simulation, to name them.
var incarnations uint64

func newEntityRuntime(s *Sim, n *Node) *entityRuntime {
	return &entityRuntime{s: s, n: n, inc: n.Incarnation, live: map[entityKey]*simEntity{}}
}

// start starts an incarnation (Env.StartEntity).
func (r *entityRuntime) start(t *node.EntityType, ctx node.EntityContext) node.Incarnation {
	key := entityKey{ctx.Type(), ctx.Entity}
	if r.live[key] != nil {
		r.s.fail("%s started %s while an incarnation of it is alive there", r.n.ID, key)
	}
	incarnations++
	e := &simEntity{r: r, key: key, shard: ctx.Shard, epoch: ctx.Epoch, incarnation: incarnations, t: t}
	r.live[key] = e
	r.s.started[key] = true
	return e
}

var errClosed = errors.New("incarnation closed")

// Enqueue queues m for the incarnation's turns (node.Incarnation).
func (e *simEntity) Enqueue(m *node.Message) error {
	if e.closed {
		return errClosed
	}
	e.queue = append(e.queue, m)
	e.r.schedule(e)
	return nil
}

// Close ends the incarnation at once and returns its queue (node.Incarnation).
func (e *simEntity) Close() []*node.Message {
	e.closed = true
	if e.r.live[e.key] == e {
		delete(e.r.live, e.key)
	}
	q := e.queue
	e.queue = nil
	return q
}

func (r *entityRuntime) schedule(e *simEntity) {
	if e.busy || e.closed {
		return
	}
	e.busy = true
	delay := time.Duration(r.s.rng.Int64N(int64(2 * time.Millisecond)))
	inc := r.inc
	r.s.schedule(delay, func() { r.step(e, inc) })
}

// step handles the next message of an entity's mailbox.
func (r *entityRuntime) step(e *simEntity, inc uint64) {
	if !r.n.Alive || r.n.Incarnation != inc || e.closed {
		return
	}
	if !r.n.Running() {
		e.busy = false // not serving (paused, no lease): handled when it serves again
		return
	}
	if len(e.queue) == 0 {
		e.busy = false
		return
	}
	m := e.queue[0]
	e.queue = e.queue[1:]
	switch {
	case m.IsStop():
		r.stopped(e)
		return
	case m.IsStart():
		// A remembered entity started without a message: nothing more to handle.
		r.n.Core.StartTaken(m, r.s.now, true)
	case m.Stale():
		// A firing whose home handed the shard off since: refused, as the member's own
		// runtime refuses it (node entity.handle).
		r.n.Core.Answer(e.t, m, nil, node.ErrNotHome)
	default:
		r.s.checkSingleInstance(r.n, e)
		if r.s.opts.Durable {
			// The counter answers once its state is stored; its next message waits.
			e.counter.handle(e, m, func() { r.next(e, inc) })
			return
		}
		r.s.traffic.handled(m, e.t)
		r.n.Core.Answer(e.t, m, nil, nil)
	}
	r.next(e, inc)
}

// next goes on with the entity's mailbox after a message.
func (r *entityRuntime) next(e *simEntity, inc uint64) {
	e.busy = false
	if !r.n.Alive || r.n.Incarnation != inc || e.closed {
		return
	}
	if len(e.queue) > 0 {
		r.schedule(e)
	}
}

// stopped ends an incarnation on its stop message and reports what it had not handled.
func (r *entityRuntime) stopped(e *simEntity) {
	rest := e.Close()
	r.s.input(r.n, r.inc, node.EntityStopped{Type: e.key.typ, Shard: e.shard, Entity: e.key.entity, Inc: e, Remaining: rest})
}

// resume restarts the mailboxes of a node that serves again.
func (r *entityRuntime) resume() {
	for _, key := range sortedKeys(r.live) {
		if e := r.live[key]; len(e.queue) > 0 {
			r.schedule(e)
		}
	}
}

// The simulation's incarnations take no user behaviour: these answer a context's calls
// (node.Turns) as a behaviour that never makes them would.
func (e *simEntity) Passivate() {}
func (e *simEntity) Stop()      { e.stopAfter = true }
func (e *simEntity) LoadState(context.Context, *node.EntityContext) ([]byte, error) {
	return nil, errors.New("sim: entities keep state through the durable counter")
}
func (e *simEntity) SaveState(context.Context, *node.EntityContext, []byte) error {
	return errors.New("sim: entities keep state through the durable counter")
}

func (e *simEntity) Remind(context.Context, node.ReminderOp) ([]node.Reminder, error) {
	return nil, errors.New("sim: entities register reminders through the durable counter")
}
func (e *simEntity) Timer(node.TimerOp) {}

var _ node.Turns = (*simEntity)(nil)

// checkSingleInstance: when an entity handles a message on node n, no other running node
// holds a live incarnation of it (invariant 1: at most one live instance of an entity).
func (s *Sim) checkSingleInstance(n *Node, e *simEntity) {
	for _, other := range s.nodes[1:] {
		if other == n || !other.Alive || other.entities == nil {
			continue
		}
		if o := other.entities.live[e.key]; o != nil && other.Running() {
			s.fail("%s handles a message on %s (incarnation %d) while %s runs incarnation %d",
				e.key, n.ID, e.incarnation, other.ID, o.incarnation)
		}
	}
}

func sortedKeys(m map[entityKey]*simEntity) []entityKey {
	keys := make([]entityKey, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b entityKey) int {
		if c := strings.Compare(a.typ, b.typ); c != 0 {
			return c
		}
		return strings.Compare(string(a.entity), string(b.entity))
	})
	return keys
}

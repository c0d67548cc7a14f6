package sim

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/shardmesh/shardmesh/engine"
	"github.com/shardmesh/shardmesh/region"
	"github.com/shardmesh/shardmesh/shard"
)

// entityKey names an entity across the cluster.
type entityKey struct {
	typ    string
	entity shard.EntityID
}

// simEntity is one incarnation of an entity on a node: a mailbox handled one item at a time
// with a small random processing delay.
type simEntity struct {
	key         entityKey
	shard       shard.ID
	incarnation uint64
	queue       []item
	busy        bool
}

type item struct {
	env  region.Envelope
	stop bool
}

// entityRuntime plays the entity runtime of one node: it carries out the engine's entity
// operations the way the real mailbox scheduler does (one message at a time, stop messages
// after what is queued, forced stops returning the queue).
type entityRuntime struct {
	s    *Sim
	n    *Node
	live map[entityKey]*simEntity
}

// incarnations counts entity incarnations across the simulation, to name them.
var incarnations uint64

func newEntityRuntime(s *Sim, n *Node) *entityRuntime {
	return &entityRuntime{s: s, n: n, live: map[entityKey]*simEntity{}}
}

func (r *entityRuntime) apply(op engine.EntityOp) {
	key := entityKey{op.Type, op.Entity}
	e := r.live[key]
	switch op.Kind {
	case engine.OpStart:
		if e != nil {
			r.s.fail("%s started %s/%s while an incarnation of it is alive there", r.n.ID, key.typ, key.entity)
			return
		}
		incarnations++
		r.live[key] = &simEntity{key: key, shard: op.Shard, incarnation: incarnations}
	case engine.OpDeliver:
		if e == nil {
			r.s.fail("%s delivered to %s/%s, which was never started", r.n.ID, key.typ, key.entity)
			return
		}
		e.queue = append(e.queue, item{env: op.Envelope})
		r.schedule(e)
	case engine.OpStop:
		if e != nil {
			e.queue = append(e.queue, item{stop: true})
			r.schedule(e)
		}
	case engine.OpForceStop:
		if e != nil {
			r.stopped(e)
		}
	}
}

func (r *entityRuntime) schedule(e *simEntity) {
	if e.busy {
		return
	}
	e.busy = true
	delay := time.Duration(r.s.rng.Int64N(int64(2 * time.Millisecond)))
	inc := r.n.Incarnation
	r.s.schedule(delay, func() { r.step(e, inc) })
}

// step handles the next item of an entity's mailbox.
func (r *entityRuntime) step(e *simEntity, inc uint64) {
	if !r.n.Alive || r.n.Incarnation != inc || r.live[e.key] != e {
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
	it := e.queue[0]
	e.queue = e.queue[1:]
	if it.stop {
		r.stopped(e)
		r.s.process(r.n)
		return
	}
	r.s.checkSingleInstance(r.n, e)
	r.s.traffic.handled(it.env)
	e.busy = false
	if len(e.queue) > 0 {
		r.schedule(e)
	}
}

// stopped ends an incarnation and reports what it had not handled.
func (r *entityRuntime) stopped(e *simEntity) {
	delete(r.live, e.key)
	var unhandled []region.Envelope
	for _, it := range e.queue {
		if !it.stop {
			unhandled = append(unhandled, it.env)
		}
	}
	r.n.E.EntityStopped(r.s.now, e.key.typ, e.shard, e.key.entity, unhandled)
}

// resume restarts the mailboxes of a node that serves again.
func (r *entityRuntime) resume() {
	for _, key := range sortedKeys(r.live) {
		if e := r.live[key]; len(e.queue) > 0 {
			r.schedule(e)
		}
	}
}

func (r *entityRuntime) queued() []region.Envelope {
	var out []region.Envelope
	for _, key := range sortedKeys(r.live) {
		for _, it := range r.live[key].queue {
			if !it.stop {
				out = append(out, it.env)
			}
		}
	}
	return out
}

func (r *entityRuntime) clear() { r.live = map[entityKey]*simEntity{} }

// checkSingleInstance: when an entity handles a message on node n, no other running node
// holds a live incarnation of it (invariant 1: at most one live instance of an entity).
func (s *Sim) checkSingleInstance(n *Node, e *simEntity) {
	for _, other := range s.nodes[1:] {
		if other == n || !other.Alive || other.entities == nil {
			continue
		}
		if o := other.entities.live[e.key]; o != nil && other.Running() {
			s.fail("%s/%s handles a message on %s (incarnation %d) while %s runs incarnation %d",
				e.key.typ, e.key.entity, n.ID, e.incarnation, other.ID, o.incarnation)
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

// String names an entity for messages.
func (k entityKey) String() string { return fmt.Sprintf("%s/%s", k.typ, k.entity) }

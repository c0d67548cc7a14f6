package engine

import (
	"github.com/shardmesh/shardmesh/membership"
)

// Ready is what the engine wants done since the last call to Ready or Drain: messages for
// other members, work for the entity runtime, requests to the store and the lease, and
// what happened.
//
// # What must be durable before what
//
// etcd raft's Ready carries state to persist next to the messages that depend on it, and
// its driver must persist before it sends. This Ready never does: every step that needs the
// disk is a request in it (Store, Leases, a CoordinatorStarted event), and the machines
// hold back whatever depends on that step until the runtime answers it. So no field of a
// Ready depends on the durability of another field of the same Ready, and the runtime may
// carry the fields out in any order and the requests concurrently. What it must guarantee is
// in its answers, and a runtime that answers early breaks these guarantees:
//
//   - StoreRemember: call EntitiesRemembered with a nil error only once the entity (and,
//     with NewShard, its shard) is stored on a write quorum (fsynced on each replica that
//     counts). The shard starts the entity and delivers its first messages only after that
//     answer, so every entity that ever ran is one its shard finds again after a crash, a
//     rebalance or a full-cluster restart. Answer an error otherwise: the shard writes again
//     after shard-failure-backoff, and the messages keep waiting.
//   - StoreLoadEntities, StoreLoadShards: answer from a read quorum (EntitiesLoaded,
//     ShardsLoaded), so a load sees every remember acknowledged before it. A shard that
//     remembers entities holds every message until its EntitiesLoaded.
//   - StoreForget: no answer and no ordering; a forget lost to a crash only starts a
//     passivated entity again.
//   - LeaseAcquire: call LeaseAcquired(ok) only once the lease is held; the shard starts
//     nothing under it before.
//   - ResolverLease (lease-majority): an acquisition is answered with ResolverLeaseResult,
//     held only once the lease is held; the split-brain resolver downs the other side only
//     then. Answer within lease-operation-timeout: the machine takes a later answer for a
//     denial (and asks for a release of a lease it then holds).
//   - An event CoordinatorStarted, with Config.DurableTerms: the coordinator issues no
//     allocation epoch (sends no allocation, so no entity anywhere gets an epoch of it)
//     until SetCoordinatorTerm gives it a term that the runtime read from a read quorum and
//     raised on a write quorum. The epochs fence durable entity state, so a term not stored
//     first could repeat an earlier coordinator's and every save under it would be refused.
//   - With Config.AwaitDirectives, the coordinators act on nothing until SetDirectives gives
//     them the operator's directives read from a read quorum; the runtime stores a change of
//     a directive on a write quorum before it gives the change to any engine.
//   - Before New: the member's incarnation (membership.Member.Incarnation) is stored, so no
//     two processes of a member ever send as the same incarnation.
//
// Nothing in a Ready waits for the last cluster size (membership.Node.ClusterSize) or the
// placement history: the runtime writes them after the fact, off its loop, and a crash
// that loses the latest only makes the next start wait for an older size or show less
// history.
//
// # Order within a Ready
//
//   - Entities in the order given: an entity's OpStart comes before its OpDeliver, its OpStop
//     after every message delivered to it.
//   - Forwards to one member in the order given: Akka's per-sender order of the messages to
//     an entity rests on it. The machines' safety does not rest on the order of any kind of
//     message (the simulation loses, duplicates and reorders them all).
//   - Rejected messages are lost unless the runtime tells their senders.
//
// The field list is defined once, by lists: Empty, Drain and Reset work over it, and
// TestReadyListsEveryField fails when a field is added without it.
type Ready struct {
	Membership   []membership.Envelope
	Coordination []Coordination
	Forwards     []Forward
	Entities     []EntityOp
	Rejected     []Rejected
	Members      []membership.Event
	Events       []TypedEvent
	Store        []StoreOp
	Leases       []LeaseOp
	// ResolverLease are operations on the split-brain resolver's lease (lease-majority).
	ResolverLease []membership.LeaseOp
}

// readyFields is how many fields Ready has.
const readyFields = 10

// lists returns every field of r, each once, in declaration order.
func (r *Ready) lists() [readyFields]list {
	return [readyFields]list{
		field[membership.Envelope]{&r.Membership},
		field[Coordination]{&r.Coordination},
		field[Forward]{&r.Forwards},
		field[EntityOp]{&r.Entities},
		field[Rejected]{&r.Rejected},
		field[membership.Event]{&r.Members},
		field[TypedEvent]{&r.Events},
		field[StoreOp]{&r.Store},
		field[LeaseOp]{&r.Leases},
		field[membership.LeaseOp]{&r.ResolverLease},
	}
}

// list is one field of a Ready.
type list interface {
	len() int
	// appendTo appends the items to dst, the same field of another Ready.
	appendTo(dst list)
	// reset empties the field, keeping its capacity and dropping references to what it held.
	reset()
}

// field is a Ready's field of items of type T.
type field[T any] struct{ s *[]T }

func (f field[T]) len() int { return len(*f.s) }

func (f field[T]) appendTo(dst list) {
	d := dst.(field[T]).s
	if len(*d) == 0 {
		// The common case: hand the items over and take dst's empty buffer in exchange,
		// rather than copying them.
		*d, *f.s = *f.s, (*d)[:0]
		return
	}
	*d = append(*d, *f.s...)
}

func (f field[T]) reset() {
	clear(*f.s)
	*f.s = (*f.s)[:0]
}

// Empty reports whether there is nothing to do.
func (r *Ready) Empty() bool {
	for _, l := range r.lists() {
		if l.len() > 0 {
			return false
		}
	}
	return true
}

// Reset empties r for reuse, dropping references to what it held.
func (r *Ready) Reset() {
	for _, l := range r.lists() {
		l.reset()
	}
}

// Ready returns and clears what the engine wants done.
func (e *Engine) Ready() Ready {
	r := e.out
	e.out = Ready{}
	return r
}

// Drain moves what the engine wants done into dst (appending), leaving the engine empty
// buffers for reuse: a field of dst that is empty trades buffers with the engine's rather
// than copying. The runtime calls it with one reused Ready, so steady traffic allocates no
// output slices and copies no items.
func (e *Engine) Drain(dst *Ready) {
	src, to := e.out.lists(), dst.lists()
	for i, l := range src {
		l.appendTo(to[i])
		l.reset()
	}
}

package node

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"

	"github.com/shardmesh/shardmesh/membership"
)

// pendingAsk waits for one reply on a channel.
type pendingAsk struct {
	id     uint64
	result chan Reply // buffered 1: whoever answers first, never blocks
	once   sync.Once
}

func (a *pendingAsk) ID() uint64 { return a.id }

func (a *pendingAsk) Resolve(r Reply) {
	a.once.Do(func() { a.result <- r })
}

// asks tracks the asks of this member that wait for a reply from another member.
//
// Ask ids start at a random number in every process: replies are addressed to the member's
// peer id, which a restarted member keeps, so a late reply to an ask of the previous
// process would otherwise match a new ask with the same small id and answer it with
// another entity's reply (found by the chaos suite, e2e/chaos: a counter answered a value
// it never had after a kill -9 and restart).
type asks struct {
	next    atomic.Uint64
	mu      sync.Mutex
	pending map[uint64]trackedAsk
}

// trackedAsk is an ask waiting for another member's reply, and the member it went to.
type trackedAsk struct {
	Asker
	to membership.NodeID
}

func newAsks() *asks {
	a := &asks{pending: map[uint64]trackedAsk{}}
	a.next.Store(rand.Uint64())
	return a
}

// NewAskID returns a fresh ask id of this member (never 0: 0 marks a tell on the wire).
func (a *asks) NewAskID() uint64 {
	id := a.next.Add(1)
	if id == 0 {
		id = a.next.Add(1)
	}
	return id
}

func (a *asks) create() *pendingAsk {
	return &pendingAsk{id: a.NewAskID(), result: make(chan Reply, 1)}
}

// track registers p, sent to member to, to be answered by a Reply frame.
func (a *asks) track(p Asker, to membership.NodeID) {
	a.mu.Lock()
	a.pending[p.ID()] = trackedAsk{p, to}
	a.mu.Unlock()
}

// take removes and returns the ask with id.
func (a *asks) take(id uint64) Asker {
	a.mu.Lock()
	defer a.mu.Unlock()
	p := a.pending[id]
	delete(a.pending, id)
	return p.Asker
}

// failTo answers every ask that went to member to with err: the member was downed or
// removed, so no reply will come (and waiting for the caller's deadline is what made a
// counter answer 23 s after its member's removal in a kill -9 failover).
func (a *asks) failTo(to membership.NodeID, err error) {
	var failed []Asker
	a.mu.Lock()
	for id, p := range a.pending {
		if p.to == to {
			failed = append(failed, p.Asker)
			delete(a.pending, id)
		}
	}
	a.mu.Unlock()
	for _, p := range failed {
		p.Resolve(Reply{Err: err})
	}
}

// forget removes an ask that timed out.
func (a *asks) forget(p Asker) {
	a.mu.Lock()
	delete(a.pending, p.ID())
	a.mu.Unlock()
}

// failAll answers every pending ask with err (the member stops).
func (a *asks) failAll(err error) {
	a.mu.Lock()
	pending := a.pending
	a.pending = map[uint64]trackedAsk{}
	a.mu.Unlock()
	for _, p := range pending {
		p.Resolve(Reply{Err: err})
	}
}

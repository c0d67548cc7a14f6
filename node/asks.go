package node

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
)

// pendingAsk waits for one reply.
type pendingAsk struct {
	id     uint64
	result chan askResult // buffered 1: whoever answers first, never blocks
	once   sync.Once
}

type askResult struct {
	value   any
	encoded []byte // a reply from another member, to decode with the type's reply codec
	err     error
}

func (a *pendingAsk) resolve(r askResult) {
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
	pending map[uint64]*pendingAsk
}

func newAsks() *asks {
	a := &asks{pending: map[uint64]*pendingAsk{}}
	a.next.Store(rand.Uint64())
	return a
}

func (a *asks) create() *pendingAsk {
	id := a.next.Add(1)
	if id == 0 { // 0 marks a tell on the wire
		id = a.next.Add(1)
	}
	return &pendingAsk{id: id, result: make(chan askResult, 1)}
}

// track registers p to be answered by a Reply frame.
func (a *asks) track(p *pendingAsk) {
	a.mu.Lock()
	a.pending[p.id] = p
	a.mu.Unlock()
}

// take removes and returns the ask with id.
func (a *asks) take(id uint64) *pendingAsk {
	a.mu.Lock()
	defer a.mu.Unlock()
	p := a.pending[id]
	delete(a.pending, id)
	return p
}

// forget removes an ask that timed out.
func (a *asks) forget(p *pendingAsk) {
	a.mu.Lock()
	delete(a.pending, p.id)
	a.mu.Unlock()
}

// failAll answers every pending ask with err (the member stops).
func (a *asks) failAll(err error) {
	a.mu.Lock()
	pending := a.pending
	a.pending = map[uint64]*pendingAsk{}
	a.mu.Unlock()
	for _, p := range pending {
		p.resolve(askResult{err: err})
	}
}

package remember

import (
	"crypto/rand"
	"encoding/binary"
	"sync"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/shardmesh/shardmesh/wire/pb"
)

// call is a request in flight, waiting for answers matched by request id.
type call interface {
	// deliver hands the call an answer from a replica; called without locks held.
	deliver(from peer.ID, env *pb.ReplicaEnvelope)
	// abort ends the call because the store is closing.
	abort(err error)
}

// calls maps request ids to the calls waiting for their answers.
type calls struct {
	mu     sync.Mutex
	next   uint64
	m      map[uint64]call
	closed bool
}

// newCalls starts request ids at a random point, so that answers to a previous Store on
// the same host (a reopened store) match nothing.
func newCalls() *calls {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return &calls{next: binary.LittleEndian.Uint64(b[:]) >> 1, m: make(map[uint64]call)}
}

// add registers c and returns its request id, or 0 when the store is closing.
func (cs *calls) add(c call) uint64 {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.closed {
		return 0
	}
	cs.next++
	if cs.next == 0 {
		cs.next++
	}
	cs.m[cs.next] = c
	return cs.next
}

// remove forgets id: later answers to it are dropped.
func (cs *calls) remove(id uint64) {
	cs.mu.Lock()
	delete(cs.m, id)
	cs.mu.Unlock()
}

// deliver hands env to the call it answers; it reports false when no call waits for it (a
// late answer).
func (cs *calls) deliver(from peer.ID, env *pb.ReplicaEnvelope) bool {
	cs.mu.Lock()
	c := cs.m[env.RequestId]
	cs.mu.Unlock()
	if c == nil {
		return false
	}
	c.deliver(from, env)
	return true
}

// close aborts every call in flight and refuses new ones.
func (cs *calls) close() {
	cs.mu.Lock()
	cs.closed = true
	all := cs.m
	cs.m = make(map[uint64]call)
	cs.mu.Unlock()
	for _, c := range all {
		c.abort(ErrClosed)
	}
}

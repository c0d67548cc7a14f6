package node

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// maxInflight bounds the messages for the entities of one type inside this member at once:
// sent here (Tell, Ask) or arrived from another member, and not yet enqueued in a mailbox,
// written to the network, or rejected. A sender that would exceed it waits, and so does the
// reader of a stream from another member, which slows that member down through TCP. The
// loop itself never waits, so membership keeps its heartbeats whatever the load.
//
// Messages a region buffers hold their credit, so a type's bound is also never more than its
// region's buffer-size: a burst of messages while shard homes are unknown makes its senders
// wait instead of overflowing the buffer (Akka drops them with a warning; here nothing sent
// is lost).
const maxInflight = 1 << 17

// credits counts the messages of one entity type in flight and wakes waiting senders.
type credits struct {
	n     atomic.Int64
	limit int64
	mu    sync.Mutex
	ch    chan struct{} // closed when credits were freed while someone may wait
}

// newCredits bounds messages in flight by min(bufferSize, maxInflight).
func newCredits(bufferSize int) *credits {
	limit := int64(maxInflight)
	if bufferSize > 0 && int64(bufferSize) < limit {
		limit = int64(bufferSize)
	}
	return &credits{limit: limit, ch: make(chan struct{})}
}

// acquire takes a credit, waiting while the limit is in flight.
func (c *credits) acquire(ctx context.Context, done <-chan struct{}) error {
	for {
		if c.n.Add(1) <= c.limit {
			return nil
		}
		c.n.Add(-1)
		c.mu.Lock()
		ch := c.ch
		c.mu.Unlock()
		if c.n.Load() < c.limit {
			continue
		}
		select {
		case <-ch:
		case <-done:
			return ErrStopped
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond): // a wake-up is cheap insurance, not the mechanism
		}
	}
}

// tryAcquire takes a credit if one is free.
func (c *credits) tryAcquire() bool {
	if c.n.Add(1) <= c.limit {
		return true
	}
	c.n.Add(-1)
	return false
}

// readmit takes a credit without waiting, for a message that comes back into the engine
// (one a stopped entity had not handled; the region takes those back beyond its bound). A
// message without credits (nil: the simulation's) takes none.
func (c *credits) readmit() {
	if c != nil {
		c.n.Add(1)
	}
}

// release returns a credit; crossing half the bound wakes the waiting senders.
func (c *credits) release() { c.releaseN(1) }

// releaseN returns k credits.
func (c *credits) releaseN(k int64) {
	if c == nil || k == 0 {
		return
	}
	if left := c.n.Add(-k); left <= c.limit/2 && left+k > c.limit/2 {
		c.mu.Lock()
		close(c.ch)
		c.ch = make(chan struct{})
		c.mu.Unlock()
	}
}

// returnedCredits gathers the credits of the messages a Flush hands to entities, to return
// them at its end with one atomic operation per type rather than one per message.
type returnedCredits struct {
	by []returned
}

type returned struct {
	c *credits
	n int64
}

// add notes one credit of c returned.
func (r *returnedCredits) add(c *credits) {
	if c == nil {
		return
	}
	if n := len(r.by); n > 0 && r.by[n-1].c == c {
		r.by[n-1].n++
		return
	}
	for i := range r.by {
		if r.by[i].c == c {
			r.by[i].n++
			return
		}
	}
	r.by = append(r.by, returned{c, 1})
}

// release returns the credits noted since the last call.
func (r *returnedCredits) release() {
	for _, x := range r.by {
		x.c.releaseN(x.n)
	}
	clear(r.by)
	r.by = r.by[:0]
}

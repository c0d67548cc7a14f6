package node

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// maxInflight bounds the messages for entities inside this member at once: sent here (Tell,
// Ask) or arrived from another member, and not yet enqueued in a mailbox, written to the
// network, or rejected. A sender that would exceed it waits, and so does the reader of a
// stream from another member, which slows that member down through TCP. The loop itself
// never waits, so membership keeps its heartbeats whatever the load. Messages buffered by a
// region hold their credit; the region's buffer-size is well below this bound.
const maxInflight = 1 << 17

// credits counts messages in flight and wakes waiting senders.
type credits struct {
	n  atomic.Int64
	mu sync.Mutex
	ch chan struct{} // closed when credits were freed while someone may wait
}

func newCredits() *credits { return &credits{ch: make(chan struct{})} }

// acquire takes a credit, waiting while maxInflight are in flight.
func (c *credits) acquire(ctx context.Context, done <-chan struct{}) error {
	for {
		if c.n.Add(1) <= maxInflight {
			return nil
		}
		c.n.Add(-1)
		c.mu.Lock()
		ch := c.ch
		c.mu.Unlock()
		if c.n.Load() < maxInflight {
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

// readmit takes credits without waiting, for messages that come back into the engine (what a
// stopped entity had not handled).
func (c *credits) readmit(k int) { c.n.Add(int64(k)) }

// release returns a credit; crossing half the bound wakes the waiting senders.
func (c *credits) release() {
	if c.n.Add(-1) == maxInflight/2 {
		c.mu.Lock()
		close(c.ch)
		c.ch = make(chan struct{})
		c.mu.Unlock()
	}
}

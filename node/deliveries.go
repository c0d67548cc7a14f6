package node

import "sync"

// deliveries is the loop's queue of messages for entities (Tell, Ask, and those forwarded
// here by other members): any goroutine appends, the loop takes everything queued at once.
// A message costs its sender a short critical section and no allocation (the inbox channel
// boxed each Deliver in an Input, and cost a channel operation per message); a goroutine
// wakes the loop only when it finds the queue empty.
//
// It needs no bound of its own: every message in it holds one of its type's credits.
type deliveries struct {
	mu   sync.Mutex
	q    []Deliver
	wake chan struct{} // buffered 1: the queue was empty and is not

	// The loop's: the other buffer, and how many takes in a row used little of a large one.
	spare    []Deliver
	underuse int
}

func newDeliveries() *deliveries { return &deliveries{wake: make(chan struct{}, 1)} }

// push appends in.
func (d *deliveries) push(in Deliver) {
	d.mu.Lock()
	empty := len(d.q) == 0
	d.q = append(d.q, in)
	d.mu.Unlock()
	if empty {
		d.signal()
	}
}

// pushAll appends ins, in order.
func (d *deliveries) pushAll(ins []Deliver) {
	if len(ins) == 0 {
		return
	}
	d.mu.Lock()
	empty := len(d.q) == 0
	d.q = append(d.q, ins...)
	d.mu.Unlock()
	if empty {
		d.signal()
	}
}

func (d *deliveries) signal() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// take returns what is queued, in order; the loop owns it until it hands it back with
// giveBack. Only the loop calls take and giveBack.
func (d *deliveries) take() []Deliver {
	d.mu.Lock()
	q := d.q
	d.q = d.spare
	d.mu.Unlock()
	d.spare = nil
	return q
}

// giveBack takes back a slice that take returned, emptied, as the next spare; a large one
// mostly unused for a while is let go, so that a burst does not pin its memory for good.
func (d *deliveries) giveBack(q []Deliver) {
	if cap(q) > keptDeliveries && len(q) < cap(q)/8 {
		if d.underuse++; d.underuse > 16 {
			d.underuse = 0
			return
		}
	} else {
		d.underuse = 0
	}
	clear(q)
	d.spare = q[:0]
}

// idle lets go of a large spare once the loop has ticked idle for a while: without takes,
// giveBack never sees that a burst is over.
func (d *deliveries) idle() {
	if cap(d.spare) > keptDeliveries {
		if d.underuse++; d.underuse > 16 {
			d.underuse, d.spare = 0, nil
		}
	}
}

// keptDeliveries is the capacity a spare keeps however it was used.
const keptDeliveries = 4096

package mailbox

import "math"

// maxQueued is the most messages one mailbox can hold (its counters are 32-bit).
const maxQueued = math.MaxUint32

// fifo is a mailbox's message queue. A message that finds the fifo empty goes into an
// inline slot, so a mailbox that gets its messages one at a time (the common case for a
// million entities) never touches the Group's free list; messages that queue up behind it go
// into a linked list of segments taken from and given back to the Group. An empty fifo keeps
// at most one segment, which release gives back. The mailbox's mutex guards it.
type fifo[T any] struct {
	head, tail *segment[T]
	hi, ti     uint32 // next slot to read in head, next slot to write in tail
	n          uint32 // messages queued, the inline one included
	inline     bool   // one holds the oldest message
	one        T
}

func (q *fifo[T]) push(g *Group[T], msg T) {
	if q.n == maxQueued {
		panic("mailbox: more than 2^32-1 messages queued in one mailbox")
	}
	q.n++
	if q.n == 1 {
		q.one, q.inline = msg, true
		return
	}
	switch {
	case q.tail == nil:
		s := g.getSegment()
		q.head, q.tail, q.hi, q.ti = s, s, 0, 0
	case q.ti == g.segLen:
		s := g.getSegment()
		q.tail.next, q.tail, q.ti = s, s, 0
	}
	q.tail.slots[q.ti] = msg
	q.ti++
}

// pop removes and returns the oldest message; the fifo must not be empty.
func (q *fifo[T]) pop(g *Group[T]) T {
	var zero T
	q.n--
	if q.inline {
		msg := q.one
		q.one, q.inline = zero, false
		return msg
	}
	s := q.head
	msg := s.slots[q.hi]
	s.slots[q.hi] = zero
	q.hi++
	switch {
	case q.n == 0:
		q.tail, q.hi, q.ti = s, 0, 0 // keep one segment while the mailbox is busy
	case q.hi == g.segLen:
		q.head, q.hi = s.next, 0
		g.putSegment(s)
	}
	return msg
}

// release gives the segment of an empty fifo back to the Group.
func (q *fifo[T]) release(g *Group[T]) {
	if q.head != nil {
		g.putSegment(q.head)
		q.head, q.tail = nil, nil
	}
}

// drain removes every message and returns them oldest first (nil if there were none), and
// gives all segments back.
func (q *fifo[T]) drain(g *Group[T]) []T {
	var out []T
	if q.n > 0 {
		out = make([]T, 0, q.n)
	}
	for q.n > 0 {
		out = append(out, q.pop(g))
	}
	q.release(g)
	return out
}

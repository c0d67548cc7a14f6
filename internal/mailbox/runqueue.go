package mailbox

// runner is what the run queue holds: a mailbox whose turn has come. run handles up to budget
// messages and reports whether the mailbox still has work, in which case the caller puts it
// back on the run queue, or else returns the callback of a Close that waited for the turn
// to end. abandon hands back a turn that a runtime.Goexit cut short.
type runner interface {
	run(budget int) (more bool, done func())
	abandon()
}

// minRunQueue is the capacity the run queue starts with and shrinks back to once empty.
const minRunQueue = 64

// maxIdleRunQueue is the largest capacity an empty run queue keeps: past it, a burst that
// scheduled very many mailboxes at once gives its memory back when it is over.
const maxIdleRunQueue = 4096

// runQueue is a FIFO ring of runners that grows as needed; its capacity is always a power of
// two. The Pool's mutex guards it.
type runQueue struct {
	ring []runner
	head int
	n    int
}

func (q *runQueue) push(r runner) {
	if q.n == len(q.ring) {
		q.grow()
	}
	q.ring[(q.head+q.n)&(len(q.ring)-1)] = r
	q.n++
}

func (q *runQueue) pop() runner {
	r := q.ring[q.head]
	q.ring[q.head] = nil
	q.head = (q.head + 1) & (len(q.ring) - 1)
	q.n--
	if q.n == 0 {
		q.head = 0
		if len(q.ring) > maxIdleRunQueue {
			q.ring = make([]runner, minRunQueue)
		}
	}
	return r
}

func (q *runQueue) grow() {
	size := 2 * len(q.ring)
	if size == 0 {
		size = minRunQueue
	}
	ring := make([]runner, size)
	for i := range q.n {
		ring[i] = q.ring[(q.head+i)&(len(q.ring)-1)]
	}
	q.ring, q.head = ring, 0
}

// clear forgets every queued runner.
func (q *runQueue) clear() {
	*q = runQueue{}
}

package mailbox

import (
	"context"
	"runtime/debug"
	"sync"
	"sync/atomic"
)

// Pool is a fixed set of worker goroutines and the run queue they take mailboxes from. One
// Pool serves any number of Groups (entity types) and mailboxes.
type Pool struct {
	throughput int
	onPanic    func(r any, stack []byte)

	stopped atomic.Bool   // set by Close; read without the lock by Enqueue
	exited  chan struct{} // closed when the last worker has returned

	mu      sync.Mutex
	wake    sync.Cond // signalled, under mu, when a sleeping worker has work
	queue   runQueue
	asleep  int // workers waiting on wake that no Signal has been spent on yet
	live    int // workers not yet returned
	workers int // the configured number of workers
	blocked int // workers inside a handler's Block … Unblock (waiting on I/O)
}

// maxSpares bounds the workers started in place of blocked ones.
const maxSpares = 256

// Block tells the pool that the calling handler is about to wait (a store round, a remote
// call, a write) without using its CPU: while it waits, another worker takes its place, as
// the Go runtime hands a processor on around a system call, so that blocking handlers do
// not starve the others (with 2 × GOMAXPROCS workers, four entities waiting for an fsync
// used to stop every entity of the member). The spare starts only when work waits and no
// worker is free to take it — now or when the work comes — so a wait that turns out short
// costs two locks. Call Unblock when the wait is over; a spare returns when it next finds
// no work.
func (p *Pool) Block() {
	p.mu.Lock()
	p.blocked++
	p.spareIfNeeded()
	p.mu.Unlock()
}

// spareIfNeeded starts a spare worker when a mailbox waits on the run queue, no worker is
// asleep to take it, and fewer workers live than the configured ones plus those blocked;
// p.mu is held.
func (p *Pool) spareIfNeeded() {
	if p.queue.n > 0 && p.asleep == 0 && !p.stopped.Load() && p.live < p.workers+min(p.blocked, maxSpares) {
		p.live++
		go p.work()
	}
}

// Unblock ends what Block began.
func (p *Pool) Unblock() {
	p.mu.Lock()
	p.blocked--
	p.mu.Unlock()
}

// NewPool validates cfg and starts its workers.
func NewPool(cfg Config) (*Pool, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	p := &Pool{
		throughput: cfg.Throughput,
		onPanic:    cfg.OnPanic,
		exited:     make(chan struct{}),
		live:       cfg.Workers,
		workers:    cfg.Workers,
	}
	p.wake.L = &p.mu
	for range cfg.Workers {
		go p.work()
	}
	return p, nil
}

// Close stops the pool: workers finish the turn they are in (at most Throughput handler
// calls each) and return, mailboxes still waiting in the run queue are not run, and later
// Enqueues fail with ErrStopped. Messages left in mailboxes stay there; Mailbox.Close returns
// them. Close waits until every worker has returned or ctx is done, whichever comes first,
// and then returns ctx's error if workers were still running. It may be called again, e.g.
// to wait once more.
func (p *Pool) Close(ctx context.Context) error {
	p.mu.Lock()
	if !p.stopped.Load() {
		p.stopped.Store(true)
		p.queue.clear()
		p.asleep = 0
		p.wake.Broadcast()
	}
	p.mu.Unlock()
	select {
	case <-p.exited:
		return nil
	case <-ctx.Done():
		select {
		case <-p.exited:
			return nil
		default:
			return ctx.Err()
		}
	}
}

// schedule puts r, whose mailbox has just become runnable, at the tail of the run queue.
func (p *Pool) schedule(r runner) {
	p.mu.Lock()
	if !p.stopped.Load() {
		p.queue.push(r)
		if p.asleep > 0 {
			p.asleep--
			p.wake.Signal()
		} else if p.blocked > 0 {
			p.spareIfNeeded()
		}
	}
	p.mu.Unlock()
}

// Batch gathers mailboxes made runnable by EnqueueTo, for Schedule to put on their Pool's
// run queue with one lock (and to wake as many sleeping workers as they need) rather than
// one lock per mailbox. A Batch belongs to one goroutine; its zero value is ready to use.
type Batch struct {
	pool    *Pool
	runners []runner
}

func (b *Batch) add(p *Pool, r runner) {
	if b.pool != p {
		b.Schedule() // mailboxes of another pool: those gathered so far go first
		b.pool = p
	}
	b.runners = append(b.runners, r)
}

// Schedule puts the gathered mailboxes at the tail of the run queue, in the order they
// became runnable.
func (b *Batch) Schedule() {
	if len(b.runners) == 0 {
		return
	}
	p := b.pool
	p.mu.Lock()
	if !p.stopped.Load() {
		for _, r := range b.runners {
			p.queue.push(r)
		}
		for wake := min(p.asleep, len(b.runners)); wake > 0; wake-- {
			p.asleep--
			p.wake.Signal()
		}
		if p.blocked > 0 {
			p.spareIfNeeded()
		}
	}
	p.mu.Unlock()
	clear(b.runners)
	b.runners = b.runners[:0]
}

// work is a worker: it takes the mailbox at the head of the run queue, runs its turn and, if
// the mailbox has work left, puts it back at the tail, in the same critical section as it
// takes the next one.
func (p *Pool) work() {
	var cur runner // the mailbox whose turn this worker is in
	returned := false
	defer func() {
		if !returned {
			// A handler, Failed or a done callback called runtime.Goexit, which cannot be
			// stopped: hand back the turn it cut short, if any, and put a new worker in
			// place of this one.
			if cur != nil {
				cur.abandon()
			}
			go p.work()
		}
	}()
	p.mu.Lock()
	for {
		if p.queue.n == 0 && !p.stopped.Load() && p.live > p.workers+p.blocked {
			p.live-- // a spare whose blocked worker is back: return rather than sleep
			p.mu.Unlock()
			returned = true
			return
		}
		for p.queue.n == 0 && !p.stopped.Load() {
			p.asleep++
			p.wake.Wait()
		}
		if p.stopped.Load() {
			p.live--
			if p.live == 0 {
				close(p.exited)
			}
			p.mu.Unlock()
			returned = true
			return
		}
		cur = p.queue.pop()
		p.mu.Unlock()
		more, done := cur.run(p.throughput)
		r := cur
		cur = nil
		if done != nil {
			p.protect(done)
		}
		p.mu.Lock()
		if more && !p.stopped.Load() {
			p.queue.push(r)
		}
	}
}

// protect calls f, a callback of the user's, on a worker, reporting a panic in it (or a
// Goexit, as ErrGoexit) to OnPanic.
func (p *Pool) protect(f func()) {
	ok := false
	defer func() {
		if !ok {
			r := recover()
			if r == nil {
				r = ErrGoexit
			}
			p.onPanic(r, debug.Stack())
		}
	}()
	f()
	ok = true
}

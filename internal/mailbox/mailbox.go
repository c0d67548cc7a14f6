package mailbox

import (
	"runtime/debug"
	"sync"
)

// Handler handles one entity's messages. Its methods are called on the entity's turn: never
// two at once for one mailbox, each after the previous one returned, on one of the Pool's
// workers.
type Handler[T any] interface {
	// Receive handles one message.
	Receive(msg T)
	// Failed is told that Receive, or a function given to Do or DoFirst, panicked (with the
	// panic value and the stack) or called runtime.Goexit (r is ErrGoexit). It decides what
	// the failure means: to restart in place it resets the entity and returns, and the
	// mailbox goes on with the next message; to stop it calls Close and keeps what Close
	// returns. A panic in Failed goes to Config.OnPanic.
	Failed(r any, stack []byte)
}

// Mailbox state bits, guarded by Mailbox.mu.
const (
	// scheduled: the mailbox's turn is in the run queue or being run, or the Pool was
	// closed while it was. Whoever sets it puts the mailbox on the run queue; only a worker
	// clears it, at the end of a turn.
	scheduled uint32 = 1 << iota
	// running: a worker is in the mailbox's turn.
	running
	// closed: Close was called; nothing is accepted or started any more.
	closed
)

// Mailbox is one entity's FIFO of messages of type T and its place in the Pool's schedule.
// Embed it in the runtime's entity value; the zero value is ready for Init. A Mailbox must
// not be copied after Init, and serves one incarnation of an entity: once closed it stays
// closed. It takes 80 bytes plus the size of one T (96 for T = any), and an idle one holds
// nothing else.
type Mailbox[T any] struct {
	mu    sync.Mutex
	state uint32
	q     fifo[T]
	group *Group[T]
	h     Handler[T]
	sys   *system // nil until Do, DoFirst or a deferred Close callback needs it
}

// system holds what a mailbox rarely needs, so that an idle mailbox does not pay for it.
type system struct {
	first []func()   // DoFirst functions, in call order
	after []deferred // Do functions, in call order
	done  func()     // the callback of a Close made during a turn
}

// deferred is a Do function and the number of messages that must be handled before it.
type deferred struct {
	f     func()
	ahead uint32
}

// Init binds m to its Group and Handler. It must be called once, before m is used.
func (m *Mailbox[T]) Init(g *Group[T], h Handler[T]) {
	if m.group != nil {
		panic("mailbox: Init called twice on one Mailbox")
	}
	if g == nil || h == nil {
		panic("mailbox: Init with a nil Group or Handler")
	}
	m.group, m.h = g, h
}

// Enqueue appends msg to the mailbox and schedules the entity if it was idle. It fails, and
// msg is not taken, with ErrClosed after Close, ErrFull when the Group's Capacity is reached
// and ErrStopped after the Pool was closed. Enqueue is safe to call from any goroutine,
// including the entity's own handler.
func (m *Mailbox[T]) Enqueue(msg T) error {
	if err := m.lockOpen(); err != nil {
		return err
	}
	if c := m.group.capacity; c != 0 && m.q.n >= c {
		m.mu.Unlock()
		return ErrFull
	}
	m.q.push(m.group, msg)
	m.activate()
	return nil
}

// EnqueueTo is Enqueue for a goroutine that enqueues many messages at once: when the
// mailbox becomes runnable, it joins b instead of the run queue, and b.Schedule puts every
// mailbox it gathered on the run queue in one go. Until then the messages wait.
func (m *Mailbox[T]) EnqueueTo(b *Batch, msg T) error {
	if err := m.lockOpen(); err != nil {
		return err
	}
	if c := m.group.capacity; c != 0 && m.q.n >= c {
		m.mu.Unlock()
		return ErrFull
	}
	m.q.push(m.group, msg)
	idle := m.state&scheduled == 0
	m.state |= scheduled
	m.mu.Unlock()
	if idle {
		b.add(m.group.pool, m)
	}
	return nil
}

// Do runs f on the entity's turn after every message accepted before it, and before any
// accepted after it: a stop signal that lets queued messages through first. It is not
// bounded by Capacity. If the mailbox is closed before f's turn comes, f never runs.
func (m *Mailbox[T]) Do(f func()) error {
	return m.addSystem(f, false)
}

// DoFirst runs f on the entity's next turn, before any message not yet started (after the
// one being handled, if any, and after earlier DoFirst functions): a signal that overtakes
// the queue. It is not bounded by Capacity. If the mailbox is closed before f's turn comes,
// f never runs.
func (m *Mailbox[T]) DoFirst(f func()) error {
	return m.addSystem(f, true)
}

func (m *Mailbox[T]) addSystem(f func(), first bool) error {
	if err := m.lockOpen(); err != nil {
		return err
	}
	s := m.system()
	if first {
		s.first = append(s.first, f)
	} else {
		s.after = append(s.after, deferred{f: f, ahead: m.q.n})
	}
	m.activate()
	return nil
}

// lockOpen locks m.mu if m accepts work, and otherwise says why not.
func (m *Mailbox[T]) lockOpen() error {
	if m.group == nil {
		panic("mailbox: used before Init")
	}
	if m.group.pool.stopped.Load() {
		return ErrStopped
	}
	m.mu.Lock()
	if m.state&closed != 0 {
		m.mu.Unlock()
		return ErrClosed
	}
	return nil
}

// activate, called with m.mu held after adding work, unlocks m.mu and puts m on the run
// queue if it was idle.
func (m *Mailbox[T]) activate() {
	idle := m.state&scheduled == 0
	m.state |= scheduled
	m.mu.Unlock()
	if idle {
		m.group.pool.schedule(m)
	}
}

// Close closes the mailbox and returns the messages that no handler call has started for,
// oldest first: they were accepted but will never be handled, and are the caller's again.
// Later Enqueue, Do and DoFirst calls fail with ErrClosed; functions given to Do and DoFirst
// that have not started are dropped.
//
// Close does not wait for a handler call in progress. done, if not nil, is called once no
// handler of this mailbox runs any more: at once by Close if none is running, otherwise by
// the worker right after the running call returns. A call from inside the entity's own
// handler (a graceful stop) therefore gets done after that handler returns. Close may be
// called from any goroutine, more than once; later calls return nil.
func (m *Mailbox[T]) Close(done func()) []T {
	m.mu.Lock()
	var rest []T
	if m.state&closed == 0 {
		m.state |= closed
		rest = m.q.drain(m.group)
		if m.sys != nil {
			m.sys.first, m.sys.after = nil, nil
		}
	}
	if done != nil && m.state&running != 0 {
		s := m.system()
		if prev := s.done; prev != nil {
			s.done = func() { prev(); done() }
		} else {
			s.done = done
		}
		done = nil
	}
	m.mu.Unlock()
	if done != nil {
		done()
	}
	return rest
}

// Len returns how many messages are queued, not counting one being handled nor Do and
// DoFirst functions.
func (m *Mailbox[T]) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return int(m.q.n)
}

// system returns m.sys, creating it if needed; m.mu must be held.
func (m *Mailbox[T]) system() *system {
	if m.sys == nil {
		m.sys = &system{}
	}
	return m.sys
}

// hasWork reports whether something is left to run; m.mu must be held. A closed mailbox has
// none: Close took it all.
func (m *Mailbox[T]) hasWork() bool {
	return m.q.n > 0 || (m.sys != nil && len(m.sys.first)+len(m.sys.after) > 0)
}

// run is one turn of the mailbox on a worker: up to budget handler calls. It returns more,
// still holding the scheduled bit, if work is left and the worker must put m back on the run
// queue; otherwise the turn has ended, and done is the callback of a Close that waited for
// it, for the worker to call.
func (m *Mailbox[T]) run(budget int) (more bool, done func()) {
	m.mu.Lock()
	m.state |= running
	for range budget {
		if !m.hasWork() {
			return false, m.endTurn()
		}
		msg, f := m.take()
		m.mu.Unlock()
		m.call(msg, f)
		m.mu.Lock()
	}
	if !m.hasWork() {
		return false, m.endTurn()
	}
	m.state &^= running
	m.mu.Unlock()
	return true, nil
}

// abandon ends the turn that a runtime.Goexit in Receive, Failed or a Do function cut short:
// m goes back on the run queue if it has work left, or becomes idle.
func (m *Mailbox[T]) abandon() {
	more, done := m.run(0)
	if more {
		m.group.pool.schedule(m)
	}
	if done != nil {
		m.group.pool.protect(done)
	}
}

// take removes what runs next: a DoFirst function, a Do function whose messages ahead have
// all been taken, or else the oldest message. m.mu must be held and m must have work.
func (m *Mailbox[T]) take() (msg T, f func()) {
	if s := m.sys; s != nil {
		switch {
		case len(s.first) > 0:
			f, s.first[0], s.first = s.first[0], nil, s.first[1:]
			return msg, f
		case len(s.after) > 0 && s.after[0].ahead == 0:
			f, s.after[0], s.after = s.after[0].f, deferred{}, s.after[1:]
			return msg, f
		}
		for i := range s.after {
			s.after[i].ahead--
		}
	}
	return m.q.pop(m.group), nil
}

// endTurn makes m idle (or leaves it closed), unlocks m.mu and returns the callback of a
// Close that waited for the turn to end; m must have no work.
func (m *Mailbox[T]) endTurn() (done func()) {
	m.state &^= scheduled | running
	m.q.release(m.group)
	if m.sys != nil {
		done = m.sys.done
		m.sys = nil // no work left, so nothing else in it: an idle mailbox keeps no system
	}
	m.mu.Unlock()
	return done
}

// call runs one handler call: f if not nil, else Receive(msg). A panic or a Goexit in it is
// reported to Failed. (A Goexit then goes on ending the worker, which hands the turn back
// with abandon and starts another worker.)
func (m *Mailbox[T]) call(msg T, f func()) {
	ok := false
	defer func() {
		if !ok {
			r := recover()
			if r == nil {
				r = ErrGoexit
			}
			stack := debug.Stack()
			m.group.pool.protect(func() { m.h.Failed(r, stack) })
		}
	}()
	if f != nil {
		f()
	} else {
		m.h.Receive(msg)
	}
	ok = true
}

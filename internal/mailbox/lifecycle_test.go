package mailbox

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
)

// TestCloseReturnsExactlyTheUnhandled closes a mailbox from outside while producers keep
// enqueueing and the handler keeps handling: every accepted message must be either handled
// or returned by Close, never both, each producer's returned messages must follow its handled
// ones in order, and nothing may be handled once Close's done callback has run.
func TestCloseReturnsExactlyTheUnhandled(t *testing.T) {
	const producers, perProd = 4, 3000
	p := newPool(t, Config{Workers: 4, Throughput: 3})
	g := newGroup[[2]int](t, p, GroupConfig{SegmentSize: 4})
	for round, closeAfter := range []int{0, 1, 50, 999, 5000} {
		t.Run(fmt.Sprint("close after ", closeAfter), func(t *testing.T) {
			var (
				m       Mailbox[[2]int]
				handled [producers][]int // touched only by the handler until done
				count   int
				doneRan atomic.Bool
				reached = make(chan struct{})
			)
			m.Init(g, funcs[[2]int]{t: t, receive: func(msg [2]int) {
				if doneRan.Load() {
					t.Errorf("round %d: message %v handled after Close's done callback", round, msg)
				}
				handled[msg[0]] = append(handled[msg[0]], msg[1])
				count++
				if count == closeAfter {
					close(reached)
				}
			}})
			if closeAfter == 0 {
				close(reached)
			}
			var accepted [producers][]int
			var wg sync.WaitGroup
			for prod := range producers {
				wg.Go(func() {
					for seq := range perProd {
						err := m.Enqueue([2]int{prod, seq})
						if errors.Is(err, ErrClosed) {
							return
						}
						if err != nil {
							t.Errorf("Enqueue: %v", err)
							return
						}
						accepted[prod] = append(accepted[prod], seq)
					}
				})
			}
			<-reached
			finished := make(chan struct{})
			rest := m.Close(func() {
				doneRan.Store(true)
				close(finished)
			})
			<-finished
			wg.Wait()
			var returned [producers][]int
			for _, msg := range rest {
				returned[msg[0]] = append(returned[msg[0]], msg[1])
			}
			for prod := range producers {
				got := append(slices.Clone(handled[prod]), returned[prod]...)
				if !slices.Equal(got, accepted[prod]) {
					t.Errorf("producer %d: handled %d + returned %d messages do not make the %d accepted, in order",
						prod, len(handled[prod]), len(returned[prod]), len(accepted[prod]))
				}
			}
			if count < closeAfter {
				t.Errorf("handled %d messages before Close, want ≥ %d", count, closeAfter)
			}
		})
	}
}

// TestStopAfterQueuedMessages is a graceful stop: a Do signal queued behind messages lets
// them through, closes the mailbox on the entity's turn and gets what came after it.
func TestStopAfterQueuedMessages(t *testing.T) {
	p := newPool(t, Config{Workers: 2, Throughput: 4})
	g := newGroup[int](t, p, GroupConfig{})
	var (
		m          Mailbox[int]
		got        []int
		stopReturn atomic.Bool
		rest       = make(chan []int, 1)
		done       = make(chan bool, 1)
	)
	gt := newGate()
	m.Init(g, funcs[int]{t: t, receive: func(v int) {
		if v == 0 {
			gt.wait()
		}
		got = append(got, v)
	}})
	mustEnqueue(t, &m, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9)
	<-gt.reached
	if err := m.Do(func() {
		rest <- m.Close(func() { done <- stopReturn.Load() })
		stopReturn.Store(true)
	}); err != nil {
		t.Fatal(err)
	}
	mustEnqueue(t, &m, 10, 11, 12)
	close(gt.open)
	if r := <-rest; !slices.Equal(r, []int{10, 11, 12}) {
		t.Errorf("Close in the stop signal returned %v, want [10 11 12]", r)
	}
	if afterReturn := <-done; !afterReturn {
		t.Error("done of a Close made in a handler ran before that handler returned")
	}
	if want := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}; !slices.Equal(got, want) {
		t.Errorf("handled %v, want %v", got, want)
	}
	if err := m.Enqueue(13); !errors.Is(err, ErrClosed) {
		t.Errorf("Enqueue after Close = %v, want ErrClosed", err)
	}
}

// TestDoFirstOvertakesQueue checks the order of DoFirst, Do and messages.
func TestDoFirstOvertakesQueue(t *testing.T) {
	p := newPool(t, Config{Workers: 2, Throughput: 2})
	g := newGroup[string](t, p, GroupConfig{})
	var (
		m   Mailbox[string]
		got []string
		end = make(chan struct{})
	)
	gt := newGate()
	m.Init(g, funcs[string]{t: t, receive: func(v string) {
		if v == "m0" {
			gt.wait()
		}
		got = append(got, v)
	}})
	record := func(s string) func() { return func() { got = append(got, s) } }
	mustEnqueue(t, &m, "m0", "m1", "m2")
	<-gt.reached
	for _, err := range []error{
		m.Do(record("after-m2")),
		m.DoFirst(record("first-a")),
		m.Enqueue("m3"),
		m.DoFirst(record("first-b")),
		m.Do(record("after-m3")),
		m.Do(func() { close(end) }),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	close(gt.open)
	<-end
	want := []string{"m0", "first-a", "first-b", "m1", "m2", "after-m2", "m3", "after-m3"}
	if !slices.Equal(got, want) {
		t.Errorf("ran %v, want %v", got, want)
	}
}

// TestForcedStop closes a mailbox whose handler is stuck: Close returns the queue at once,
// the stop signal never runs, and done waits for the stuck call to return.
func TestForcedStop(t *testing.T) {
	p := newPool(t, Config{Workers: 2})
	g := newGroup[int](t, p, GroupConfig{})
	var (
		m        Mailbox[int]
		handled  atomic.Int32
		returned atomic.Bool
		done     = make(chan bool, 1)
	)
	gt := newGate()
	m.Init(g, funcs[int]{t: t, receive: func(v int) {
		handled.Add(1)
		if v == 0 {
			gt.wait()
			returned.Store(true)
		}
	}})
	mustEnqueue(t, &m, 0, 1, 2)
	<-gt.reached
	if err := m.Do(func() { t.Error("stop signal ran after a forced stop") }); err != nil {
		t.Fatal(err)
	}
	mustEnqueue(t, &m, 3)
	rest := m.Close(func() { done <- returned.Load() })
	if !slices.Equal(rest, []int{1, 2, 3}) {
		t.Errorf("forced Close returned %v, want [1 2 3]", rest)
	}
	select {
	case <-done:
		t.Fatal("done ran while the handler was still running")
	default:
	}
	if err := m.Enqueue(4); !errors.Is(err, ErrClosed) {
		t.Errorf("Enqueue after Close = %v, want ErrClosed", err)
	}
	if err := m.Do(func() {}); !errors.Is(err, ErrClosed) {
		t.Errorf("Do after Close = %v, want ErrClosed", err)
	}
	if err := m.DoFirst(func() {}); !errors.Is(err, ErrClosed) {
		t.Errorf("DoFirst after Close = %v, want ErrClosed", err)
	}
	close(gt.open)
	if afterReturn := <-done; !afterReturn {
		t.Error("done ran before the stuck handler returned")
	}
	if n := handled.Load(); n != 1 {
		t.Errorf("handled %d messages, want only the stuck one", n)
	}
}

// TestCloseIdleAndTwice: closing an idle mailbox calls done at once; a second Close returns
// nothing and still calls its done.
func TestCloseIdleAndTwice(t *testing.T) {
	p := newPool(t, Config{Workers: 1})
	g := newGroup[int](t, p, GroupConfig{})
	var m Mailbox[int]
	m.Init(g, funcs[int]{t: t, receive: func(int) {}})
	calls := 0
	if rest := m.Close(func() { calls++ }); rest != nil {
		t.Errorf("Close of an empty mailbox returned %v", rest)
	}
	if rest := m.Close(func() { calls++ }); rest != nil {
		t.Errorf("second Close returned %v", rest)
	}
	if calls != 2 {
		t.Errorf("done called %d times by Close of an idle mailbox, want 2 (once each, at once)", calls)
	}
}

// TestCloseWhileWaitingInRunQueue closes a mailbox that is on the run queue but not running:
// done runs at once, and the worker that later reaches it skips it and carries on.
func TestCloseWhileWaitingInRunQueue(t *testing.T) {
	p := newPool(t, Config{Workers: 1})
	g := newGroup[int](t, p, GroupConfig{})
	gt := newGate()
	var a, b Mailbox[int]
	aGot := make(chan int, 10)
	a.Init(g, funcs[int]{t: t, receive: func(v int) {
		if v == 0 {
			gt.wait()
		}
		aGot <- v
	}})
	b.Init(g, funcs[int]{t: t, receive: func(v int) { t.Errorf("closed mailbox handled %d", v) }})
	mustEnqueue(t, &a, 0)
	<-gt.reached // the only worker is busy: b waits in the run queue
	mustEnqueue(t, &b, 1, 2)
	doneNow := false
	if rest := b.Close(func() { doneNow = true }); !slices.Equal(rest, []int{1, 2}) {
		t.Errorf("Close returned %v, want [1 2]", rest)
	}
	if !doneNow {
		t.Error("done of a Close on a mailbox that no worker runs did not run at once")
	}
	close(gt.open)
	mustEnqueue(t, &a, 1)
	for want := range 2 {
		if v := <-aGot; v != want {
			t.Fatalf("a handled %d, want %d", v, want)
		}
	}
}

// TestCloseWhileRequeued closes a mailbox that used up its Throughput and waits in the run
// queue for its next turn: no handler of it runs, so done runs at once.
func TestCloseWhileRequeued(t *testing.T) {
	p := newPool(t, Config{Workers: 1, Throughput: 1})
	g := newGroup[int](t, p, GroupConfig{})
	first, second := newGate(), newGate()
	var a, b, c Mailbox[int]
	c.Init(g, funcs[int]{t: t, receive: func(int) { first.wait() }})
	b.Init(g, funcs[int]{t: t, receive: func(int) { second.wait() }})
	a.Init(g, funcs[int]{t: t, receive: func(v int) {
		if v != 0 {
			t.Errorf("closed mailbox handled %d", v)
			return
		}
		mustEnqueue(t, &b, 0) // b goes on the run queue ahead of a's next turn
	}})
	mustEnqueue(t, &c, 0)
	<-first.reached // the only worker is held: a gets both messages before its first turn
	mustEnqueue(t, &a, 0, 1)
	close(first.open)
	<-second.reached // a had its turn (message 0) and waits behind b, whose handler blocks
	doneNow := false
	if rest := a.Close(func() { doneNow = true }); !slices.Equal(rest, []int{1}) {
		t.Errorf("Close returned %v, want [1]", rest)
	}
	if !doneNow {
		t.Error("done of a Close on a requeued mailbox did not run at once")
	}
	close(second.open)
}

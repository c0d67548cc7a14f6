package mailbox

import (
	"bytes"
	"context"
	"errors"
	"runtime"
	"slices"
	"testing"
	"time"
)

type failure struct {
	r     any
	stack []byte
}

func panicOnThree(v int) {
	if v == 3 {
		panic("three")
	}
}

// TestPanicRestartInPlace: a panic in Receive reaches Failed with its value and stack, and when
// Failed returns the mailbox goes on with the next message; the single worker survives and
// serves another mailbox too.
func TestPanicRestartInPlace(t *testing.T) {
	p := newPool(t, Config{Workers: 1})
	g := newGroup[int](t, p, GroupConfig{})
	var (
		m, other Mailbox[int]
		got      []int
		fails    []failure
		end      = make(chan struct{})
	)
	m.Init(g, funcs[int]{t: t,
		receive: func(v int) {
			panicOnThree(v)
			got = append(got, v)
		},
		failed: func(r any, stack []byte) { fails = append(fails, failure{r, stack}) },
	})
	other.Init(g, funcs[int]{t: t, receive: func(int) { close(end) }})
	mustEnqueue(t, &m, 0, 1, 2, 3, 4, 5)
	if err := m.Do(func() { panic(errors.New("in a signal")) }); err != nil {
		t.Fatal(err)
	}
	mustEnqueue(t, &m, 6)
	mustEnqueue(t, &other, 0)
	<-end
	fin := make(chan struct{})
	if err := m.Do(func() { close(fin) }); err != nil {
		t.Fatal(err)
	}
	<-fin
	if want := []int{0, 1, 2, 4, 5, 6}; !slices.Equal(got, want) {
		t.Errorf("handled %v, want %v", got, want)
	}
	if len(fails) != 2 {
		t.Fatalf("Failed called %d times, want 2", len(fails))
	}
	if fails[0].r != "three" || !bytes.Contains(fails[0].stack, []byte("panicOnThree")) {
		t.Errorf("first failure %v with a stack not naming panicOnThree:\n%s", fails[0].r, fails[0].stack)
	}
	if err, _ := fails[1].r.(error); err == nil || err.Error() != "in a signal" {
		t.Errorf("second failure = %v, want the signal's panic", fails[1].r)
	}
}

// TestPanicThenStop: Failed stops the entity by closing its mailbox and takes the rest.
func TestPanicThenStop(t *testing.T) {
	p := newPool(t, Config{Workers: 2})
	g := newGroup[int](t, p, GroupConfig{})
	var (
		m    Mailbox[int]
		got  []int
		rest = make(chan []int, 1)
	)
	gt := newGate()
	m.Init(g, funcs[int]{t: t,
		receive: func(v int) {
			if v == 0 {
				gt.wait()
			}
			panicOnThree(v)
			got = append(got, v)
		},
		failed: func(any, []byte) { rest <- m.Close(nil) },
	})
	mustEnqueue(t, &m, 0, 1, 2, 3, 4, 5)
	<-gt.reached
	close(gt.open)
	if r := <-rest; !slices.Equal(r, []int{4, 5}) {
		t.Errorf("Close in Failed returned %v, want [4 5]", r)
	}
	if !slices.Equal(got, []int{0, 1, 2}) {
		t.Errorf("handled %v, want [0 1 2]", got)
	}
}

// TestPanicInFailedGoesToOnPanic: a panic in Failed itself reaches Config.OnPanic, and the
// mailbox carries on.
func TestPanicInFailedGoesToOnPanic(t *testing.T) {
	onPanic := make(chan any, 1)
	p := newPool(t, Config{Workers: 1, OnPanic: func(r any, _ []byte) { onPanic <- r }})
	g := newGroup[int](t, p, GroupConfig{})
	var m Mailbox[int]
	got := make(chan int, 10)
	m.Init(g, funcs[int]{t: t,
		receive: func(v int) {
			panicOnThree(v)
			got <- v
		},
		failed: func(any, []byte) { panic("in Failed") },
	})
	mustEnqueue(t, &m, 3, 4)
	if v := <-got; v != 4 {
		t.Errorf("handled %d after the failure, want 4", v)
	}
	if r := <-onPanic; r != "in Failed" {
		t.Errorf("OnPanic got %v, want the panic of Failed", r)
	}
}

// TestGoexitInHandler: runtime.Goexit in a handler is reported as ErrGoexit, the mailbox
// goes on, and the pool replaces the worker that ended (so a one-worker pool still works
// and still shuts down).
func TestGoexitInHandler(t *testing.T) {
	p := newPool(t, Config{Workers: 1})
	g := newGroup[int](t, p, GroupConfig{})
	var m Mailbox[int]
	got := make(chan int, 10)
	failed := make(chan any, 1)
	m.Init(g, funcs[int]{t: t,
		receive: func(v int) {
			if v == 1 {
				runtime.Goexit()
			}
			got <- v
		},
		failed: func(r any, _ []byte) { failed <- r },
	})
	mustEnqueue(t, &m, 0, 1, 2, 3)
	for _, want := range []int{0, 2, 3} {
		if v := <-got; v != want {
			t.Fatalf("handled %d, want %d", v, want)
		}
	}
	if r := <-failed; r != ErrGoexit {
		t.Errorf("Failed got %v, want ErrGoexit", r)
	}
}

// TestPanicInDoneGoesToOnPanic: a done callback that a worker calls (Close made during a
// turn) is protected like Failed: its panic reaches OnPanic and the worker carries on.
func TestPanicInDoneGoesToOnPanic(t *testing.T) {
	onPanic := make(chan any, 1)
	p := newPool(t, Config{Workers: 1, OnPanic: func(r any, _ []byte) { onPanic <- r }})
	g := newGroup[int](t, p, GroupConfig{})
	var m, other Mailbox[int]
	m.Init(g, funcs[int]{t: t, receive: func(int) {
		m.Close(func() { panic("in done") })
	}})
	got := make(chan int, 1)
	other.Init(g, funcs[int]{t: t, receive: func(v int) { got <- v }})
	mustEnqueue(t, &m, 0)
	if r := <-onPanic; r != "in done" {
		t.Errorf("OnPanic got %v, want the panic of done", r)
	}
	mustEnqueue(t, &other, 7)
	if v := <-got; v != 7 {
		t.Errorf("handled %d, want 7", v)
	}
}

// TestGoexitInFailedAndDone: a Goexit in Failed or in a done callback that a worker calls
// reaches OnPanic as ErrGoexit; the turn is handed back exactly once, so the mailboxes go on
// and a one-worker pool still serves them and shuts down.
func TestGoexitInFailedAndDone(t *testing.T) {
	onPanic := make(chan any, 2)
	p := newPool(t, Config{Workers: 1, OnPanic: func(r any, _ []byte) { onPanic <- r }})
	g := newGroup[int](t, p, GroupConfig{})
	var m, stopping Mailbox[int]
	got := make(chan int, 10)
	m.Init(g, funcs[int]{t: t,
		receive: func(v int) {
			panicOnThree(v)
			got <- v
		},
		failed: func(any, []byte) { runtime.Goexit() },
	})
	stopping.Init(g, funcs[int]{t: t, receive: func(int) {
		stopping.Close(func() { runtime.Goexit() })
	}})
	mustEnqueue(t, &m, 3, 4)
	if v := <-got; v != 4 {
		t.Errorf("handled %d after a Goexit in Failed, want 4", v)
	}
	mustEnqueue(t, &stopping, 0)
	mustEnqueue(t, &m, 5)
	if v := <-got; v != 5 {
		t.Errorf("handled %d after a Goexit in done, want 5", v)
	}
	for range 2 {
		if r := <-onPanic; r != ErrGoexit {
			t.Errorf("OnPanic got %v, want ErrGoexit", r)
		}
	}
}

// fnHandler is a Handler calling f.
type fnHandler struct{ f func(string) }

func (h fnHandler) Receive(msg string) { h.f(msg) }
func (h fnHandler) Failed(any, []byte) {}

// TestBlockedHandlerLendsItsWorker: with one worker, a handler that waits inside Block …
// Unblock does not keep another mailbox from running.
func TestBlockedHandlerLendsItsWorker(t *testing.T) {
	p, err := NewPool(Config{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = p.Close(context.Background()) }()
	release := make(chan struct{})
	ran := make(chan string, 2)
	g, err := NewGroup[string](p, GroupConfig{})
	if err != nil {
		t.Fatal(err)
	}
	var blocker, other Mailbox[string]
	blocker.Init(g, fnHandler{func(string) {
		p.Block()
		<-release
		p.Unblock()
		ran <- "blocker"
	}})
	other.Init(g, fnHandler{func(string) { ran <- "other" }})
	if err := blocker.Enqueue("x"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond) // the only worker is inside the blocker now
	if err := other.Enqueue("y"); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-ran:
		if got != "other" {
			t.Fatalf("%s ran first", got)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("the other mailbox did not run while the only worker was blocked")
	}
	close(release)
	if got := <-ran; got != "blocker" {
		t.Fatal(got)
	}
}

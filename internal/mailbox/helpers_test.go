package mailbox

import (
	"context"
	"testing"
)

// funcs is a Handler made of two functions. A nil failed makes a failure a test error.
type funcs[T any] struct {
	t       testing.TB
	receive func(T)
	failed  func(r any, stack []byte)
}

func (f funcs[T]) Receive(msg T) { f.receive(msg) }

func (f funcs[T]) Failed(r any, stack []byte) {
	if f.failed == nil {
		f.t.Errorf("unexpected handler failure: %v\n%s", r, stack)
		return
	}
	f.failed(r, stack)
}

// newPool starts a pool that the test closes at its end, checking that its workers return.
func newPool(t testing.TB, cfg Config) *Pool {
	t.Helper()
	if cfg.OnPanic == nil {
		cfg.OnPanic = func(r any, stack []byte) { t.Errorf("unexpected OnPanic: %v\n%s", r, stack) }
	}
	p, err := NewPool(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(context.Background()); err != nil {
			t.Errorf("Pool.Close: %v", err)
		}
	})
	return p
}

func newGroup[T any](t testing.TB, p *Pool, cfg GroupConfig) *Group[T] {
	t.Helper()
	g, err := NewGroup[T](p, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// gate blocks a handler until the test opens it, and tells the test when a handler is
// waiting at it.
type gate struct {
	reached chan struct{}
	open    chan struct{}
}

func newGate() *gate {
	return &gate{reached: make(chan struct{}, 1), open: make(chan struct{})}
}

// wait is called by a handler: it announces itself and blocks until the gate opens.
func (g *gate) wait() {
	g.reached <- struct{}{}
	<-g.open
}

func mustEnqueue[T any](t testing.TB, m *Mailbox[T], msgs ...T) {
	t.Helper()
	for _, msg := range msgs {
		if err := m.Enqueue(msg); err != nil {
			t.Fatalf("Enqueue(%v): %v", msg, err)
		}
	}
}

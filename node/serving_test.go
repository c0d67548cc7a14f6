package node

import (
	"context"
	"errors"
	"testing"
	"time"
)

// A store call of an entity starts only under the lease: it waits while the lease has run
// out, gives up with the caller's context, and fails with ErrStopped once the member stops
// (even with time left on the lease).
func TestServingForWaitsForTheLease(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	n := &Node{ctx: ctx, cancel: cancel, clockBase: time.Now(), servingCh: make(chan struct{})}

	short, done := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer done()
	if err := n.servingFor(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("lease run out: %v, want the caller's deadline", err)
	}

	n.servingUntil.Store(int64(time.Hour))
	if err := n.servingFor(context.Background()); err != nil {
		t.Fatalf("under the lease: %v", err)
	}

	cancel()
	if err := n.servingFor(context.Background()); !errors.Is(err, ErrStopped) {
		t.Fatalf("stopped member: %v, want ErrStopped", err)
	}

	// A waiter wakes when the member stops.
	ctx2, cancel2 := context.WithCancel(context.Background())
	n2 := &Node{ctx: ctx2, cancel: cancel2, clockBase: time.Now(), servingCh: make(chan struct{})}
	errc := make(chan error, 1)
	go func() { errc <- n2.servingFor(context.Background()) }()
	time.AfterFunc(20*time.Millisecond, cancel2)
	select {
	case err := <-errc:
		if !errors.Is(err, ErrStopped) {
			t.Fatalf("stopped while waiting: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("servingFor did not return when the member stopped")
	}
}

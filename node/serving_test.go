package node

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/shardmesh/shardmesh/membership"
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

// ServingChanged hears every stop and start in order: a lease that ran out stops at its
// deadline, even when a renewal came before anyone looked; one withdrawn early stops now.
func TestServingChangedInOrder(t *testing.T) {
	type change struct {
		serving bool
		at      time.Duration
	}
	var got []change
	base := time.Now()
	n := &Node{clockBase: base, log: slog.New(slog.DiscardHandler)}
	n.cfg.ServingChanged = func(serving bool, at time.Time) { got = append(got, change{serving, at.Sub(base)}) }
	up := func() membership.Status { return membership.Up }
	n.showServing(0, 0, 10, up)   // not serving yet: nothing
	n.showServing(0, 50, 20, up)  // serving from 20
	n.showServing(50, 60, 30, up) // renewed in time: nothing
	n.showServing(60, 90, 70, up) // ran out at 60, renewed at 70
	n.showServing(90, 90, 95, up) // ran out at 90
	n.showServing(90, 200, 99, up)
	n.showServing(200, 0, 120, func() membership.Status { return membership.Leaving }) // withdrawn at 120
	want := []change{{true, 20}, {false, 60}, {true, 70}, {false, 90}, {true, 99}, {false, 120}}
	if !slices.Equal(got, want) {
		t.Fatalf("changes %v, want %v", got, want)
	}
}

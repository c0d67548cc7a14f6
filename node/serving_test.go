package node

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
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
	c := &Core{log: slog.New(slog.DiscardHandler)}
	c.cfg.ServingChanged = func(serving bool, at time.Time) { got = append(got, change{serving, at.Sub(base)}) }
	up := func() membership.Status { return membership.Up }
	show := showAt(c, base)
	show(0, 0, 10, up)   // not serving yet: nothing
	show(0, 50, 20, up)  // serving from 20
	show(50, 60, 30, up) // renewed in time: nothing
	show(60, 90, 70, up) // ran out at 60, renewed at 70
	show(90, 90, 95, up) // ran out at 90
	show(90, 200, 99, up)
	show(200, 0, 120, func() membership.Status { return membership.Leaving }) // withdrawn at 120
	want := []change{{true, 20}, {false, 60}, {true, 70}, {false, 90}, {true, 99}, {false, 120}}
	if !slices.Equal(got, want) {
		t.Fatalf("changes %v, want %v", got, want)
	}
}

// A lapse while Up is logged as a warning only once it has lasted lapseWarnAfter (a member
// that joins lapses for the moment its first grants take); its end is logged then too.
func TestServingLapseWarnsOnlyWhenItLasts(t *testing.T) {
	var mu sync.Mutex
	var logs []string
	h := &recordHandler{add: func(r slog.Record) {
		mu.Lock()
		logs = append(logs, r.Level.String()+" "+r.Message)
		mu.Unlock()
	}}
	c := &Core{log: slog.New(h)}
	up := func() membership.Status { return membership.Up }
	ms := int64(time.Millisecond)
	show := showAt(c, time.Now())
	show(0, 0, 3000*ms, up)            // not serving yet: no lapse to warn of
	show(0, 500*ms, 10*ms, up)         // serving
	show(500*ms, 500*ms, 600*ms, up)   // lapsed at 500 ms
	show(500*ms, 900*ms, 700*ms, up)   // back after 200 ms: quiet
	show(900*ms, 900*ms, 1000*ms, up)  // lapsed at 900 ms
	show(900*ms, 900*ms, 1500*ms, up)  // 0.6 s: not yet
	show(900*ms, 900*ms, 2000*ms, up)  // 1.1 s: warn
	show(900*ms, 900*ms, 2500*ms, up)  // once
	show(900*ms, 5000*ms, 3000*ms, up) // back: info
	var infoWarn []string
	for _, l := range logs {
		if !strings.HasPrefix(l, "DEBUG") {
			infoWarn = append(infoWarn, l)
		}
	}
	want := []string{"INFO serving: Up and heard by a majority of the members", "WARN not serving", "INFO serving again"}
	if len(infoWarn) != len(want) {
		t.Fatalf("logs %q", logs)
	}
	for i, w := range want {
		if !strings.HasPrefix(infoWarn[i], w) {
			t.Fatalf("log %d: %q, want %q (all: %q)", i, infoWarn[i], w, logs)
		}
	}
}

// showAt returns Core.showServing with times given as offsets from base (0: none).
func showAt(c *Core, base time.Time) func(prev, until, now int64, status func() membership.Status) {
	at := func(ns int64) time.Time {
		if ns == 0 {
			return time.Time{}
		}
		return base.Add(time.Duration(ns))
	}
	return func(prev, until, now int64, status func() membership.Status) {
		c.now = base.Add(time.Duration(now))
		c.showServing(at(prev), at(until), status)
	}
}

type recordHandler struct{ add func(slog.Record) }

func (h *recordHandler) Enabled(context.Context, slog.Level) bool      { return true }
func (h *recordHandler) Handle(_ context.Context, r slog.Record) error { h.add(r); return nil }
func (h *recordHandler) WithAttrs([]slog.Attr) slog.Handler            { return h }
func (h *recordHandler) WithGroup(string) slog.Handler                 { return h }

package shardmesh_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardmesh/shardmesh"
	"github.com/shardmesh/shardmesh/config"
	"github.com/shardmesh/shardmesh/passivation"
)

// tracked is a counter entity that keeps count of its live incarnations, and reports the
// entities whose incarnation stopped on stops (when not nil).
type tracked struct {
	counter
	live  *atomic.Int64
	stops chan<- string
}

func (c *tracked) Receive(ctx *shardmesh.Context, op string) (int, error) {
	if op == "stop" {
		c.live.Add(-1)
		if c.stops != nil {
			c.stops <- ctx.EntityID()
		}
	}
	return c.counter.Receive(ctx, op)
}

func trackedType(live, started *atomic.Int64, p *passivation.Settings) shardmesh.Entity[string, int] {
	return trackedStops(live, started, nil, p)
}

func trackedStops(live, started *atomic.Int64, stops chan<- string, p *passivation.Settings) shardmesh.Entity[string, int] {
	e := counterType()
	e.New = func(*shardmesh.Context) shardmesh.Behavior[string, int] {
		live.Add(1)
		started.Add(1)
		return &tracked{live: live, stops: stops}
	}
	e.Passivation = p
	return e
}

// TestIdleEntitiesPassivate: with sharding.passivation set to a 1 s idle timeout, an entity
// left alone stops (its next message starts a new incarnation, with fresh state), while one
// that keeps getting messages keeps running. It decides by events, not by what happens in a
// wall-clock window: it waits for the idle entity's stop, and holds the busy one to staying
// alive only if no gap between its messages came near the timeout (a loaded machine may
// stall the asker for longer).
func TestIdleEntitiesPassivate(t *testing.T) {
	const idleTimeout = time.Second
	systems := startCluster(t, 1, func(c *config.Config) {
		c.Sharding.Passivation = passivation.Disabled().WithIdleTimeout(idleTimeout)
	})
	var live, started atomic.Int64
	stops := make(chan string, 16)
	region, err := shardmesh.Init(systems[0], trackedStops(&live, &started, stops, nil))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	idle, busy := region.EntityRefFor("idle"), region.EntityRefFor("busy")
	if n, err := idle.Ask(ctx, "inc"); err != nil || n != 1 {
		t.Fatalf("idle inc = %d, %v", n, err)
	}
	var incs int
	var maxGap time.Duration
	last := time.Now()
	busyStopped := false
	for idleStopped := false; !idleStopped; {
		if _, err := busy.Ask(ctx, "inc"); err != nil {
			t.Fatal(err)
		}
		incs++
		now := time.Now()
		maxGap, last = max(maxGap, now.Sub(last)), now
		select {
		case id := <-stops:
			idleStopped = id == "idle"
			busyStopped = busyStopped || id == "busy"
		case <-time.After(50 * time.Millisecond):
		case <-ctx.Done():
			t.Fatalf("the idle entity did not stop within 30 s (%d live incarnations)", live.Load())
		}
	}
	if n, err := idle.Ask(ctx, "get"); err != nil || n != 0 {
		t.Fatalf("idle get = %d, %v; want 0 from a new incarnation", n, err)
	}
	n, err := busy.Ask(ctx, "get")
	if err != nil {
		t.Fatal(err)
	}
	if maxGap >= idleTimeout/2 {
		t.Logf("the busy entity once went %v without a message (a loaded machine): its passivation is not checked", maxGap)
		return
	}
	if busyStopped || n != incs {
		t.Fatalf("busy entity: stopped=%v, count %d after %d incs; want it kept running with its count", busyStopped, n, incs)
	}
	if started.Load() != 3 {
		t.Fatalf("%d incarnations started, want 3 (idle twice, busy once)", started.Load())
	}
}

// TestActiveEntityLimit: with an entity type limited to 50 active entities, messages to
// 2000 entities are all answered and at most 50 entities stay running.
func TestActiveEntityLimit(t *testing.T) {
	systems := startCluster(t, 1, nil)
	var live, started atomic.Int64
	limited := passivation.DefaultStrategy().WithActiveEntityLimit(50)
	region, err := shardmesh.Init(systems[0], trackedType(&live, &started, &limited))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range 2000 {
		if n, err := region.EntityRefFor(fmt.Sprint("e", i%1000)).Ask(ctx, "inc"); err != nil || n < 1 {
			t.Fatalf("entity %d: %d, %v", i%1000, n, err)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for live.Load() > 50 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if live.Load() > 50 {
		t.Fatalf("%d entities running, over the limit of 50", live.Load())
	}
	t.Logf("%d incarnations started for 2000 messages to 1000 entities; %d running", started.Load(), live.Load())

	bad := passivation.DefaultStrategy().WithActiveEntityLimit(-1)
	e := trackedType(&live, &started, &bad)
	e.Key = shardmesh.NewEntityTypeKey[string, int]("bad")
	if _, err := shardmesh.Init(systems[0], e); err == nil {
		t.Fatal("a negative active-entity limit was accepted")
	} else {
		t.Log(err)
	}
}

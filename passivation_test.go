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

// tracked is a counter entity that keeps count of its live incarnations.
type tracked struct {
	counter
	live *atomic.Int64
}

func (c *tracked) Receive(ctx *shardmesh.Context, op string) (int, error) {
	if op == "stop" {
		c.live.Add(-1)
	}
	return c.counter.Receive(ctx, op)
}

func trackedType(live, started *atomic.Int64, p *passivation.Settings) shardmesh.Entity[string, int] {
	e := counterType()
	e.New = func(*shardmesh.Context) shardmesh.Behavior[string, int] {
		live.Add(1)
		started.Add(1)
		return &tracked{live: live}
	}
	e.Passivation = p
	return e
}

// TestIdleEntitiesPassivate: with sharding.passivation set to a 1 s idle timeout, an entity
// left alone stops (its next message starts a new incarnation, with fresh state), while one
// that keeps getting messages keeps running.
func TestIdleEntitiesPassivate(t *testing.T) {
	systems := startCluster(t, 1, func(c *config.Config) {
		c.Sharding.Passivation = passivation.Disabled().WithIdleTimeout(time.Second)
	})
	var live, started atomic.Int64
	region, err := shardmesh.Init(systems[0], trackedType(&live, &started, nil))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	idle, busy := region.EntityRefFor("idle"), region.EntityRefFor("busy")
	if n, err := idle.Ask(ctx, "inc"); err != nil || n != 1 {
		t.Fatalf("idle inc = %d, %v", n, err)
	}
	deadline := time.Now().Add(2500 * time.Millisecond)
	for time.Now().Before(deadline) {
		if _, err := busy.Ask(ctx, "inc"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if live.Load() != 1 {
		t.Fatalf("%d live incarnations after 2.5 s, want only busy's", live.Load())
	}
	if n, err := idle.Ask(ctx, "get"); err != nil || n != 0 {
		t.Fatalf("idle get = %d, %v; want 0 from a new incarnation", n, err)
	}
	if n, err := busy.Ask(ctx, "get"); err != nil || n < 20 {
		t.Fatalf("busy get = %d, %v; want its count kept", n, err)
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

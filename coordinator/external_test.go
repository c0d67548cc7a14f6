package coordinator

import (
	"testing"
	"time"

	"github.com/shardmesh/shardmesh/allocation"
	"github.com/shardmesh/shardmesh/membership"
	"github.com/shardmesh/shardmesh/shard"
)

// recoveredExternal is a recovered coordinator on member ids[0] with the external strategy
// and a one-second rebalance interval.
func recoveredExternal(t *testing.T, ids ...membership.NodeID) *Coordinator {
	t.Helper()
	cfg := DefaultConfig("counter")
	cfg.Strategy = allocation.NewExternal()
	cfg.RebalanceInterval = time.Second
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	c := New(cfg, ids[0], 1, t0)
	c.Update(t0, Members{Members: members(ids...), Serving: true})
	for _, id := range ids {
		c.Step(t0, id, Register{Incarnation: 1})
	}
	if !c.Recovered() {
		t.Fatal("not recovered")
	}
	c.Ready()
	return c
}

// rebalanceRounds ticks past the rebalance interval n times and fails if any handoff starts.
func rebalanceRounds(t *testing.T, c *Coordinator, n int) {
	t.Helper()
	for i := range n {
		c.Tick(t0.Add(time.Duration(i+1) * time.Minute))
		if hs := c.Handoffs(); len(hs) > 0 {
			t.Fatalf("round %d handed off %+v: the external strategy never rebalances", i+1, hs)
		}
		for _, ev := range c.Ready().Events {
			if r, ok := ev.(RebalanceRound); ok {
				t.Fatalf("round %d: %+v", i+1, r)
			}
		}
	}
}

func TestExternalShardLandsOnTheRequestingRegion(t *testing.T) {
	c := recoveredExternal(t, "a", "b", "c")
	allocate(t, c, "b", "1", "2", "3", "4", "5")
	allocate(t, c, "c", "6")
	for s, want := range map[shard.ID]membership.NodeID{"1": "b", "2": "b", "3": "b", "4": "b", "5": "b", "6": "c"} {
		if got, _, ok := c.Allocation(s); !ok || got != want {
			t.Errorf("shard %s on %q (allocated %v), want %s", s, got, ok, want)
		}
	}
	// Five shards on b, one on c, none on a: least-shard would even that out; external
	// leaves it, and so does the dry run.
	rebalanceRounds(t, c, 5)
	if count(c, "b") != 5 || count(c, "a") != 0 {
		t.Fatalf("allocations changed: %v", c.Allocations())
	}
	if moves, err := c.Plan(PlanChange{Join: 2}); err != nil || len(moves) != 0 {
		t.Fatalf("Plan(join 2) = %v, %v; want no moves", moves, err)
	}
}

func TestExternalPinsMoveShardsAndUnpinLeavesThem(t *testing.T) {
	c := recoveredExternal(t, "a", "b", "c")
	allocate(t, c, "b", "1", "2", "3")
	// Pin shard 2 to c (shardctl shard move, System.PinShard), and shard 7, not yet
	// allocated, to a: b asks for it, the pin decides.
	c.SetDirectives(t0, Directives{Pins: map[shard.ID]membership.NodeID{"2": "c", "7": "a"}})
	completeHandoffs(t, c, "a", "b", "c")
	allocate(t, c, "b", "7")
	for s, want := range map[shard.ID]membership.NodeID{"1": "b", "2": "c", "3": "b", "7": "a"} {
		if got, _, _ := c.Allocation(s); got != want {
			t.Errorf("shard %s on %q, want %s", s, got, want)
		}
	}
	rebalanceRounds(t, c, 3)
	// Unpinned, a shard stays where its pin put it: nothing rebalances it.
	c.SetDirectives(t0, Directives{})
	rebalanceRounds(t, c, 3)
	if got, _, _ := c.Allocation("2"); got != "c" {
		t.Fatalf("unpinned shard 2 moved to %s", got)
	}
}

func TestExternalRequesterThatCannotTakeShards(t *testing.T) {
	c := recoveredExternal(t, "a", "b", "c")
	allocate(t, c, "a", "1", "2")
	allocate(t, c, "c", "3")
	// b is drained: the shard it asks for goes where least-shard would put it (b has the
	// fewest, but takes nothing; c has one shard fewer than a).
	c.SetDirectives(t0, Directives{Draining: map[membership.NodeID]bool{"b": true}})
	allocate(t, c, "b", "4")
	if got, _, _ := c.Allocation("4"); got != "c" {
		t.Fatalf("shard 4 asked for by the drained b went to %q, want c", got)
	}
	// A leave plan: b's shards would go to the coordinator's member (requested on its own
	// behalf when nobody asks meanwhile).
	c.SetDirectives(t0, Directives{})
	allocate(t, c, "b", "5", "6")
	moves, err := c.Plan(PlanChange{Leave: "b"})
	if err != nil {
		t.Fatal(err)
	}
	if len(moves) != 2 || moves[0].To != "a" || moves[1].To != "a" {
		t.Fatalf("leave plan %+v: want shards 5 and 6 to a", moves)
	}
}

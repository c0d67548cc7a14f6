package coordinator

import (
	"testing"
	"time"

	"github.com/shardmesh/shardmesh/membership"
	"github.com/shardmesh/shardmesh/shard"
)

// completeHandoffs plays the regions' part of every handoff in progress (acknowledge, stop,
// start the new home) until none is left.
func completeHandoffs(t *testing.T, c *Coordinator, regions ...membership.NodeID) {
	t.Helper()
	for range 10 {
		hs := c.Handoffs()
		if len(hs) == 0 {
			break
		}
		for _, h := range hs {
			for _, r := range regions {
				c.Step(t0, r, BeginHandOffAck{Shard: h.Shard, Epoch: h.Epoch})
			}
			c.Step(t0, h.From, ShardStopped{Shard: h.Shard, Epoch: h.Epoch})
		}
		startAll(c)
	}
	if hs := c.Handoffs(); len(hs) > 0 {
		t.Fatalf("handoffs left: %+v", hs)
	}
}

// startAll acknowledges every HostShard sent.
func startAll(c *Coordinator) {
	for _, env := range c.Ready().Messages {
		if h, ok := env.Msg.(HostShard); ok {
			c.Step(t0, env.To, ShardStarted{Shard: h.Shard, Epoch: h.Epoch})
		}
	}
}

func allocate(t *testing.T, c *Coordinator, from membership.NodeID, shards ...shard.ID) {
	t.Helper()
	for _, s := range shards {
		c.Step(t0, from, GetShardHome{Shard: s})
	}
	startAll(c)
}

func count(c *Coordinator, node membership.NodeID) int {
	n := 0
	for _, r := range c.Allocations() {
		if r == node {
			n++
		}
	}
	return n
}

func TestAwaitDirectivesServesNothingUntilGiven(t *testing.T) {
	cfg := DefaultConfig("counter")
	cfg.AwaitDirectives = true
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	c := New(cfg, "a", 1, t0)
	c.Update(t0, Members{Members: members("a"), Serving: true})
	c.Step(t0, "a", Register{Incarnation: 1})
	c.Step(t0, "a", GetShardHome{Shard: "1"})
	if _, _, ok := c.Allocation("1"); ok {
		t.Fatal("allocated before the directives were known")
	}
	c.SetDirectives(t0, Directives{})
	if _, _, ok := c.Allocation("1"); !ok {
		t.Fatal("the held request was not served once the directives were known")
	}
}

func TestDrainMovesEveryShardAwayAndAllocatesNoneThere(t *testing.T) {
	c := recovered(t, "a", "b", "c")
	allocate(t, c, "a", "1", "2", "3", "4", "5", "6")
	if count(c, "b") == 0 {
		t.Fatal("setup: b holds no shard")
	}
	c.SetDirectives(t0, Directives{Draining: map[membership.NodeID]bool{"b": true}})
	completeHandoffs(t, c, "a", "b", "c")
	if n := count(c, "b"); n != 0 {
		t.Fatalf("drained b still holds %d shards: %v", n, c.Allocations())
	}
	allocate(t, c, "b", "7", "8", "9")
	if n := count(c, "b"); n != 0 {
		t.Fatalf("new shards went to the drained member: %v", c.Allocations())
	}
	// Undrained, b takes shards again through the strategy's rebalance.
	c.SetDirectives(t0, Directives{})
	c.Tick(t0.Add(time.Minute))
	completeHandoffs(t, c, "a", "b", "c")
	if n := count(c, "b"); n == 0 {
		t.Fatalf("undrained b got no shards back: %v", c.Allocations())
	}
}

func TestPinnedShardMovesToItsPinAndStays(t *testing.T) {
	c := recovered(t, "a", "b")
	allocate(t, c, "a", "1", "2", "3", "4")
	var onA shard.ID
	for s, r := range c.Allocations() {
		if r == "a" {
			onA = s
		}
	}
	c.SetDirectives(t0, Directives{Pins: map[shard.ID]membership.NodeID{onA: "b"}})
	completeHandoffs(t, c, "a", "b")
	if r, _, _ := c.Allocation(onA); r != "b" {
		t.Fatalf("pinned shard %s is on %s, not b", onA, r)
	}
	// Rebalancing towards a's side never takes the pinned shard away.
	for i := range 5 {
		c.Tick(t0.Add(time.Duration(i+1) * time.Minute))
		completeHandoffs(t, c, "a", "b")
	}
	if r, _, _ := c.Allocation(onA); r != "b" {
		t.Fatalf("the strategy moved pinned shard %s to %s", onA, r)
	}
}

func TestPinToAnUnusableMemberFallsBackToTheStrategy(t *testing.T) {
	c := recovered(t, "a", "b")
	c.SetDirectives(t0, Directives{Pins: map[shard.ID]membership.NodeID{"1": "zz"}})
	allocate(t, c, "a", "1")
	if _, _, ok := c.Allocation("1"); !ok {
		t.Fatal("a shard pinned to an unknown member was not allocated at all")
	}
}

func TestRebalancePauseStopsOnlyAutomaticMoves(t *testing.T) {
	c := recovered(t, "a")
	allocate(t, c, "a", "1", "2", "3", "4")
	c.Update(t0, Members{Members: members("a", "b"), Serving: true})
	c.Step(t0, "b", Register{Incarnation: 1})
	c.Ready()
	c.SetDirectives(t0, Directives{RebalancePaused: true})
	c.Tick(t0.Add(time.Minute))
	if hs := c.Handoffs(); len(hs) != 0 {
		t.Fatalf("rebalanced while paused: %+v", hs)
	}
	c.SetDirectives(t0, Directives{RebalancePaused: true, Draining: map[membership.NodeID]bool{"a": true}})
	completeHandoffs(t, c, "a", "b")
	if n := count(c, "a"); n != 0 {
		t.Fatalf("a drain did not go on while rebalancing was paused: %v", c.Allocations())
	}
}

func TestStoppedTypeHandsOffEverythingAndAllocatesNothing(t *testing.T) {
	c := recovered(t, "a", "b")
	allocate(t, c, "a", "1", "2", "3")
	c.SetDirectives(t0, Directives{Stopped: true})
	completeHandoffs(t, c, "a", "b")
	if n := len(c.Allocations()); n != 0 {
		t.Fatalf("%d shards still allocated on a stopped type: %v", n, c.Allocations())
	}
	c.Step(t0, "b", GetShardHome{Shard: "1"})
	if out := sent(c.Ready()); out != "" {
		t.Fatalf("a stopped type answered: %s", out)
	}
	c.SetDirectives(t0, Directives{})
	allocate(t, c, "b", "1")
	if _, _, ok := c.Allocation("1"); !ok {
		t.Fatal("not allocated after the type started again")
	}
}

// TestPlanPredictsTheRebalance: the dry run names exactly the moves the next round makes.
func TestPlanPredictsTheRebalance(t *testing.T) {
	c := recovered(t, "a")
	allocate(t, c, "a", "1", "2", "3", "4", "5", "6")
	c.Update(t0, Members{Members: members("a", "b"), Serving: true})
	c.Step(t0, "b", Register{Incarnation: 1})
	c.Ready()
	plan, err := c.Plan(PlanChange{})
	if err != nil || len(plan) == 0 {
		t.Fatalf("plan: %v %v", plan, err)
	}
	c.Tick(t0.Add(time.Minute))
	completeHandoffs(t, c, "a", "b")
	for _, m := range plan {
		if r, _, _ := c.Allocation(m.Shard); r != m.To {
			t.Errorf("plan said %s → %s, it went to %s", m.Shard, m.To, r)
		}
	}
	if n := count(c, "b"); n != len(plan) {
		t.Errorf("plan moved %d shards, the round %d", len(plan), n)
	}
}

func TestPlanIfLeaveAndIfJoin(t *testing.T) {
	c := recovered(t, "a", "b", "c")
	allocate(t, c, "a", "1", "2", "3", "4", "5", "6")
	plan, err := c.Plan(PlanChange{Leave: "b"})
	if err != nil {
		t.Fatal(err)
	}
	if len(plan) != count(c, "b") {
		t.Fatalf("leave plan moves %d shards, b holds %d", len(plan), count(c, "b"))
	}
	for _, m := range plan {
		if m.From != "b" || m.To == "b" || m.To == "" {
			t.Errorf("leave move %+v", m)
		}
	}
	if _, err := c.Plan(PlanChange{Leave: "zz"}); err == nil {
		t.Error("a plan for a member without a region did not fail")
	}
	join, err := c.Plan(PlanChange{Join: 3})
	if err != nil || len(join) == 0 {
		t.Fatalf("join plan: %v %v", join, err)
	}
	for _, m := range join {
		if len(m.To) < 10 || m.To[:10] != "new-member" {
			t.Errorf("join move %+v does not go to a new member", m)
		}
	}
	if len(c.Handoffs()) != 0 {
		t.Error("a plan started handoffs")
	}
}

func TestDurableTermServesNothingUntilSet(t *testing.T) {
	cfg := DefaultConfig("counter")
	cfg.DurableTerm = true
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	c := New(cfg, "a", 1, t0)
	c.Update(t0, Members{Members: members("a"), Serving: true})
	c.Step(t0, "a", Register{Incarnation: 1})
	c.Step(t0, "a", GetShardHome{Shard: "1"})
	if _, _, ok := c.Allocation("1"); ok {
		t.Fatal("allocated before the term was known")
	}
	c.SetTerm(t0, 3<<16|1)
	_, e, ok := c.Allocation("1")
	if !ok || e.Term() != 3<<16|1 {
		t.Fatalf("after SetTerm: allocated %v, epoch %v", ok, e)
	}
}

// TestRebalanceGivesUpStartedShardsFirst: a region's oldest shard whose start is not yet
// reported (its HostShard lost, sent again only after shard-start-timeout) is not the one
// a round picks — a shard not started is not handed off, and picking it wasted the round
// (sharding soak seed 122: one round in two did nothing, and the shards were not balanced
// within two rounds).
func TestRebalanceGivesUpStartedShardsFirst(t *testing.T) {
	c := recovered(t, "a")
	c.Step(t0, "a", GetShardHome{Shard: "1"})
	c.Ready() // its HostShard is lost: no ShardStarted
	allocate(t, c, "a", "2", "3")
	c.Update(t0, Members{Members: members("a", "b"), Serving: true})
	c.Step(t0, "b", Register{Incarnation: 1})
	c.Ready()
	c.Tick(t0.Add(time.Minute))
	hs := c.Handoffs()
	if len(hs) != 1 || hs[0].Shard == "1" {
		t.Fatalf("handoffs %+v: want one of the started shards 2 and 3", hs)
	}
}

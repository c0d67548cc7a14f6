package coordinator

import (
	"testing"
	"time"

	"github.com/shardmesh/shardmesh/membership"
	"github.com/shardmesh/shardmesh/shard"
)

// TestNoNewShardsOnAFullMember: a region that registers as taking no new shards (its
// member's disk is full) gets none, keeps the ones it has, and gets new ones again once it
// registers without the flag.
func TestNoNewShardsOnAFullMember(t *testing.T) {
	c := newCoordinator(t, "a", "b")
	c.Step(t0, "a", Register{Incarnation: 1, NoNewShards: true, Hosted: []Hosted{{Shard: "7", Epoch: NewEpoch(1, 3)}}})
	c.Step(t0, "b", Register{Incarnation: 1})
	c.Ready()
	for i, s := range []shard.ID{"1", "2", "3", "4"} {
		from := membership.NodeID("a")
		if i%2 == 1 {
			from = "b"
		}
		c.Step(t0, from, GetShardHome{Shard: s})
		if r, _, ok := c.Allocation(s); !ok || r != "b" {
			t.Fatalf("shard %s allocated to %q (%v), want b: a takes no new shards", s, r, ok)
		}
	}
	if r, _, ok := c.Allocation("7"); !ok || r != "a" {
		t.Fatalf("shard 7 left a: %q %v", r, ok)
	}
	c.Tick(t0.Add(time.Hour)) // rebalance rounds do not move shards onto it either
	for _, s := range []shard.ID{"1", "2", "3", "4"} {
		if r, _, _ := c.Allocation(s); r != "b" {
			t.Fatalf("shard %s moved to %s while a takes no new shards", s, r)
		}
	}
	c.Step(t0.Add(time.Hour), "a", Register{Incarnation: 1, Hosted: []Hosted{{Shard: "7", Epoch: NewEpoch(1, 3)}}})
	c.Step(t0.Add(time.Hour), "a", GetShardHome{Shard: "5"})
	if r, _, ok := c.Allocation("5"); !ok || r != "a" {
		t.Fatalf("shard 5 allocated to %q (%v), want a (the least loaded) once it takes shards again", r, ok)
	}
}

package allocation

import (
	"testing"

	"github.com/shardmesh/shardmesh/membership"
	"github.com/shardmesh/shardmesh/shard"
)

func TestExternalAllocatesToTheRequester(t *testing.T) {
	leavingB := abc(5, 1, 0)
	leavingB.Regions[1].Status = membership.Leaving
	for _, tc := range []struct {
		name      string
		v         View
		requester membership.NodeID
		want      membership.NodeID
	}{
		{"requester with the most shards", abc(7, 0, 0), "A", "A"},
		{"requester in the middle", abc(3, 2, 1), "B", "B"},
		{"newest requester", abc(3, 2, 1), "C", "C"},
		// A proxy, a draining member or the coordinator's member without a region: not in
		// the view. LeastShard's choice instead: the region with the fewest shards.
		{"requester without a region", abc(3, 2, 1), "proxy", "C"},
		{"no requester", abc(0, 2, 1), "", "A"},
		// A requester on its way out gets nothing new; C has the fewest shards.
		{"requester leaving", leavingB, "B", "C"},
		{"no region at all", View{}, "A", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := NewExternal().Allocate(tc.requester, "42", tc.v); got != tc.want {
				t.Errorf("Allocate(%q) = %q, want %q", tc.requester, got, tc.want)
			}
		})
	}
}

func TestExternalNeverRebalances(t *testing.T) {
	joined := abc(10, 10, 0)
	joined.Regions = append(joined.Regions, Region{Node: "D", Status: membership.Up, UpNumber: 4})
	leaving := abc(4, 4, 4)
	leaving.Regions[0].Status = membership.Leaving
	for _, tc := range []struct {
		name string
		v    View
	}{
		{"all shards on one region", abc(30, 0, 0)},
		{"a new empty member", joined},
		{"a member leaving", leaving},
		{"handoffs in progress", withInProgress(abc(9, 1, 0), "001")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := NewExternal().Rebalance(tc.v); len(got) != 0 {
				t.Errorf("Rebalance picked %v", got)
			}
			if moves := Plan(NewExternal(), tc.v); len(moves) != 0 {
				t.Errorf("Plan moves %v", moves)
			}
		})
	}
}

// Placing shards one request at a time: each lands where it was asked for, however uneven
// that leaves the regions, and Plan finds nothing to even out.
func TestExternalFollowsTheRequestsAndKeepsThem(t *testing.T) {
	v := abc(0, 0, 0)
	requests := []membership.NodeID{"B", "B", "C", "B", "A", "B"}
	for i, req := range requests {
		id := shard.ID(rune('a' + i))
		node := NewExternal().Allocate(req, id, v)
		if node != req {
			t.Fatalf("shard %s asked for by %s went to %s", id, req, node)
		}
		v.Regions[regionIndex(v.Regions, node)].Shards = append(v.Regions[regionIndex(v.Regions, node)].Shards, id)
	}
	if got := counts(v); got[0] != 1 || got[1] != 4 || got[2] != 1 {
		t.Fatalf("counts %v, want [1 4 1]", got)
	}
	if moves := Plan(NewExternal(), v); len(moves) != 0 {
		t.Fatalf("Plan moves %v", moves)
	}
}

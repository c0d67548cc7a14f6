package allocation

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/shardmesh/shardmesh/membership"
	"github.com/shardmesh/shardmesh/shard"
)

// Plan is exactly: Rebalance, then for each shard in its order, take it off its region and
// add it to the region Allocate picks, the shards not yet handled still in progress.
func TestPlanIsRebalanceThenAllocateOneByOne(t *testing.T) {
	skip := unlimited(t).Config()
	skip.SkipDifferenceOfOne = true
	strategies := map[string]Strategy{
		"new":                unlimited(t),
		"new, limit 7":       newLeastShard(t, LeastShardConfig{RebalanceAbsoluteLimit: 7}),
		"new, skip":          newLeastShard(t, skip),
		"old":                oldAlgorithm(t, 1, 3),
		"old, threshold 3":   oldAlgorithm(t, 3, 10),
		"consistent hashing": newConsistentHashing(t, ConsistentHashingConfig{RebalanceLimit: 50}),
	}
	for name, s := range strategies {
		for i := range 100 {
			rnd := rand.New(rand.NewPCG(propertySeed+3, uint64(i)))
			v, _ := randomView(rnd)
			for j := range v.Regions {
				if rnd.IntN(5) == 0 {
					v.Regions[j].Status = membership.Leaving
				}
			}
			want := replay(s, v)
			got := Plan(s, v)
			if !slices.Equal(got, want) {
				t.Fatalf("%s, case %d: Plan = %v, want %v", name, i, got, want)
			}
			if again := Plan(s, v); !slices.Equal(again, got) {
				t.Fatalf("%s, case %d: Plan not deterministic: %v then %v", name, i, got, again)
			}
		}
	}
}

// replay is the definition of Plan, written as plainly as possible.
func replay(s Strategy, v View) []Move {
	w := cloneView(v)
	picked := s.Rebalance(w)
	w.InProgress = map[shard.ID]bool{}
	for _, id := range picked {
		w.InProgress[id] = true
	}
	var moves []Move
	for _, id := range picked {
		from := -1
		for i := range w.Regions {
			if slices.Contains(w.Regions[i].Shards, id) {
				from = i
			}
		}
		w.Regions[from].Shards = slices.DeleteFunc(w.Regions[from].Shards, func(x shard.ID) bool { return x == id })
		delete(w.InProgress, id) // its handoff is complete; the later ones are still in progress
		to := s.Allocate(w.Regions[from].Node, id, w)
		for i := range w.Regions {
			if w.Regions[i].Node == to {
				w.Regions[i].Shards = append(w.Regions[i].Shards, id)
			}
		}
		moves = append(moves, Move{Shard: id, From: w.Regions[from].Node, To: to})
	}
	return moves
}

func TestPlanDoesNotModifyTheView(t *testing.T) {
	v := abc(9, 1, 0)
	v.Regions = append(v.Regions, Region{Node: "L", Status: membership.Leaving, AppVersion: "1.0.0", Shards: []shard.ID{"x"}})
	busy := withInProgress(v, "009")
	for _, s := range []Strategy{unlimited(t), oldAlgorithm(t, 1, 3), newConsistentHashing(t, ConsistentHashingConfig{}), &scripted{}} {
		for _, v := range []View{v, busy} {
			keep := cloneView(v)
			moves := Plan(s, v)
			if len(moves) == 0 && len(v.InProgress) == 0 {
				t.Fatalf("%v: no moves; the check needs some", s)
			}
			if !reflect.DeepEqual(v, keep) {
				t.Fatalf("%v: Plan changed its view:\n%+v\nwas\n%+v", s, v, keep)
			}
		}
	}
}

// scripted is a strategy that does as told and records what it was asked.
type scripted struct {
	rebalance []shard.ID
	allocate  map[shard.ID]membership.NodeID
	calls     []allocateCall
}

type allocateCall struct {
	requester  membership.NodeID
	shard      shard.ID
	inProgress []shard.ID
	held       int // shards held by all regions at the time
}

func (s *scripted) Allocate(requester membership.NodeID, id shard.ID, v View) membership.NodeID {
	c := allocateCall{requester: requester, shard: id}
	for in := range v.InProgress {
		c.inProgress = append(c.inProgress, in)
	}
	slices.Sort(c.inProgress)
	for _, r := range v.Regions {
		c.held += len(r.Shards)
	}
	s.calls = append(s.calls, c)
	if to, ok := s.allocate[id]; ok {
		return to
	}
	return v.Regions[len(v.Regions)-1].Node
}

func (s *scripted) Rebalance(v View) []shard.ID {
	if s.rebalance == nil {
		// Something to move, for the tests that only need moves: the first shard of A.
		return v.Regions[0].Shards[:1]
	}
	return s.rebalance
}

// Plan skips what the coordinator skips (shards named twice, in progress, or held by no
// region), asks on behalf of the region the shard left, and reports a home outside the view
// as none.
func TestPlanWithAStrategyThatMisbehaves(t *testing.T) {
	v := View{
		Regions: []Region{
			{Node: "R1", Shards: []shard.ID{"a", "b", "busy"}},
			{Node: "R2", Shards: []shard.ID{"c"}},
		},
		InProgress: map[shard.ID]bool{"busy": true},
	}
	s := &scripted{
		rebalance: []shard.ID{"a", "a", "busy", "ghost", "b", "c"},
		allocate:  map[shard.ID]membership.NodeID{"a": "R2", "b": "nowhere", "c": ""},
	}
	got := Plan(s, v)
	want := []Move{{"a", "R1", "R2"}, {"b", "R1", ""}, {"c", "R2", ""}}
	if !slices.Equal(got, want) {
		t.Fatalf("Plan = %v, want %v", got, want)
	}
	wantCalls := []allocateCall{
		{requester: "R1", shard: "a", inProgress: []shard.ID{"b", "busy", "c"}, held: 3},
		{requester: "R1", shard: "b", inProgress: []shard.ID{"busy", "c"}, held: 3},
		{requester: "R2", shard: "c", inProgress: []shard.ID{"busy"}, held: 2},
	}
	if !reflect.DeepEqual(s.calls, wantCalls) {
		t.Fatalf("Allocate calls = %+v, want %+v", s.calls, wantCalls)
	}
}

func TestPlanNothingToDo(t *testing.T) {
	if got := Plan(unlimited(t), abc(3, 3, 3)); got != nil {
		t.Fatalf("balanced: Plan = %v, want nothing", got)
	}
	if got := Plan(unlimited(t), View{}); got != nil {
		t.Fatalf("empty view: Plan = %v, want nothing", got)
	}
}

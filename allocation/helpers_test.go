package allocation

import (
	"fmt"
	"slices"
	"testing"

	"github.com/shardmesh/shardmesh/membership"
	"github.com/shardmesh/shardmesh/shard"
)

// ids returns the shard ids "001", "002", … from first, n of them, as Akka's specs name them.
func ids(first, n int) []shard.ID {
	out := make([]shard.ID, n)
	for i := range out {
		out[i] = shard.ID(fmt.Sprintf("%03d", first+i))
	}
	return out
}

// abc is Akka's createAllocations: regions A, B and C (Up, same version, in that order of
// age) holding a, b and c shards numbered consecutively from "001".
func abc(a, b, c int) View {
	return View{Regions: []Region{
		{Node: "A", Status: membership.Up, AppVersion: "1.0.0", UpNumber: 1, Shards: ids(1, a)},
		{Node: "B", Status: membership.Up, AppVersion: "1.0.0", UpNumber: 2, Shards: ids(1+a, b)},
		{Node: "C", Status: membership.Up, AppVersion: "1.0.0", UpNumber: 3, Shards: ids(1+a+b, c)},
	}}
}

// withInProgress returns v with the given shards in progress.
func withInProgress(v View, in ...shard.ID) View {
	v.InProgress = make(map[shard.ID]bool, len(in))
	for _, id := range in {
		v.InProgress[id] = true
	}
	return v
}

// counts returns the number of shards of each region, in the view's order.
func counts(v View) []int {
	out := make([]int, len(v.Regions))
	for i := range v.Regions {
		out[i] = len(v.Regions[i].Shards)
	}
	return out
}

// spread returns max − min of the regions' shard counts.
func spread(v View) int {
	c := counts(v)
	if len(c) == 0 {
		return 0
	}
	return slices.Max(c) - slices.Min(c)
}

func newLeastShard(t testing.TB, cfg LeastShardConfig) LeastShard {
	t.Helper()
	s, err := NewLeastShard(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// unlimited is the new algorithm with limits that never bind, as Akka's strategyWithoutLimits.
func unlimited(t testing.TB) LeastShard {
	return newLeastShard(t, LeastShardConfig{RebalanceAbsoluteLimit: 1000, RebalanceRelativeLimit: 1})
}

// oldAlgorithm is the old algorithm with the given threshold and max-simultaneous-rebalance.
func oldAlgorithm(t testing.TB, threshold, maxSimultaneous int) LeastShard {
	return newLeastShard(t, LeastShardConfig{RebalanceThreshold: threshold, MaxSimultaneousRebalance: maxSimultaneous})
}

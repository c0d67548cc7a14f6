package allocation

import (
	"fmt"
	"testing"

	"github.com/shardmesh/shardmesh/membership"
	"github.com/shardmesh/shardmesh/shard"
)

// benchView is 100 Up regions holding 10,000 shards: 99 regions with 101 shards and one
// region just joined with 1, so that every algorithm has something to rebalance.
func benchView() View {
	nodes := peerIDs(42, 100)
	v := View{Regions: upRegions(nodes)}
	n := 0
	for i := range v.Regions {
		k := 101
		if i == len(v.Regions)-1 {
			k = 10_000 - 99*101
		}
		for range k {
			v.Regions[i].Shards = append(v.Regions[i].Shards, shard.ID(fmt.Sprint(n)))
			n++
		}
	}
	return v
}

func benchmarkAllocate(b *testing.B, s Strategy) {
	v := benchView()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if s.Allocate("", shard.ID(fmt.Sprint(i%10_000)), v) == "" {
			b.Fatal("no region")
		}
	}
}

func benchmarkRebalance(b *testing.B, s Strategy, v View) {
	if len(s.Rebalance(v)) == 0 {
		b.Fatal("nothing to rebalance: the benchmark would measure an early return")
	}
	b.ResetTimer()
	for b.Loop() {
		s.Rebalance(v)
	}
}

func BenchmarkLeastShardAllocate(b *testing.B) {
	benchmarkAllocate(b, newLeastShard(b, LeastShardConfig{RebalanceAbsoluteLimit: 20}))
}

func BenchmarkLeastShardRebalanceNew(b *testing.B) {
	benchmarkRebalance(b, newLeastShard(b, LeastShardConfig{RebalanceAbsoluteLimit: 20}), benchView())
}

func BenchmarkLeastShardRebalanceNewSkipDifferenceOfOne(b *testing.B) {
	benchmarkRebalance(b, newLeastShard(b, LeastShardConfig{RebalanceAbsoluteLimit: 1000, RebalanceRelativeLimit: 1, SkipDifferenceOfOne: true}), benchView())
}

func BenchmarkLeastShardRebalanceOld(b *testing.B) {
	v := withInProgress(benchView(), "0", "101")
	benchmarkRebalance(b, newLeastShard(b, LeastShardConfig{RebalanceThreshold: 10, MaxSimultaneousRebalance: 20}), v)
}

func BenchmarkConsistentHashingAllocate(b *testing.B) {
	benchmarkAllocate(b, newConsistentHashing(b, ConsistentHashingConfig{}))
}

// 10,000 shards on their ring owners among 99 members, then a 100th joins: about 1% move.
func BenchmarkConsistentHashingRebalance(b *testing.B) {
	s := newConsistentHashing(b, ConsistentHashingConfig{})
	v := View{Regions: upRegions(peerIDs(42, 100))}
	before := View{Regions: v.Regions[:99]}
	for n := range 10_000 {
		id := shard.ID(fmt.Sprint(n))
		r := &v.Regions[regionIndex(v.Regions, s.Allocate("", id, before))]
		r.Shards = append(r.Shards, id)
	}
	benchmarkRebalance(b, s, v)
}

// Every shard misplaced: the worst case, 10,000 shards picked.
func BenchmarkConsistentHashingRebalanceAll(b *testing.B) {
	benchmarkRebalance(b, newConsistentHashing(b, ConsistentHashingConfig{}), benchView())
}

// The first call after a membership change builds the ring.
func BenchmarkConsistentHashingNewRing(b *testing.B) {
	nodes := peerIDs(42, 100)
	for b.Loop() {
		newHashRing(nodes, DefaultConsistentHashingConfig().VirtualNodes)
	}
}

func BenchmarkPlanLeastShard(b *testing.B) {
	s := newLeastShard(b, LeastShardConfig{RebalanceAbsoluteLimit: 100})
	v := benchView()
	v.Regions = append(v.Regions, Region{Node: membership.NodeID("new"), Status: membership.Up, AppVersion: "1.0.0", UpNumber: 101})
	for b.Loop() {
		if len(Plan(s, v)) == 0 {
			b.Fatal("no moves")
		}
	}
}

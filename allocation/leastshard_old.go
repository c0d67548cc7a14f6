package allocation

import (
	"slices"
	"strings"

	"github.com/shardmesh/shardmesh/shard"
)

// rebalanceOld is the algorithm Akka keeps as its default (ShardCoordinator.
// LeastShardAllocationStrategy, rebalance-threshold and max-simultaneous-rebalance). While
// fewer than MaxSimultaneousRebalance handoffs are in progress, it compares the region with
// the most shards not in progress against the most suitable region (the one Allocate would
// pick); when they differ by more than RebalanceThreshold it picks
// min(difference − threshold, threshold, free handoff slots) shards of the former, the
// first in id order.
//
// Handoffs may overlap: a round can start while earlier ones are still in progress, which is
// how the threshold and the slots add up to several shards per rebalance interval.
func (s LeastShard) rebalanceOld(v View) []shard.ID {
	free := s.cfg.MaxSimultaneousRebalance - len(v.InProgress)
	if free <= 0 || !goodTimeToRebalance(v) {
		return nil
	}
	sorted := sortedBySuitability(v.Regions)
	least := len(v.Regions[sorted[0]].Shards)

	// The region with the most shards not in progress; the first in suitability order among
	// equals, as Akka's maxBy over its sorted regions.
	mostAt, mostN := -1, -1
	for _, i := range sorted {
		if n := countNotInProgress(v.Regions[i].Shards, v.InProgress); n > mostN {
			mostAt, mostN = i, n
		}
	}
	most := make([]pick, 0, mostN)
	for _, id := range v.Regions[mostAt].Shards {
		if !v.InProgress[id] {
			most = append(most, pick{id, mostAt})
		}
	}

	diff := len(most) - least
	if diff <= s.cfg.RebalanceThreshold {
		return nil
	}
	n := min(diff-s.cfg.RebalanceThreshold, s.cfg.RebalanceThreshold, free)
	// Akka sorts Java strings (UTF-16 code units); Go compares UTF-8 bytes. The two orders
	// agree except between characters above U+FFFF and those in U+E000–U+FFFF.
	slices.SortFunc(most, func(a, b pick) int { return strings.Compare(string(a.id), string(b.id)) })
	return s.keepWorthMoving(v, most[:n])
}

func countNotInProgress(shards []shard.ID, inProgress map[shard.ID]bool) int {
	if len(inProgress) == 0 {
		return len(shards)
	}
	n := 0
	for _, id := range shards {
		if !inProgress[id] {
			n++
		}
	}
	return n
}

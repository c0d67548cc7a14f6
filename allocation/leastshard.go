package allocation

import (
	"fmt"

	"github.com/shardmesh/shardmesh/membership"
	"github.com/shardmesh/shardmesh/shard"
)

// LeastShard is Akka's LeastShardAllocationStrategy. It allocates a new shard to the most
// suitable region: one not on its way out of the cluster, then of the newest app version,
// then with the fewest shards (then the oldest member, then the lowest node id). It
// rebalances with the new algorithm when Config.RebalanceAbsoluteLimit > 0 and with the old
// one otherwise, never during a rolling update or while a member is joining or unreachable.
//
// The new algorithm reaches the optimal balance (most and fewest shards differ by at most
// one) in one or two rounds when the limits do not bind, and does not start a round while
// any handoff is in progress:
//
//   - phase 1: with optimal = ⌈shards / regions⌉, every region holding more than optimal
//     gives up its oldest shards down to optimal;
//   - phase 2, when phase 1 finds nothing: if regions hold two or more fewer than optimal,
//     that many regions holding optimal give up one shard each.
//
// A round moves at most max(1, min(⌊RebalanceRelativeLimit × shards⌋,
// RebalanceAbsoluteLimit)) shards.
//
// The old algorithm, Akka's default, moves at most RebalanceThreshold shards per round from
// the region with the most shards once it holds more than RebalanceThreshold above the most
// suitable region, with at most MaxSimultaneousRebalance handoffs in progress; rounds may
// overlap. It needs many rounds and stops with up to RebalanceThreshold shards of imbalance.
//
// With Config.SkipDifferenceOfOne, either algorithm drops the shards that Allocate would
// put back on their region or on one holding just one shard fewer (Shardcake's rule); this
// matters when regions on their way out count in the optimum but are avoided by Allocate,
// where Akka's algorithm hands off the same shards round after round.
type LeastShard struct {
	cfg LeastShardConfig
}

// NewLeastShard returns the strategy for cfg, validated (zero fields take their defaults).
func NewLeastShard(cfg LeastShardConfig) (LeastShard, error) {
	if err := cfg.Validate(); err != nil {
		return LeastShard{}, err
	}
	return LeastShard{cfg: cfg}, nil
}

// Config returns the strategy's validated configuration.
func (s LeastShard) Config() LeastShardConfig { return s.cfg }

// String names the strategy and its algorithm's settings, for logs and `shardctl`.
func (s LeastShard) String() string {
	c := s.cfg
	if c.RebalanceAbsoluteLimit > 0 {
		return fmt.Sprintf("LeastShard(absolute-limit=%d, relative-limit=%g, skip-difference-of-one=%t)",
			c.RebalanceAbsoluteLimit, c.RebalanceRelativeLimit, c.SkipDifferenceOfOne)
	}
	return fmt.Sprintf("LeastShard(threshold=%d, max-simultaneous=%d, skip-difference-of-one=%t)",
		c.RebalanceThreshold, c.MaxSimultaneousRebalance, c.SkipDifferenceOfOne)
}

// Allocate returns the most suitable region of v; the requester plays no part.
func (s LeastShard) Allocate(_ membership.NodeID, _ shard.ID, v View) membership.NodeID {
	best := -1
	for i := range v.Regions {
		r := &v.Regions[i]
		if best < 0 || moreSuitable(r, len(r.Shards), &v.Regions[best], len(v.Regions[best].Shards)) < 0 {
			best = i
		}
	}
	if best < 0 {
		return ""
	}
	return v.Regions[best].Node
}

// Rebalance picks the shards to hand off this round, with the algorithm the configuration
// selects (during a rolling update, with RollingUpdateMoves, see rollingUpdate).
func (s LeastShard) Rebalance(v View) []shard.ID {
	if s.cfg.RollingUpdateMoves && mixedVersions(v) {
		return s.rollingUpdate(v)
	}
	if s.cfg.RebalanceAbsoluteLimit > 0 {
		return s.rebalanceNew(v)
	}
	return s.rebalanceOld(v)
}

// newLimit is the new algorithm's most shards per round for total shards.
func (s LeastShard) newLimit(total int) int {
	return max(1, min(int(s.cfg.RebalanceRelativeLimit*float64(total)), s.cfg.RebalanceAbsoluteLimit))
}

// pick is a shard chosen for handoff and the index of its region in the view.
type pick struct {
	id   shard.ID
	from int
}

// keepWorthMoving returns the ids of picked, applying Shardcake's rule first when the
// configuration asks for it.
func (s LeastShard) keepWorthMoving(v View, picked []pick) []shard.ID {
	if len(picked) == 0 {
		return nil
	}
	if s.cfg.SkipDifferenceOfOne {
		picked = worthMoving(v, picked)
	}
	out := make([]shard.ID, len(picked))
	for i, p := range picked {
		out[i] = p.id
	}
	return out
}

// rebalanceNew is the algorithm of Akka 2.6.10+ (internal.LeastShardAllocationStrategy).
func (s LeastShard) rebalanceNew(v View) []shard.ID {
	if len(v.InProgress) > 0 || !goodTimeToRebalance(v) {
		return nil
	}
	total := 0
	for i := range v.Regions {
		total += len(v.Regions[i].Shards)
	}
	if total == 0 {
		return nil
	}
	optimal := (total + len(v.Regions) - 1) / len(v.Regions)
	limit := s.newLimit(total)
	sorted := sortedBySuitability(v.Regions)

	picked := s.phase1(v, sorted, optimal, limit)
	if len(picked) == 0 {
		picked = s.phase2(v, sorted, optimal, limit)
	}
	return s.keepWorthMoving(v, picked)
}

// phase1 takes from every region holding more than optimal its oldest shards down to
// optimal, visiting regions from the most suitable (as Akka does: when the limit binds, the
// least loaded of the overloaded regions give first), at most limit in all.
func (LeastShard) phase1(v View, sorted []int, optimal, limit int) []pick {
	var picked []pick
	for _, i := range sorted {
		shards := v.Regions[i].Shards
		for _, id := range shards[:max(0, len(shards)-optimal)] {
			if len(picked) == limit {
				return picked
			}
			picked = append(picked, pick{id, i})
		}
	}
	return picked
}

// phase2 finishes what the rounding up of optimal leaves: when regions hold two or more
// fewer than optimal, as many regions holding optimal (or more) give up their oldest shard.
func (LeastShard) phase2(v View, sorted []int, optimal, limit int) []pick {
	below := 0
	for i := range v.Regions {
		below += max(0, optimal-1-len(v.Regions[i].Shards))
	}
	n := min(below, limit)
	var picked []pick
	for _, i := range sorted {
		if len(picked) == n {
			break
		}
		if shards := v.Regions[i].Shards; len(shards) >= optimal {
			picked = append(picked, pick{shards[0], i})
		}
	}
	return picked
}

// worthMoving applies Shardcake's rule to picked shards: it replays, shard by shard, the
// hand-off and the re-allocation the coordinator will do (as Plan does) and keeps a shard
// only when its new home would hold at least two fewer shards than its current one did;
// shards that would come back to the same region or only swap the imbalance stay put.
func worthMoving(v View, picked []pick) []pick {
	counts := make([]int, len(v.Regions))
	for i := range v.Regions {
		counts[i] = len(v.Regions[i].Shards)
	}
	kept := picked[:0:0]
	for _, p := range picked {
		counts[p.from]--
		to := mostSuitable(v.Regions, counts)
		if to != p.from && counts[p.from]+1-counts[to] >= 2 {
			counts[to]++
			kept = append(kept, p)
		} else {
			counts[p.from]++
		}
	}
	return kept
}

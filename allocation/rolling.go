package allocation

import (
	"slices"

	"github.com/shardmesh/shardmesh/membership"
	"github.com/shardmesh/shardmesh/shard"
)

// mixedVersions reports whether the regions run more than one app version.
func mixedVersions(v View) bool {
	for i := 1; i < len(v.Regions); i++ {
		if v.Regions[i].AppVersion.Compare(v.Regions[0].AppVersion) != 0 {
			return true
		}
	}
	return false
}

// rollingUpdate is the rebalance round of a rolling update (RollingUpdateMoves): shards move
// only from regions of older app versions to regions of the newest one, and only as many as
// the newest regions lack of their balanced share (⌈shards / regions⌉ each), at most the
// round limit, one round at a time. The least suitable old regions give first (those on
// their way out, then the oldest versions, then the most loaded), their oldest shards first.
// Allocate then puts each on the newest region with the fewest shards, so every shard moves
// once per update: never onto a member that is about to restart. Unlike the balancing
// rounds it goes on while a member is unreachable — the view holds only reachable regions,
// so an unresponsive member is neither taken from nor given to, nor waited for.
func (s LeastShard) rollingUpdate(v View) []shard.ID {
	if len(v.InProgress) > 0 || v.MemberJoining {
		return nil
	}
	total := 0
	var newest membership.Version
	for i := range v.Regions {
		total += len(v.Regions[i].Shards)
		if v.Regions[i].AppVersion.Compare(newest) > 0 {
			newest = v.Regions[i].AppVersion
		}
	}
	if total == 0 {
		return nil
	}
	optimal := (total + len(v.Regions) - 1) / len(v.Regions)
	room := 0
	for i := range v.Regions {
		if v.Regions[i].AppVersion.Compare(newest) == 0 {
			room += max(0, optimal-len(v.Regions[i].Shards))
		}
	}
	limit := s.cfg.MaxSimultaneousRebalance
	if s.cfg.RebalanceAbsoluteLimit > 0 {
		limit = s.newLimit(total)
	}
	n := min(room, limit)
	order := sortedBySuitability(v.Regions)
	slices.Reverse(order) // least suitable first
	var out []shard.ID
	for _, i := range order {
		r := &v.Regions[i]
		if r.AppVersion.Compare(newest) == 0 {
			continue
		}
		for _, id := range r.Shards {
			if len(out) == n {
				return out
			}
			out = append(out, id)
		}
	}
	return out
}

package allocation

import (
	"cmp"
	"slices"
	"strings"

	"github.com/shardmesh/shardmesh/membership"
)

// moreSuitable compares two regions as homes for a new shard, given how many shards each
// holds (na, nb: the caller may be simulating moves): negative when a is the better home.
// It is Akka's ShardSuitabilityOrdering — not on the way out, then the newest app version,
// then the fewest shards — completed by age (older first) and node id so that it is a total
// order and every decision is deterministic.
//
// Akka compares the "leaving" flags only when the two statuses differ and then stops, so a
// Joining and an Up region (or a Leaving and an Exiting one) compare as equal whatever their
// versions and shard counts. That makes its ordering depend on the order of its input; here
// the comparison carries on to version and shard count.
func moreSuitable(a *Region, na int, b *Region, nb int) int {
	if la, lb := leaving(a.Status), leaving(b.Status); la != lb {
		if la {
			return 1
		}
		return -1
	}
	if c := b.AppVersion.Compare(a.AppVersion); c != 0 {
		return c
	}
	if c := cmp.Compare(na, nb); c != 0 {
		return c
	}
	if c := cmp.Compare(age(a.UpNumber), age(b.UpNumber)); c != 0 {
		return c
	}
	return strings.Compare(string(a.Node), string(b.Node))
}

// age maps an up-number to a sort key: members not yet Up (0) sort after every Up member.
func age(upNumber uint64) uint64 {
	if upNumber == 0 {
		return ^uint64(0)
	}
	return upNumber
}

// mostSuitable returns the index in regions of the best home for a new shard, with counts[i]
// the number of shards region i holds; -1 when there are no regions.
func mostSuitable(regions []Region, counts []int) int {
	best := -1
	for i := range regions {
		if best < 0 || moreSuitable(&regions[i], counts[i], &regions[best], counts[best]) < 0 {
			best = i
		}
	}
	return best
}

// sortedBySuitability returns the regions' indexes from the best home to the worst, by their
// current number of shards.
func sortedBySuitability(regions []Region) []int {
	idx := make([]int, len(regions))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(i, j int) int {
		return moreSuitable(&regions[i], len(regions[i].Shards), &regions[j], len(regions[j].Shards))
	})
	return idx
}

// goodTimeToRebalance is Akka's isAGoodTimeToRebalance: there are regions, they all run the
// same app version (no rolling update in progress), no member is joining and none is
// unreachable.
func goodTimeToRebalance(v View) bool {
	if len(v.Regions) == 0 || v.MemberJoining || v.MemberUnreachable {
		return false
	}
	if mixedVersions(v) {
		return false
	}
	for i := range v.Regions {
		if st := v.Regions[i].Status; st == membership.Joining || st == membership.WeaklyUp {
			return false
		}
	}
	return true
}

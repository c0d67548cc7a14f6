package allocation_test

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/shardmesh/shardmesh/allocation"
	"github.com/shardmesh/shardmesh/membership"
	"github.com/shardmesh/shardmesh/shard"
)

// zoneSpread is a zone-aware custom strategy: members name their availability zone with a
// role ("zone-a", set with the `roles` setting), and shards are spread evenly over the zones
// first (whatever the number of members in each), then over the members of a zone, so that
// losing a zone loses as few shards as possible.
type zoneSpread struct{}

func zoneOf(r allocation.Region) string {
	for _, role := range r.Roles {
		if strings.HasPrefix(role, "zone-") {
			return role
		}
	}
	return "no-zone"
}

// byZone groups the regions of v by zone.
func byZone(v allocation.View) map[string][]allocation.Region {
	out := map[string][]allocation.Region{}
	for _, r := range v.Regions {
		out[zoneOf(r)] = append(out[zoneOf(r)], r)
	}
	return out
}

func shardsOf(regions []allocation.Region) int {
	n := 0
	for _, r := range regions {
		n += len(r.Shards)
	}
	return n
}

// emptiest returns the zone holding the fewest shards (ties by name), and fullest the one
// holding the most.
func emptiest(zones map[string][]allocation.Region) string {
	return slices.MinFunc(slices.Sorted(maps.Keys(zones)), func(a, b string) int {
		return cmp.Compare(shardsOf(zones[a]), shardsOf(zones[b]))
	})
}

func fullest(zones map[string][]allocation.Region) string {
	return slices.MaxFunc(slices.Sorted(maps.Keys(zones)), func(a, b string) int {
		return cmp.Compare(shardsOf(zones[a]), shardsOf(zones[b]))
	})
}

// Allocate picks the zone with the fewest shards, then its member with the fewest
// shards (LeastShard's choice within the zone).
func (zoneSpread) Allocate(requester membership.NodeID, s shard.ID, v allocation.View) membership.NodeID {
	if len(v.Regions) == 0 {
		return ""
	}
	zones := byZone(v)
	return allocation.LeastShard{}.Allocate(requester, s, allocation.View{Regions: zones[emptiest(zones)]})
}

// Rebalance moves one shard per round, the oldest of the fullest member of the fullest
// zone, while that zone holds more than one shard above the emptiest. Like the
// built-in strategies it waits while a member joins or is unreachable, and while a handoff
// is in progress.
func (zoneSpread) Rebalance(v allocation.View) []shard.ID {
	if v.MemberJoining || v.MemberUnreachable || len(v.InProgress) > 0 || len(v.Regions) == 0 {
		return nil
	}
	zones := byZone(v)
	hi, lo := zones[fullest(zones)], zones[emptiest(zones)]
	if shardsOf(hi)-shardsOf(lo) <= 1 {
		return nil
	}
	from := slices.MaxFunc(hi, func(a, b allocation.Region) int { return cmp.Compare(len(a.Shards), len(b.Shards)) })
	return from.Shards[:1]
}

// A zone-aware strategy reads each member's zone from its roles (Region.Roles). Give it to
// an entity type with shardmesh.Entity{Strategy: ...}; allocation.Plan previews a rebalance
// round with it, as `shardctl rebalance plan` does.
func Example_zoneAware() {
	v := allocation.View{Regions: []allocation.Region{
		{Node: "a1", Status: membership.Up, UpNumber: 1, Roles: []string{"zone-a"}},
		{Node: "a2", Status: membership.Up, UpNumber: 2, Roles: []string{"zone-a"}},
		{Node: "b1", Status: membership.Up, UpNumber: 3, Roles: []string{"backend", "zone-b"}},
	}}
	var s zoneSpread
	for i := range 6 {
		id := shard.ID(fmt.Sprint(i))
		node := s.Allocate("a1", id, v)
		for j := range v.Regions {
			if v.Regions[j].Node == node {
				v.Regions[j].Shards = append(v.Regions[j].Shards, id)
			}
		}
	}
	for _, r := range v.Regions {
		fmt.Printf("%s (%s): %v\n", r.Node, zoneOf(r), r.Shards)
	}
	fmt.Println("moves:", allocation.Plan(s, v))

	// Zone b's member restarted and zone a took its shards meanwhile: one shard goes back
	// per round.
	v.Regions[0].Shards = append(v.Regions[0].Shards, v.Regions[2].Shards...)
	v.Regions[2].Shards = nil
	for _, m := range allocation.Plan(s, v) {
		fmt.Printf("move shard %s from %s to %s\n", m.Shard, m.From, m.To)
	}
	// Output:
	// a1 (zone-a): [0 4]
	// a2 (zone-a): [2]
	// b1 (zone-b): [1 3 5]
	// moves: []
	// move shard 0 from a1 to b1
}

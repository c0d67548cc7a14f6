package node

import (
	"slices"
	"strings"

	"github.com/shardmesh/shardmesh/membership"
	"github.com/shardmesh/shardmesh/remember"
)

// ZoneRolePrefix marks the role that names a member's zone (cluster.zone, --zone): a member
// of zone "eu-1" has the role "zone-eu-1", as Akka names a member's data center by a
// "dc-" role. Replica sets spread over zones.
const ZoneRolePrefix = "zone-"

// ZoneOf returns the zone of a member with roles ("" for none).
func ZoneOf(roles []string) string {
	for _, r := range roles {
		if z, ok := strings.CutPrefix(r, ZoneRolePrefix); ok {
			return z
		}
	}
	return ""
}

// placementOf returns who holds what in the store among members: shards' records on
// members that are not leaving, down or removed (by their types' roles and zones), the
// metadata on the voters — the members whose grants make the serving lease and whose
// majority keep-majority keeps (View.voters, membership.Node.Voters): one set for both, so
// that where the cluster may serve, a majority of the metadata's replicas is. Leaving, departing
// (departure.go) and Down members are in it, away: their replicas count until moves take
// them out of the sets. prev's placement comes back when nothing it depends on changed.
func (c *Core) placementOf(members []membership.Member, voters []membership.NodeID, prev *View) *remember.Placement {
	placed := make([]remember.PlacedMember, 0, len(members))
	for _, m := range members {
		if m.Status == membership.Removed {
			continue
		}
		away := m.Status >= membership.Leaving || c.departing(m) // a member still, holding no new shard
		placed = append(placed, remember.PlacedMember{ID: m.Node, Zone: ZoneOf(m.Roles), Roles: m.Roles, Age: m.UpNumber,
			Voter: slices.Contains(voters, m.Node), Away: away, Down: m.Status == membership.Down})
	}
	roles := make(map[string]string, len(c.types))
	for name, t := range c.types {
		if r := t.spec.Settings.Region.Role; r != "" {
			roles[name] = r
		}
	}
	p := remember.NewPlacement(placed, c.cfg.ReplicationFactor, 0, roles)
	if prev != nil && prev.placement != nil && p.Equal(prev.placement) {
		return prev.placement
	}
	return p
}

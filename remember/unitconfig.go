package remember

import (
	"encoding/json"
	"fmt"
	"slices"
)

// UnitConfig is a shard unit's replica configuration, kept in the metadata under
// Layout.ConfigKey: the set its records live on and, while they move, the set they move to.
// Only the unit's host changes it (units.go), with writes fenced by the epoch of its shard's
// allocation, so a host whose shard has moved on can change nothing.
type UnitConfig struct {
	// Set holds the unit's records: every write acknowledged while it was the only set is
	// on a majority of it.
	Set []NodeID `json:"set"`
	// Next, during a move, is the set the records move to: reads and writes need a
	// majority of Set and of Next (joint quorums) until every record is copied, then Next
	// becomes Set.
	Next []NodeID `json:"next,omitempty"`
	// Gone are former replicas that may still hold copies of the records, to be dropped.
	Gone []NodeID `json:"gone,omitempty"`
}

// moving reports whether the records move to Next.
func (c *UnitConfig) moving() bool { return len(c.Next) > 0 }

// quorum returns what an operation on u under c needs, among the members member says are
// in the cluster: a replica that is no longer a member (removed: downed for good, or left
// out when the cluster was restarted with fewer members) holds no vote, so a set that lost
// members for good still reaches its majority among those left.
func (c *UnitConfig) quorum(u Unit, member func(NodeID) bool) quorum {
	keep := func(set []NodeID) []NodeID {
		if member == nil {
			return set
		}
		out := make([]NodeID, 0, len(set))
		for _, p := range set {
			if member(p) {
				out = append(out, p)
			}
		}
		return out
	}
	q := single(u, keep(c.Set))
	if c.moving() {
		q.sets = append(q.sets, keep(c.Next))
	}
	return q
}

// encode returns the stored form of c.
func (c *UnitConfig) encode() []byte {
	b, err := json.Marshal(c)
	if err != nil {
		panic(fmt.Sprintf("remember: encode unit config: %v", err))
	}
	return b
}

// decodeUnitConfig reads a stored configuration.
func decodeUnitConfig(b []byte) (UnitConfig, error) {
	var c UnitConfig
	if err := json.Unmarshal(b, &c); err != nil {
		return c, fmt.Errorf("replica configuration %q does not decode: %w", truncate(string(b), 200), err)
	}
	if len(c.Set) == 0 {
		return c, fmt.Errorf("replica configuration %q names no replica", truncate(string(b), 200))
	}
	return c, nil
}

// equalSets reports whether a and b hold the same members, in any order.
func equalSets(a, b []NodeID) bool {
	if len(a) != len(b) {
		return false
	}
	for _, p := range a {
		if !slices.Contains(b, p) {
			return false
		}
	}
	return true
}

// minus returns the members of a not in b.
func minus(a, b []NodeID) []NodeID {
	var out []NodeID
	for _, p := range a {
		if !slices.Contains(b, p) {
			out = append(out, p)
		}
	}
	return out
}

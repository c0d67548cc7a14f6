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
	// Gen counts the configurations of the unit: each one written is one more than the
	// one it follows (then), 1 for the first. Writes carry the generation they were routed
	// by, and a former replica that dropped its copy under generation g refuses writes of
	// the unit under an earlier one (Machine.dropped). 0: written before generations.
	Gen uint64 `json:"gen,omitempty"`
}

// then returns next as the configuration that follows c.
func (c *UnitConfig) then(next UnitConfig) UnitConfig {
	next.Gen = c.Gen + 1
	return next
}

// moving reports whether the records move to Next.
func (c *UnitConfig) moving() bool { return len(c.Next) > 0 }

// quorum returns what an operation on u under c needs: a majority of the set, and of the
// next one while the records move. Every replica of a set keeps its vote until a move takes
// it out, whether or not it is a member now: after a full-cluster restart the members not
// back yet hold writes that a majority of the others may lack. Dropping the vote of a
// member that is gone would never help either: for an odd set a majority of the rest is
// the same count, and for an even one it no longer meets every old majority.
func (c *UnitConfig) quorum(u Unit) quorum {
	q := single(u, c.Set)
	q.gen = c.Gen
	if c.moving() {
		q.sets = append(q.sets, c.Next)
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

// Votes reports whether id votes in the unit's quorums: it is in the set, or in the next.
func (c *UnitConfig) Votes(id NodeID) bool {
	return slices.Contains(c.Set, id) || slices.Contains(c.Next, id)
}

// DecodeUnitConfig reads a configuration as stored under Layout.ConfigKey.
func DecodeUnitConfig(b []byte) (UnitConfig, error) {
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

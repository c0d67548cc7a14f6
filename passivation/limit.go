package passivation

import (
	"fmt"

	"github.com/shardmesh/shardmesh/shard"
)

// Passivate asks to passivate an entity of a shard.
type Passivate[K comparable] struct {
	Shard  shard.ID
	Entity K
}

// Region holds the passivation policies of the active shards of one shard region and
// divides the region's active-entity limit evenly among them: each of n active shards may
// hold limit/n entities (rounded down, as in Akka). When a shard becomes active or stops,
// or the limit changes, every shard gets its new share, and the entities that no longer fit
// a shrunken share are returned for passivation. A Region is not safe for concurrent use.
type Region[K comparable] struct {
	settings Settings
	hash     Hasher[K]
	limit    int
	shards   []regionShard[K] // in order of activation
	byID     map[shard.ID]int
	buf      []K
}

type regionShard[K comparable] struct {
	id     shard.ID
	policy *Policy[K]
}

// NewRegion returns an empty region for the given strategy. hash is needed only with a
// frequency-sketch admission filter; use StringHash for string-like keys.
func NewRegion[K comparable](s Settings, hash Hasher[K]) (*Region[K], error) {
	if _, err := NewPolicy(s, hash); err != nil {
		return nil, err
	}
	return &Region[K]{settings: s, hash: hash, limit: s.ActiveEntityLimit, byID: make(map[shard.ID]int)}, nil
}

// StartShard activates shard id and returns its policy, re-dividing the limit; it appends to
// out the entities of the other shards that no longer fit their smaller share. Starting an
// active shard returns its policy and changes nothing.
func (r *Region[K]) StartShard(id shard.ID, out []Passivate[K]) (*Policy[K], []Passivate[K]) {
	if k, ok := r.byID[id]; ok {
		return r.shards[k].policy, out
	}
	p := newPolicy(r.settings, r.hash, r.limit/(len(r.shards)+1))
	r.byID[id] = len(r.shards)
	r.shards = append(r.shards, regionShard[K]{id: id, policy: p})
	return p, r.redivide(out)
}

// StopShard forgets shard id (stopped or handed off: its entities stop with it) and gives
// the remaining shards their larger share. Unknown shards are ignored.
func (r *Region[K]) StopShard(id shard.ID, out []Passivate[K]) []Passivate[K] {
	k, ok := r.byID[id]
	if !ok {
		return out
	}
	delete(r.byID, id)
	last := len(r.shards) - 1
	copy(r.shards[k:], r.shards[k+1:])
	r.shards[last] = regionShard[K]{}
	r.shards = r.shards[:last]
	for j := k; j < len(r.shards); j++ {
		r.byID[r.shards[j].id] = j
	}
	return r.redivide(out)
}

// SetLimit changes the region's active-entity limit (for example from an operator) and
// appends to out the entities that no longer fit. The limit must be at least 1 (validate
// input at the edge); it has no effect on a strategy without an active-entity limit.
func (r *Region[K]) SetLimit(limit int, out []Passivate[K]) []Passivate[K] {
	if limit < 1 {
		panic(fmt.Sprintf("passivation: Region.SetLimit(%d): the active-entity limit must be at least 1", limit))
	}
	r.limit = limit
	return r.redivide(out)
}

// Shard returns the policy of an active shard, or nil.
func (r *Region[K]) Shard(id shard.ID) *Policy[K] {
	if k, ok := r.byID[id]; ok {
		return r.shards[k].policy
	}
	return nil
}

// ActiveShards returns the number of active shards.
func (r *Region[K]) ActiveShards() int { return len(r.shards) }

// PerShardLimit returns each active shard's share of the limit: limit / active shards.
func (r *Region[K]) PerShardLimit() int { return r.limit / max(1, len(r.shards)) }

func (r *Region[K]) redivide(out []Passivate[K]) []Passivate[K] {
	share := r.PerShardLimit()
	for _, s := range r.shards {
		r.buf = s.policy.SetLimit(share, r.buf[:0])
		for _, e := range r.buf {
			out = append(out, Passivate[K]{Shard: s.id, Entity: e})
		}
	}
	clear(r.buf)
	return out
}

package allocation

import (
	"fmt"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/shardmesh/shardmesh/membership"
	"github.com/shardmesh/shardmesh/shard"
)

// ConsistentHashing is Akka's ConsistentHashingShardAllocationStrategy: a shard goes to the
// member that owns its id on a hash ring of the regions' members. The ring depends only on the
// set of members, never on the entity type, so with the same regions shards of the same id of
// different entity types land on the same member (colocation: a building and its devices).
// Adding or removing a member changes the owner of only about 1/N of the shards, and
// Rebalance moves exactly those whose owner is not their current region.
//
// The ring holds Config.VirtualNodes points per member. Members on their way out of the
// cluster (Leaving, Exiting, Down) are left off the ring as long as some other region
// remains, so their shards move once, to where they will stay; Akka keeps them until they
// are gone and so may allocate a shard to a member that is about to leave.
//
// Point positions are SplitMix64 outputs seeded with the 64-bit FNV-1a hash of the node id;
// a shard's position is the SplitMix64 mix of the FNV-1a hash of its id, and its owner is
// the member of the first point at or after that position, wrapping around. Any
// implementation of these few lines computes the same placement.
//
// Like Akka's, it remembers the last ring it built (about 1 ms to build for 100 members) and
// builds another only when the members change; the memo changes no answer, and a
// ConsistentHashing is safe for concurrent use. Use one per entity type, as Akka requires:
// types with different regions sharing one would rebuild the ring at every call.
type ConsistentHashing struct {
	cfg  ConsistentHashingConfig
	last atomic.Pointer[hashRing]
}

// NewConsistentHashing returns the strategy for cfg, validated (zero fields take their
// defaults).
func NewConsistentHashing(cfg ConsistentHashingConfig) (*ConsistentHashing, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &ConsistentHashing{cfg: cfg}, nil
}

// Config returns the strategy's validated configuration.
func (s *ConsistentHashing) Config() ConsistentHashingConfig { return s.cfg }

// String names the strategy and its settings, for logs and `shardctl`.
func (s *ConsistentHashing) String() string {
	return fmt.Sprintf("ConsistentHashing(rebalance-limit=%d, virtual-nodes=%d)", s.cfg.RebalanceLimit, s.cfg.VirtualNodes)
}

// Allocate returns the ring owner of the shard among v's regions; the requester plays no
// part.
func (s *ConsistentHashing) Allocate(_ membership.NodeID, id shard.ID, v View) membership.NodeID {
	if len(v.Regions) == 0 {
		return ""
	}
	return s.ring(v).nodeAt(shardPosition(id))
}

// Rebalance picks the shards whose ring owner is not the region holding them, visiting
// regions in node id order and each region's shards in allocation order, skipping those in
// progress, at most Config.RebalanceLimit of them when it is positive. Unlike LeastShard's
// new algorithm, it starts a round while other handoffs are in progress, as Akka's does.
func (s *ConsistentHashing) Rebalance(v View) []shard.ID {
	if !goodTimeToRebalance(v) {
		return nil
	}
	r := s.ring(v)
	order := make([]int, len(v.Regions))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		return strings.Compare(string(v.Regions[a].Node), string(v.Regions[b].Node))
	})
	var picked []shard.ID
	for _, i := range order {
		region := &v.Regions[i]
		here := r.index(region.Node) // -1 when off the ring: every shard of the region moves
		for _, id := range region.Shards {
			if s.cfg.RebalanceLimit > 0 && len(picked) >= s.cfg.RebalanceLimit {
				return picked
			}
			if !v.InProgress[id] && r.indexAt(shardPosition(id)) != here {
				picked = append(picked, id)
			}
		}
	}
	return picked
}

// ring returns the hash ring of v's regions that are not on their way out, or of all of them
// if every one is.
func (s *ConsistentHashing) ring(v View) *hashRing {
	anyStaying := false
	for i := range v.Regions {
		if !leaving(v.Regions[i].Status) {
			anyStaying = true
			break
		}
	}
	onRing := func(r *Region) bool { return !anyStaying || !leaving(r.Status) }
	if last := s.last.Load(); last != nil && last.hasExactly(v.Regions, onRing) {
		return last
	}
	nodes := make([]membership.NodeID, 0, len(v.Regions))
	for i := range v.Regions {
		if onRing(&v.Regions[i]) {
			nodes = append(nodes, v.Regions[i].Node)
		}
	}
	r := newHashRing(nodes, s.cfg.VirtualNodes)
	s.last.Store(r)
	return r
}

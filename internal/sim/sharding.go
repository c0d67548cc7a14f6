package sim

import (
	"fmt"
	"slices"
	"strings"

	"github.com/shardmesh/shardmesh/coordinator"
	"github.com/shardmesh/shardmesh/engine"
	"github.com/shardmesh/shardmesh/shard"
)

// extract maps an entity id to its shard with Akka's extractor over Options.NumberOfShards.
func (s *Sim) extract(id shard.EntityID) shard.ID { return s.extractorOf().ShardID(id) }

// extractorOf returns Akka's extractor over Options.NumberOfShards.
func (s *Sim) extractorOf() *shard.HashCodeExtractor {
	if s.extractor == nil {
		n := s.opts.NumberOfShards
		if n == 0 {
			n = 30
		}
		e, err := shard.NewHashCodeExtractor(n)
		if err != nil {
			panic(err)
		}
		s.extractor = e
	}
	return s.extractor
}

// observeSharding records coordinator and region events on the timeline.
func (s *Sim) observeSharding(n *Node, ev engine.TypedEvent) {
	switch e := ev.Event.(type) {
	case coordinator.Recovered:
		s.logf("%s: %s coordinator (term %d) recovered %d regions, %d shards", n.ID, ev.Type, e.Term, e.Regions, e.Shards)
	case coordinator.ShardAllocated:
		s.logf("%s: %s shard %s allocated to %s (epoch %s, %s)", n.ID, ev.Type, e.Shard, e.Region, e.Epoch, e.Cause)
		s.noteTerm(n, ev.Type, e.Epoch)
		if e.From != "" {
			s.Moves++
		}
	case coordinator.HandoffStarted:
		s.logf("%s: %s shard %s handoff from %s (%s, epoch %s)", n.ID, ev.Type, e.Shard, e.From, e.Cause, e.Epoch)
		s.checkHandoffCause(n, ev.Type, e)
	case coordinator.HandoffCompleted:
		s.logf("%s: %s shard %s handed off from %s in %v", n.ID, ev.Type, e.Shard, e.From, e.Took)
	case coordinator.HandoffFailed:
		s.logf("%s: %s shard %s handoff FAILED in phase %s, waiting for %v", n.ID, ev.Type, e.Shard, e.Phase, e.Waiting)
	case coordinator.RegionTerminated:
		s.logf("%s: %s region %s terminated (%d shards)", n.ID, ev.Type, e.Region, len(e.Shards))
	case coordinator.RebalanceRound:
		s.logf("%s: %s rebalance round: %v", n.ID, ev.Type, e.Shards)
	case engine.CoordinatorStarted:
		s.logf("%s: %s coordinator started (term %d)", n.ID, ev.Type, e.Term)
	case engine.CoordinatorStopped:
		s.logf("%s: %s coordinator stopped", n.ID, ev.Type)
	}
}

// checkShardHomes: a shard runs on at most one running member (invariant 2 as the cluster
// sees it: no shard allocated to two regions). It looks only at n's shards, against an index
// of which members host each shard: a member's shards change only in steps that process it.
func (s *Sim) checkShardHomes(n *Node) {
	if s.homes == nil {
		s.homes = newShardIndex()
	}
	s.homes.update(n)
	if !n.Running() {
		return
	}
	for _, typ := range n.E.Types() {
		for id := range n.E.Shards(typ) {
			for other := range s.homes.hosts[shardKey{typ, id}] {
				if other != n && other.Alive && other.Running() { // Running is the costly test
					s.fail("%s shard %s runs on %s and on %s", typ, id, n.ID, other.ID)
				}
			}
		}
	}
}

type shardKey struct {
	typ string
	id  shard.ID
}

// shardIndex is which members host each shard, as of each member's last step.
type shardIndex struct {
	of    map[*Node]map[shardKey]bool
	hosts map[shardKey]map[*Node]bool
}

func newShardIndex() *shardIndex {
	return &shardIndex{of: map[*Node]map[shardKey]bool{}, hosts: map[shardKey]map[*Node]bool{}}
}

// update brings n's shards in the index up to date.
func (x *shardIndex) update(n *Node) {
	prev := x.of[n]
	cur := make(map[shardKey]bool, len(prev))
	for _, typ := range n.E.Types() {
		for id := range n.E.Shards(typ) {
			k := shardKey{typ, id}
			cur[k] = true
			if !prev[k] {
				if x.hosts[k] == nil {
					x.hosts[k] = map[*Node]bool{}
				}
				x.hosts[k][n] = true
			}
		}
	}
	for k := range prev {
		if !cur[k] {
			delete(x.hosts[k], n)
		}
	}
	x.of[n] = cur
}

// checkActiveLimit: with an active-entity limit, a member never runs more entities of the
// type than the limit (those asked to stop no longer count: their stop is under way).
func (s *Sim) checkActiveLimit(n *Node) {
	for _, tc := range s.opts.Types {
		if !tc.Passivation.LimitEnabled() {
			continue
		}
		running := 0
		for _, sh := range n.E.Shards(tc.Name) {
			for _, st := range sh.Entities() {
				if st == shard.Running {
					running++
				}
			}
		}
		if running > tc.Passivation.ActiveEntityLimit {
			s.fail("%s runs %d %s entities, over the active-entity limit of %d", n.ID, running, tc.Name, tc.Passivation.ActiveEntityLimit)
		}
	}
}

// LiveEntities returns how many entity incarnations of typ live on running members.
func (s *Sim) LiveEntities(typ string) int {
	count := 0
	for _, n := range s.Nodes() {
		if !n.Running() || n.entities == nil {
			continue
		}
		for k := range n.entities.live {
			if k.typ == typ {
				count++
			}
		}
	}
	return count
}

// ShardCounts returns, per running member, how many shards of typ it hosts.
func (s *Sim) ShardCounts(typ string) map[string]int {
	out := map[string]int{}
	for _, n := range s.nodes[1:] {
		if n.Running() {
			out[string(n.ID)] = len(n.E.Shards(typ))
		}
	}
	return out
}

// Spread returns max − min of the shards per running, non-proxy member.
func (s *Sim) Spread(typ string) int {
	lo, hi := -1, 0
	for _, c := range s.ShardCounts(typ) {
		if lo < 0 || c < lo {
			lo = c
		}
		hi = max(hi, c)
	}
	return hi - max(lo, 0)
}

// DescribeShards prints, per running member, the shards of typ it hosts.
func (s *Sim) DescribeShards(typ string) string {
	var b strings.Builder
	for _, n := range s.nodes[1:] {
		if !n.Running() {
			continue
		}
		ids := make([]string, 0)
		for id := range n.E.Shards(typ) {
			ids = append(ids, string(id))
		}
		slices.Sort(ids)
		coord := ""
		if n.E.Coordinator(typ) != nil {
			coord = " (coordinator)"
		}
		fmt.Fprintf(&b, "%s%s: %d shards\n", n.ID, coord, len(ids))
	}
	return b.String()
}

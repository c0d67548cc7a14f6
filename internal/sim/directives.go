package sim

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/shardmesh/shardmesh/coordinator"
	"github.com/shardmesh/shardmesh/engine"
	"github.com/shardmesh/shardmesh/membership"
	"github.com/shardmesh/shardmesh/shard"
)

// The operator's directives, as the replicated store holds them: one cluster-wide set. A
// node reads them a little after it starts (its coordinators serve nothing before, as
// engine.Config.AwaitDirectives asks) and learns each change a little after it is made, at
// a random delay per node (the announcement and the periodic refresh).

// directiveDelay is how long a node takes to read the directives.
func (s *Sim) directiveDelay() time.Duration {
	return time.Duration(1+s.auxRng.IntN(100)) * time.Millisecond
}

// readDirectives gives node n the directives after a read's delay, if it still runs the
// same incarnation then.
func (s *Sim) readDirectives(n *Node) {
	inc := n.Incarnation
	s.schedule(s.directiveDelay(), func() {
		if !n.Alive || n.Incarnation != inc {
			return
		}
		if n.Paused {
			n.held = append(n.held, func() { n.E.SetDirectives(s.now, s.directives); s.process(n) })
			return
		}
		n.E.SetDirectives(s.now, s.directives)
		s.process(n)
	})
}

// SetDirectives stores a new set of directives; every running node follows it soon.
func (s *Sim) SetDirectives(d engine.Directives) {
	s.directives = d
	s.logf("directives: %s", describeDirectives(d))
	for _, n := range s.Nodes() {
		if n.Alive {
			s.readDirectives(n)
		}
	}
}

// Directives returns the directives in force (a copy to change and set again).
func (s *Sim) Directives() engine.Directives {
	d := engine.Directives{Draining: maps.Clone(s.directives.Draining), RebalancePaused: s.directives.RebalancePaused,
		Pins: map[string]map[shard.ID]membership.NodeID{}, Stopped: maps.Clone(s.directives.Stopped)}
	for typ, pins := range s.directives.Pins {
		d.Pins[typ] = maps.Clone(pins)
	}
	if d.Draining == nil {
		d.Draining = map[membership.NodeID]bool{}
	}
	if d.Stopped == nil {
		d.Stopped = map[string]bool{}
	}
	return d
}

func describeDirectives(d engine.Directives) string {
	out := fmt.Sprintf("draining %v paused %v stopped %v", slices.Sorted(maps.Keys(d.Draining)), d.RebalancePaused, slices.Sorted(maps.Keys(d.Stopped)))
	for _, typ := range slices.Sorted(maps.Keys(d.Pins)) {
		for _, s := range slices.Sorted(maps.Keys(d.Pins[typ])) {
			out += fmt.Sprintf(" pin %s/%s→%s", typ, s, d.Pins[typ][s])
		}
	}
	return out
}

// checkDirectives reports how the running cluster fails the directives in force: a drained
// member that hosts shards, a pinned shard away from its running, undrained pin, a shard of
// a stopped type that runs.
func (s *Sim) checkDirectives(typ string) error {
	d := s.directives
	for _, n := range s.Nodes() {
		if !n.Running() {
			continue
		}
		shards := n.E.Shards(typ)
		if d.Draining[n.ID] && len(shards) > 0 {
			return fmt.Errorf("drained %s hosts %d shards", n.ID, len(shards))
		}
		if d.Stopped[typ] && len(shards) > 0 {
			return fmt.Errorf("%s hosts %d shards of stopped type %s", n.ID, len(shards), typ)
		}
	}
	for _, sh := range slices.Sorted(maps.Keys(d.Pins[typ])) {
		pin := d.Pins[typ][sh]
		p := s.byID[pin]
		if p == nil || !p.Running() || d.Draining[pin] || d.Stopped[typ] || p.M.Self().Status != membership.Up {
			continue
		}
		if _, ok := p.E.Shards(typ)[sh]; !ok {
			return fmt.Errorf("shard %s pinned to %s does not run there", sh, pin)
		}
	}
	return nil
}

// checkHandoffCause: as the coordinator knows the directives when it starts a handoff,
// rebalancing never moves a pinned shard and runs not at all while paused.
func (s *Sim) checkHandoffCause(n *Node, typ string, h coordinator.HandoffStarted) {
	c := n.E.Coordinator(typ)
	if c == nil || h.Cause != coordinator.CauseRebalance {
		return
	}
	d, _ := c.Directives()
	if _, pinned := d.Pins[h.Shard]; pinned {
		s.fail("%s: the %s coordinator rebalanced shard %s, pinned to %s", n.ID, typ, h.Shard, d.Pins[h.Shard])
	}
	if d.RebalancePaused {
		s.fail("%s: the %s coordinator rebalanced shard %s while rebalancing is paused", n.ID, typ, h.Shard)
	}
}

package sim

import (
	"encoding/binary"
	"fmt"
	"maps"
	"slices"

	"github.com/libp2p/go-libp2p/core/crypto"

	"github.com/shardmesh/shardmesh/coordinator"
	"github.com/shardmesh/shardmesh/datadir"
	"github.com/shardmesh/shardmesh/engine"
	"github.com/shardmesh/shardmesh/membership"
	"github.com/shardmesh/shardmesh/node"
	"github.com/shardmesh/shardmesh/shard"
)

// The operator's directives, as the members store them: SetDirectives changes them through
// a running member (node.ChangeDirective: a write to a quorum, an announcement on the
// sharding events, a read back), and every member reads them from the store (at its start,
// on an announcement, and every few seconds). What a check compares with is what the stores
// hold (storedDirectives), not what was asked for: a change whose write failed may or may
// not have been stored.

// SetDirectives changes the stored directives to d, through the first running member; a
// change that cannot be written now is logged and not retried.
func (s *Sim) SetDirectives(d engine.Directives) {
	s.logf("directives: %s", describeDirectives(d))
	var via *Node
	for _, n := range s.Nodes() {
		if n.Running() {
			via = n
			break
		}
	}
	if via == nil {
		s.logf("directives not changed: no member runs")
		return
	}
	for _, ch := range directiveChanges(s.storedDirectives(), d) {
		s.changeDirective(via, ch, nil)
	}
}

// changeDirective stores change ch through member via, signed with key (nil: unsigned, as
// a program without an admin identity makes it).
func (s *Sim) changeDirective(via *Node, ch node.DirectiveChange, key crypto.PrivKey) {
	s.nonces++ // a nonce of the run's own, not the process's random bytes: the same every run
	signed, err := node.SignDirective(ch, key, via.ID, s.now, binary.BigEndian.AppendUint64(make([]byte, 8), s.nonces))
	if err != nil {
		panic(err)
	}
	s.input(via, via.Incarnation, node.ChangeDirective{Signed: signed, Done: func(err error) {
		if err != nil {
			s.logf("%s: directive %s not changed: %v", via.ID, ch, err)
		}
	}})
}

// directiveChanges returns the changes that turn directives from into to.
func directiveChanges(from, to engine.Directives) []node.DirectiveChange {
	var out []node.DirectiveChange
	for _, m := range slices.Sorted(maps.Keys(from.Draining)) {
		if !to.Draining[m] {
			out = append(out, node.DirectiveChange{Kind: "drain", Node: m, Undo: true})
		}
	}
	for _, m := range slices.Sorted(maps.Keys(to.Draining)) {
		if !from.Draining[m] {
			out = append(out, node.DirectiveChange{Kind: "drain", Node: m})
		}
	}
	if from.RebalancePaused != to.RebalancePaused {
		out = append(out, node.DirectiveChange{Kind: "pause", Undo: !to.RebalancePaused})
	}
	types := slices.Sorted(maps.Keys(from.Pins))
	for _, typ := range slices.Sorted(maps.Keys(to.Pins)) {
		if !slices.Contains(types, typ) {
			types = append(types, typ)
		}
	}
	for _, typ := range types {
		shards := map[shard.ID]bool{}
		for sh := range from.Pins[typ] {
			shards[sh] = true
		}
		for sh := range to.Pins[typ] {
			shards[sh] = true
		}
		for _, sh := range slices.Sorted(maps.Keys(shards)) {
			a, inFrom := from.Pins[typ][sh]
			b, inTo := to.Pins[typ][sh]
			switch {
			case inTo && (!inFrom || a != b):
				out = append(out, node.DirectiveChange{Kind: "pin", Type: typ, Shard: sh, Node: b})
			case inFrom && !inTo:
				out = append(out, node.DirectiveChange{Kind: "pin", Type: typ, Shard: sh, Undo: true})
			}
		}
	}
	for _, typ := range slices.Sorted(maps.Keys(from.Stopped)) {
		if !to.Stopped[typ] {
			out = append(out, node.DirectiveChange{Kind: "stop", Type: typ, Undo: true})
		}
	}
	for _, typ := range slices.Sorted(maps.Keys(to.Stopped)) {
		if !from.Stopped[typ] {
			out = append(out, node.DirectiveChange{Kind: "stop", Type: typ})
		}
	}
	return out
}

// storedDirectives returns the directives as the running members' stores hold them
// together: what they read once anti-entropy has spread them.
func (s *Sim) storedDirectives() engine.Directives {
	return node.ParseDirectives(s.storedRecords(datadir.Prefix(datadir.FamilyDirective), false), s.opts.Trust, s.opts.Logger)
}

// Directives returns the directives the stores hold (a copy to change and set again).
func (s *Sim) Directives() engine.Directives {
	d := s.storedDirectives()
	if d.Draining == nil {
		d.Draining = map[membership.NodeID]bool{}
	}
	if d.Stopped == nil {
		d.Stopped = map[string]bool{}
	}
	if d.Pins == nil {
		d.Pins = map[string]map[shard.ID]membership.NodeID{}
	}
	return d
}

// directivesFollowed reports how a running member's directives in force differ from those
// the stores hold (nil when none does): a change whose write failed its quorum may still be
// stored, and the members that missed its announcement follow it at their next read.
func (s *Sim) directivesFollowed() error {
	want := describeDirectives(s.storedDirectives())
	for _, n := range s.Nodes() {
		if !n.Running() {
			continue
		}
		d, _ := n.E.Directives()
		if got := describeDirectives(d); got != want {
			return fmt.Errorf("%s follows %s, the stores hold %s", n.ID, got, want)
		}
	}
	return nil
}

func describeDirectives(d engine.Directives) string {
	set := func(m map[string]bool) []string { // the keys that are true
		var out []string
		for _, k := range slices.Sorted(maps.Keys(m)) {
			if m[k] {
				out = append(out, k)
			}
		}
		return out
	}
	draining := map[string]bool{}
	for id, on := range d.Draining {
		draining[string(id)] = on
	}
	out := fmt.Sprintf("draining %v paused %v stopped %v", set(draining), d.RebalancePaused, set(d.Stopped))
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
	d := s.storedDirectives()
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

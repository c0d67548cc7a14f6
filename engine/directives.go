package engine

import (
	"time"

	"github.com/shardmesh/shardmesh/coordinator"
	"github.com/shardmesh/shardmesh/membership"
	"github.com/shardmesh/shardmesh/shard"
)

// Directives are the operator's standing orders for the whole cluster, as read from the
// replicated store: drained members, paused rebalancing, pinned shards and stopped types.
// Each coordinator gets its type's part (coordinator.Directives); each region learns whether
// its type is out of service.
type Directives struct {
	Draining        map[membership.NodeID]bool
	RebalancePaused bool
	Pins            map[string]map[shard.ID]membership.NodeID // by entity type
	Stopped         map[string]bool                           // entity types out of service
}

// ForType returns the coordinator's part of d for entity type typ.
func (d Directives) ForType(typ string) coordinator.Directives {
	return coordinator.Directives{Draining: d.Draining, RebalancePaused: d.RebalancePaused, Pins: d.Pins[typ], Stopped: d.Stopped[typ]}
}

// SetDirectives gives the engine the operator's directives (a complete set, replacing the
// last). Coordinators that start here later get them at once; with Config.AwaitDirectives a
// coordinator serves nothing until this was called once.
func (e *Engine) SetDirectives(now time.Time, d Directives) {
	e.now = now
	e.dir, e.dirKnown = d, true
	for _, n := range e.names {
		t := e.types[n]
		t.region.SetOutOfService(now, d.Stopped[n])
		if t.coord != nil {
			t.coord.SetDirectives(now, d.ForType(n))
		}
	}
	e.settle()
}

// Directives returns the directives in force here, and whether any were given.
func (e *Engine) Directives() (Directives, bool) { return e.dir, e.dirKnown }

package node

import (
	"context"
	"time"

	"github.com/shardmesh/shardmesh/coordinator"
	"github.com/shardmesh/shardmesh/shard"
)

// HandoffView is what this member knows of the handoffs of one entity type: those its
// coordinator runs (if it runs here), and, for every shard in handoff anywhere as far as the
// regions here know, the messages buffered here and the entities still stopping here.
type HandoffView struct {
	Type string
	// Coordinated are the handoffs of the coordinator running here (nil if it does not).
	Coordinated []coordinator.Handoff
	// Local are the shards in handoff that this member buffers messages for or stops.
	Local []LocalHandoff
	// ForceStopAfter is how long a handoff waits for entities before stopping them by force.
	ForceStopAfter time.Duration
}

// LocalHandoff is one shard's handoff as this member sees it.
type LocalHandoff struct {
	Shard shard.ID
	// Buffered messages wait here for the shard's next home.
	Buffered int
	// Hosted: the shard runs here and is stopping; Stragglers are its entities that have not
	// stopped yet, StoppingFor how long it has been stopping.
	Hosted      bool
	Stragglers  []shard.EntityID
	StoppingFor time.Duration
}

// Handoffs returns what this member knows of the handoffs of types (every type when empty).
func (n *Node) Handoffs(ctx context.Context, types []string) ([]HandoffView, error) {
	if len(types) == 0 {
		types = n.TypeNames()
	}
	return onLoop(ctx, n, func(now time.Time, c *Core) ([]HandoffView, error) {
		var out []HandoffView
		for _, typ := range types {
			r := c.eng.Region(typ)
			if r == nil {
				continue
			}
			v := HandoffView{Type: typ, ForceStopAfter: c.eng.ShardConfig(typ).ForceStopAfter()}
			if co := c.eng.Coordinator(typ); co != nil {
				v.Coordinated = co.Handoffs()
			}
			seen := map[shard.ID]bool{}
			for _, h := range v.Coordinated {
				seen[h.Shard] = true
			}
			for s := range r.HandingOff() {
				seen[s] = true
			}
			for s, stopping := range r.LocalShards() {
				if stopping {
					seen[s] = true
				}
			}
			for s := range seen {
				lh := LocalHandoff{Shard: s, Buffered: r.BufferedFor(s)}
				if sh := c.eng.Shards(typ)[s]; sh != nil && sh.State() == shard.StateDraining {
					lh.Hosted, lh.Stragglers, lh.StoppingFor = true, sh.Stragglers(), now.Sub(sh.DrainingSince())
				}
				v.Local = append(v.Local, lh)
			}
			out = append(out, v)
		}
		return out, nil
	})
}

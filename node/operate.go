package node

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/shardmesh/shardmesh/allocation"
	"github.com/shardmesh/shardmesh/coordinator"
	"github.com/shardmesh/shardmesh/datadir"
	"github.com/shardmesh/shardmesh/membership"
	"github.com/shardmesh/shardmesh/remember"
	"github.com/shardmesh/shardmesh/shard"
)

// NotCoordinatorError says that the entity type's coordinator runs on another member.
type NotCoordinatorError struct {
	Type        string
	Coordinator membership.NodeID // "" when none is known
}

func (e *NotCoordinatorError) Error() string {
	if e.Coordinator == "" {
		return fmt.Sprintf("no coordinator of %s is known yet", e.Type)
	}
	return fmt.Sprintf("the coordinator of %s runs on %s", e.Type, e.Coordinator)
}

// Plan is the dry run of a rebalance of entity type typ by its coordinator, which must run
// here (else a *NotCoordinatorError names where it runs); paused reports that rebalancing
// is paused. See coordinator.Coordinator.Plan.
func (n *Node) Plan(ctx context.Context, typ string, change coordinator.PlanChange) (moves []allocation.Move, paused bool, err error) {
	if _, err := n.core.Sender(typ); err != nil && errors.Is(err, ErrUnknownType) {
		return nil, false, err
	}
	_, err = onLoop(ctx, n, func(_ time.Time, c *Core) (struct{}, error) {
		co := c.eng.Coordinator(typ)
		if co == nil {
			coord := membership.NodeID("")
			if r := c.eng.Region(typ); r != nil {
				coord = r.Coordinator()
			}
			return struct{}{}, &NotCoordinatorError{Type: typ, Coordinator: coord}
		}
		d, _ := co.Directives()
		paused = d.RebalancePaused
		moves, err = co.Plan(change)
		return struct{}{}, err
	})
	return moves, paused, err
}

// RememberedCounts counts the remembered entities of each shard of entity type typ (a
// majority read of the store).
func (n *Node) RememberedCounts(ctx context.Context, typ string) (map[shard.ID]int, error) {
	prefix := datadir.Prefix(datadir.FamilyEntity, typ)
	recs, err := n.store.Scan(ctx, prefix)
	if err != nil {
		return nil, err
	}
	out := map[shard.ID]int{}
	for _, r := range recs {
		s, _, ok := strings.Cut(strings.TrimPrefix(r.Key, prefix), datadir.Sep)
		if ok {
			out[shard.ID(s)]++
		}
	}
	return out, nil
}

// removeBatch is how many tombstones one store write carries.
const removeBatch = 4096

// RemoveTypeData removes the stored data of entity type typ (datadir.TypeDataPrefixes, with
// state if asked) through the replicated store: every record gets a tombstone, acknowledged
// by a write quorum, so a member that is down now drops the data when it catches up. It refuses unless the type is
// out of service here (`shardctl types stop`; the caller checks the other members). With
// dryRun it only counts. progress is called after each batch.
func (n *Node) RemoveTypeData(ctx context.Context, typ string, state, dryRun bool, progress func(found, removed int)) (found, removed int, err error) {
	if !n.core.typeStopped(typ) {
		return 0, 0, fmt.Errorf("entity type %s is in service: stop it first (shardctl types stop %s)", typ, typ)
	}
	var recs []remember.Record
	for _, prefix := range datadir.TypeDataPrefixes(typ, state) {
		rs, err := n.store.Scan(ctx, prefix)
		if err != nil {
			return 0, 0, fmt.Errorf("read the data of %s: %w", typ, err)
		}
		recs = append(recs, rs...)
	}
	found = len(recs)
	progress(found, 0)
	if dryRun {
		return found, 0, nil
	}
	// A tombstone carries its record's epoch, which the record's fence allows; a key whose
	// floor was raised since (an incarnation read it and never wrote) refuses it, naming
	// the epoch it needs: the batch is written again with that one.
	ws := make([]remember.Write, 0, removeBatch)
	for len(recs) > 0 {
		batch := recs[:min(removeBatch, len(recs))]
		recs = recs[len(batch):]
		ws = ws[:0]
		for _, r := range batch {
			ws = append(ws, remember.Write{Key: r.Key, Delete: true, Epoch: r.Version.Epoch})
		}
		for attempt := 0; ; attempt++ {
			err := n.store.Write(ctx, ws...)
			var fenced *remember.FencedError
			if errors.As(err, &fenced) && attempt < len(ws) {
				for i := range ws {
					if ws[i].Key == fenced.Key {
						ws[i].Epoch = max(ws[i].Epoch, fenced.Need)
					}
				}
				continue
			}
			if err != nil {
				return found, removed, fmt.Errorf("remove the data of %s (%d of %d records removed): %w", typ, removed, found, err)
			}
			break
		}
		removed += len(batch)
		progress(found, removed)
	}
	n.log.Info("removed the stored data of an entity type", "type", typ, "records", removed)
	return found, removed, nil
}

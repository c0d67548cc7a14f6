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

// RememberedCounts counts the remembered entities of each shard of entity type typ, read
// from every member (the shards' replica sets span the cluster). When members did not
// answer, the counts are partial: err is a *PartialError naming them, with the counts.
func (n *Node) RememberedCounts(ctx context.Context, typ string) (map[shard.ID]int, error) {
	prefix := datadir.Prefix(datadir.FamilyEntity, typ)
	recs, missing, err := n.store.ScanAll(ctx, prefix)
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
	if len(missing) > 0 {
		return out, &PartialError{What: "remembered entities of " + typ, Missing: missing}
	}
	return out, nil
}

// PartialError says that a read across the cluster lacks what only Missing hold: they did
// not answer in time. The result it comes with is partial.
type PartialError struct {
	What    string
	Missing []membership.NodeID
}

func (e *PartialError) Error() string {
	ids := make([]string, len(e.Missing))
	for i, id := range e.Missing {
		ids[i] = string(id)
	}
	return fmt.Sprintf("partial %s: no answer from %s", e.What, strings.Join(ids, ", "))
}

// removeBatch is how many tombstones one store write carries.
const removeBatch = 4096

// RemoveTypeData removes the stored data of entity type typ (datadir.TypeDataPrefixes, with
// state if asked) through the replicated store: every record gets a tombstone, acknowledged
// by a write quorum, so a member that is down now drops the data when it catches up. It refuses unless the type is
// out of service here (`shardctl types stop`; the caller checks the other members). With
// dryRun it only counts. progress is called after each batch.
func (n *Node) RemoveTypeData(ctx context.Context, typ string, scope DataScope, state, dryRun bool, progress func(found, removed int)) (found, removed int, err error) {
	if !n.core.typeStopped(typ) {
		return 0, 0, fmt.Errorf("entity type %s is in service: stop it first (shardctl types stop %s)", typ, typ)
	}
	t := n.core.Registered(typ)
	if t == nil {
		return 0, 0, unknownType(typ)
	}
	sels, err := scopeSelection(typ, t.spec.Extractor, scope, state)
	if err != nil {
		return 0, 0, err
	}
	var recs []remember.Record
	for _, sel := range sels {
		rs, err := n.scanUnitOrAll(ctx, sel.prefix, "data of "+typ) // partial: what only the others hold would stay
		if err != nil {
			return 0, 0, fmt.Errorf("read the data of %s: %w", typ, err)
		}
		for _, r := range rs {
			if sel.keep == nil || sel.keep(r.Key) {
				recs = append(recs, r)
			}
		}
	}
	found = len(recs)
	progress(found, 0)
	if dryRun {
		return found, 0, nil
	}
	defer n.prefetch.invalidatePrefix(datadir.Prefix(datadir.FamilyState, typ)) // states read before the removal
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
	n.log.Info("removed the stored data of an entity type", "type", typ, "scope", scope.String(), "records", removed)
	return found, removed, nil
}

// DataScope narrows a removal of a type's data below the type: one shard's (its remembered
// shard and entities, placement history and reminders, and with state the durable state of
// its entities), or one entity's (its remembered entity and reminders, and with state its
// durable state). The zero value is the whole type.
type DataScope struct {
	Shard  shard.ID
	Entity shard.EntityID
}

// String names the scope for logs and answers.
func (s DataScope) String() string {
	switch {
	case s.Entity != "":
		return "entity " + string(s.Entity)
	case s.Shard != "":
		return "shard " + string(s.Shard)
	}
	return "every shard"
}

// keySel is one scan of a removal: the keys under prefix that keep accepts (nil: all).
type keySel struct {
	prefix string
	keep   func(key string) bool
}

// scopeSelection returns the scans that select type typ's data in scope.
func scopeSelection(typ string, ex shard.Extractor, scope DataScope, state bool) ([]keySel, error) {
	exact := func(k string) keySel { return keySel{prefix: k, keep: func(key string) bool { return key == k }} }
	reminderOf := func(e shard.EntityID) func(string) bool {
		return func(key string) bool {
			r, err := ParseReminder(typ, remember.Record{Key: key, Value: []byte("{}")})
			return err == nil && r.Entity == e
		}
	}
	switch {
	case scope.Shard != "" && scope.Entity != "":
		return nil, errors.New("name a shard or an entity, not both")
	case scope.Entity != "":
		e := scope.Entity
		s := ex.ShardID(e)
		out := []keySel{exact(datadir.Key(datadir.FamilyEntity, typ, string(s), string(e))),
			{prefix: datadir.Prefix(datadir.FamilyReminder, typ, string(s), string(e)), keep: reminderOf(e)}}
		if state {
			out = append(out, exact(StateKey(typ, s, e)))
		}
		return out, nil
	case scope.Shard != "":
		s := scope.Shard
		if c, ok := ex.(shard.IDChecker); ok {
			if err := c.CheckShard(s); err != nil {
				return nil, err
			}
		}
		out := []keySel{exact(datadir.Key(datadir.FamilyShard, typ, string(s))),
			{prefix: datadir.Prefix(datadir.FamilyEntity, typ, string(s))},
			{prefix: datadir.Prefix(datadir.FamilyHistory, typ, string(s))},
			{prefix: datadir.Prefix(datadir.FamilyReminder, typ, string(s))}}
		if state {
			out = append(out, keySel{prefix: datadir.Prefix(datadir.FamilyState, typ, string(s))})
		}
		return out, nil
	}
	var out []keySel
	for _, p := range datadir.TypeDataPrefixes(typ, state) {
		out = append(out, keySel{prefix: p})
	}
	return out, nil
}

package node

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/shardmesh/shardmesh/datadir"
	"github.com/shardmesh/shardmesh/membership"
	"github.com/shardmesh/shardmesh/remember"
	"github.com/shardmesh/shardmesh/shard"
)

// StoreConfig configures the member's replica of the replicated store (package remember):
// remembered entities, reminders and durable entity state on each shard's replica set, the
// cluster metadata (the split-brain resolver's lease among it) on the voters.
type StoreConfig struct {
	// ReplicationFactor (sharding.store.replication-factor) is how many members hold a
	// shard's records: its host and others of its type's role, spread over zones; 0:
	// remember.DefaultReplicationFactor (3). Reads and writes need a majority of them.
	ReplicationFactor int
	// MaxMoves (sharding.store.max-simultaneous-moves) bounds the moves of replica sets a
	// member runs at once; 0: remember.DefaultMaxMoves.
	MaxMoves int
	// Timeout bounds one store round (updating-state-timeout); default 5 s.
	Timeout time.Duration
	// MinFreeSpace is the reserve of free disk space the store keeps (store.min-free-space),
	// in bytes: below it writes are refused. 0: remember.DefaultMinFreeSpace (256 MiB);
	// negative: none.
	MinFreeSpace int64
	// RebuildDamaged (store.rebuild-damaged): a store found damaged at start is moved aside
	// and refilled from the peers instead of failing the start.
	RebuildDamaged bool
}

// DefaultStoreTimeout bounds one store round by default (updating-state-timeout).
const DefaultStoreTimeout = 5 * time.Second

// MachineConfig is the store machine's configuration of member self with these settings:
// the layout, moves and timeout a member's store runs with (the simulation runs its
// members' stores with it too).
func (sc StoreConfig) MachineConfig(self membership.NodeID) remember.MachineConfig {
	timeout := sc.Timeout
	if timeout == 0 {
		timeout = DefaultStoreTimeout
	}
	return remember.MachineConfig{Self: self, Layout: StoreLayout{}, MaxMoves: sc.MaxMoves, Timeout: timeout,
		Gated: true} // only admitted members speak the replica protocol
}

// openStore opens the member's replica in <data-dir>/store.
func (n *Node) openStore(ctx context.Context) error {
	mc := n.cfg.Store.MachineConfig(n.self.Node)
	reserve := n.cfg.Store.MinFreeSpace
	if reserve < 0 {
		reserve = remember.NoMinFreeSpace
	}
	if err := n.upgradeStoreLayout(); err != nil {
		return err
	}
	st, err := n.openStoreRebuilding(func() (*remember.Store, error) {
		return remember.Open(ctx, remember.Config{
			Dir:            n.dir.Store(),
			Host:           n.host,
			Placement:      n.placement,
			Layout:         mc.Layout,
			MaxMoves:       mc.MaxMoves,
			Timeout:        mc.Timeout,
			Logger:         n.log, // the store adds component=store
			Metrics:        n.cfg.Metrics,
			MinFreeSpace:   reserve,
			RefillMarker:   n.dir.File(datadir.RefillFile),
			MetaSeedMarker: n.dir.File(datadir.MetaSeedFile),
			Returning:      n.self.Incarnation > 1,
			Broken:         n.fail,
			Admitted:       n.admittedMembers,
			Refused:        func(from membership.NodeID) { n.refused(from, remember.Protocol) },
			Landed:         n.storeLanded,
		})
	})
	if err != nil {
		return n.storeOpenError(err)
	}
	n.store = st
	return nil
}

// placement returns who holds what as this member sees the membership now (the View's):
// the same pointer while nothing changes.
func (n *Node) placement() *remember.Placement {
	if v := n.View(); v != nil {
		return v.placement
	}
	return nil
}

// admittedMembers lists the members that may send replica frames: the admitted members of
// the membership (core_admission.go). The same slice comes back while they do not change.
func (n *Node) admittedMembers() []membership.NodeID {
	if v := n.View(); v != nil {
		return v.admitted
	}
	return nil
}

// admittedOf returns the members that may speak the member protocols (core_admission.go),
// and every member's status, reusing prev's when the same members are admitted and there
// are as many.
func admittedOf(members []membership.Member, prev *View) ([]membership.NodeID, map[membership.NodeID]membership.Status) {
	var was []membership.NodeID
	if prev != nil {
		was = prev.admitted
	}
	nodes := nodesWhere(members, was, func(m membership.Member) bool { return m.Status < membership.Down })
	if prev != nil && prev.statuses != nil && len(prev.Members) == len(members) && len(nodes) == len(was) && (len(nodes) == 0 || &nodes[0] == &was[0]) {
		return nodes, prev.statuses
	}
	statuses := make(map[membership.NodeID]membership.Status, len(members))
	for _, m := range members {
		statuses[m.Node] = m.Status
	}
	return nodes, statuses
}

// nodesWhere returns the members keep keeps, in order: prev itself when it holds just those.
func nodesWhere(members []membership.Member, prev []membership.NodeID, keep func(membership.Member) bool) []membership.NodeID {
	if prev != nil {
		i := 0
		for _, m := range members {
			if !keep(m) {
				continue
			}
			if i >= len(prev) || prev[i] != m.Node {
				i = -1
				break
			}
			i++
		}
		if i == len(prev) {
			return prev
		}
	}
	nodes := make([]membership.NodeID, 0, len(members))
	for _, m := range members {
		if keep(m) {
			nodes = append(nodes, m.Node)
		}
	}
	return nodes
}

// StateKey is the store key of an entity's durable state: under its shard, so that it
// lives on the shard's replica set (StoreLayout).
func StateKey(typ string, s shard.ID, e shard.EntityID) string {
	return datadir.Key(datadir.FamilyState, typ, string(s), string(e))
}

// ErrNoState is LoadState finding no durable state for the entity yet.
var ErrNoState = errors.New("no state stored")

// LoadState reads the entity's durable state from a quorum of replicas and fences it with
// the epoch of the incarnation's shard allocation: from now on a write of the entity's state
// from an incarnation of an earlier allocation is refused. Load once, when the incarnation
// starts (its first message), and keep the state in memory.
func (c *EntityContext) LoadState(ctx context.Context) ([]byte, error) { return c.e.LoadState(ctx, c) }

// SaveState stores the entity's durable state on a quorum of replicas before it returns:
// acknowledge what changed only after it. A write from an incarnation whose shard has since
// moved is refused (remember.ErrFenced).
func (c *EntityContext) SaveState(ctx context.Context, state []byte) error {
	return c.e.SaveState(ctx, c, state)
}

// loadState is LoadState on this member's entity workers.
func (n *Node) loadState(ctx context.Context, c *EntityContext) ([]byte, error) {
	var rec remember.Record
	var found bool
	key := StateKey(c.Type(), c.Shard, c.Entity)
	n.prefetch.markLoads(c.Type())
	span := n.core.startStore(c.turnSpan(), "load")
	var err error
	if ps := n.prefetch.take(key, uint64(c.Epoch)); ps != nil && n.takePrefetched(ctx, ps) {
		rec, found, err = ps.rec, ps.found, n.servingFor(ctx)
	} else {
		err = n.stateRound(ctx, func() (err error) {
			rec, found, err = n.store.GetFenced(ctx, key, uint64(c.Epoch))
			return err
		})
	}
	endSpan(span, err)
	switch {
	case err != nil:
		return nil, fmt.Errorf("load the state of %s %s: %w", c.Type(), c.Entity, err)
	case !found || rec.Deleted:
		return nil, ErrNoState
	}
	return rec.Value, nil
}

// takePrefetched waits for an early read of an incarnation's state (prefetch.go), lending
// the entity's worker meanwhile; false when it failed or ctx ended (the incarnation then
// reads for itself).
func (n *Node) takePrefetched(ctx context.Context, ps *prefetchedState) bool {
	n.pool.Block()
	defer n.pool.Unblock()
	return ps.wait(ctx) && ps.err == nil
}

// saveState is SaveState on this member's entity workers.
func (n *Node) saveState(ctx context.Context, c *EntityContext, state []byte) error {
	if c.firingStale() {
		// A reminder's firing whose home handed the shard off while it was handled: its
		// save would be fenced anyway; refused here, the handling stops before it writes.
		return fmt.Errorf("save the state of %s %s: %w", c.Type(), c.Entity, ErrNotHome)
	}
	key := StateKey(c.Type(), c.Shard, c.Entity)
	n.prefetch.invalidate(key) // a read made before this save is stale after it
	span := n.core.startStore(c.turnSpan(), "save")
	err := n.stateRound(ctx, func() error {
		return n.store.Write(ctx, remember.Write{Key: key, Value: state, Epoch: uint64(c.Epoch)})
	})
	endSpan(span, err)
	if err != nil {
		return fmt.Errorf("save the state of %s %s: %w", c.Type(), c.Entity, err)
	}
	return nil
}

// stateRound runs a round of an entity's state: only under the serving lease (servingFor),
// lending the entity's worker to the others while it waits (the store round waits for
// replicas and an fsync, not for this CPU), and once more if it missed its quorum.
func (n *Node) stateRound(ctx context.Context, round func() error) error {
	n.pool.Block()
	defer n.pool.Unblock()
	return againOnNoQuorum(ctx, func() error {
		if err := n.servingFor(ctx); err != nil {
			return err
		}
		return n.core.recovery.timed(round) // the adaptive recovery budget watches store latency
	})
}

// againOnNoQuorum runs a store round and, when it missed its quorum, once more: the members
// that count change under it — one leaving gracefully answers "store closed" in its last
// moment, a restarted one may not answer a stream opened to its previous process — and the
// second round asks the members as they are now. Both calls are idempotent (the same fenced
// read, the same write).
func againOnNoQuorum(ctx context.Context, round func() error) error {
	err := round()
	if errors.Is(err, remember.ErrNoQuorum) && ctx.Err() == nil {
		err = round()
	}
	return err
}

// servingFor waits until this member may serve, as a turn does before it starts; ErrStopped
// when the member stops first, ctx's error when ctx ends first. A store call starts only
// under the lease: an entity whose process was paused in the middle of a turn, and woke
// after its member was downed and its shard had started elsewhere, would otherwise still
// write (found by the chaos suite, e2e/chaos: an acknowledged save begun 57 ms after the
// member had stopped serving).
func (n *Node) servingFor(ctx context.Context) error {
	for {
		if n.ctx.Err() != nil {
			return ErrStopped
		}
		if int64(time.Since(n.clockBase)) < n.servingUntil.Load() {
			return nil
		}
		n.servingMu.Lock()
		ch := n.servingCh
		n.servingMu.Unlock()
		select {
		case <-ch:
		case <-n.ctx.Done():
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// storeLanded hands the core the keys of records other members wrote that landed in shards
// this member hosts, when reminders are among them (remember.Config.Landed: the store's
// loop, which must not wait for the member's loop).
func (n *Node) storeLanded(keys []string) {
	var rem []string
	for _, k := range keys {
		if isReminderKey(k) {
			rem = append(rem, k)
		}
	}
	if len(rem) > 0 {
		go n.post(StoreLanded{Keys: rem})
	}
}

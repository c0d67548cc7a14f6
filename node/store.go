package node

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/shardmesh/shardmesh/datadir"
	"github.com/shardmesh/shardmesh/membership"
	"github.com/shardmesh/shardmesh/remember"
)

// StoreConfig configures the member's replica of the replicated store (package remember):
// remembered entities and durable entity state.
type StoreConfig struct {
	// WriteMajorityPlus, ReadMajorityPlus and MajorityMinCap size the quorums
	// (coordinator-state.write-majority-plus, read-majority-plus,
	// distributed-data.majority-min-cap); zero values take the defaults 3, 5 and 5.
	// Remembered entities and entity state take plain majorities and MajorityMinCap
	// (majorityPrefixes).
	WriteMajorityPlus, ReadMajorityPlus, MajorityMinCap int
	// Timeout bounds one store round (updating-state-timeout); default 5 s.
	Timeout time.Duration
	// MinFreeSpace is the reserve of free disk space the store keeps (store.min-free-space),
	// in bytes: below it writes are refused. 0: remember.DefaultMinFreeSpace (256 MiB);
	// negative: none.
	MinFreeSpace int64
	// RebuildDamaged (store.rebuild-damaged): a store found damaged at start is moved aside
	// and refilled from the peers instead of failing the start.
	RebuildDamaged bool
	// VoterPrefixes are keys written and read on a plain majority of the voters
	// (membership.Node.VoterWhole) instead of all members. A member adds the split-brain
	// resolver's lease (lease-majority) to them: with the quorums of all members, a cluster
	// of up to 11 members would need every member, a dead one included until it is removed
	// — which waits for the lease.
	VoterPrefixes []string
}

// majorityPrefixes are the keys written and read with plain majorities (at least
// majority-min-cap): remembered entities and shards, as Pekko's remember-entities store
// writes them, and entity state and reminders with them. The plus of coordinator-state is for coordinator
// state: terms, directives, placement history, leases. With the defaults a 7-member
// cluster then saves entity state on 5 replicas, not all 7, so one slow or dead member does
// not hold every save until it is downed.
var majorityPrefixes = []string{datadir.Prefix(datadir.FamilyEntity), datadir.Prefix(datadir.FamilyShard), datadir.Prefix(datadir.FamilyState),
	datadir.Prefix(datadir.FamilyReminder)}

// DefaultStoreTimeout bounds one store round by default (updating-state-timeout).
const DefaultStoreTimeout = 5 * time.Second

// MachineConfig is the store machine's configuration of member self with these settings:
// the quorums, key prefixes and timeout a member's store runs with (the simulation runs its
// members' stores with it too).
func (sc StoreConfig) MachineConfig(self membership.NodeID) remember.MachineConfig {
	timeout := sc.Timeout
	if timeout == 0 {
		timeout = DefaultStoreTimeout
	}
	return remember.MachineConfig{
		Self:              self,
		WriteMajorityPlus: sc.WriteMajorityPlus,
		ReadMajorityPlus:  sc.ReadMajorityPlus,
		MajorityMinCap:    sc.MajorityMinCap,
		MajorityPrefixes:  majorityPrefixes,
		VoterPrefixes:     sc.VoterPrefixes,
		Timeout:           timeout,
		Gated:             true, // only admitted members speak the replica protocol
	}
}

// openStore opens the member's replica in <data-dir>/store.
func (n *Node) openStore(ctx context.Context) error {
	mc := n.cfg.Store.MachineConfig(n.self.Node)
	mc.VoterPrefixes = append(mc.VoterPrefixes, n.cfg.resolverLeaseKeys()...)
	reserve := n.cfg.Store.MinFreeSpace
	if reserve < 0 {
		reserve = remember.NoMinFreeSpace
	}
	st, err := n.openStoreRebuilding(func() (*remember.Store, error) {
		return remember.Open(ctx, remember.Config{
			Dir:               n.dir.Store(),
			Host:              n.host,
			Members:           n.replicaMembers,
			WriteMajorityPlus: mc.WriteMajorityPlus,
			ReadMajorityPlus:  mc.ReadMajorityPlus,
			MajorityMinCap:    mc.MajorityMinCap,
			MajorityPrefixes:  mc.MajorityPrefixes,
			VoterPrefixes:     mc.VoterPrefixes,
			Voters:            n.voters,
			Timeout:           mc.Timeout,
			Logger:            n.log, // the store adds component=store
			Metrics:           n.cfg.Metrics,
			MinFreeSpace:      reserve,
			RefillMarker:      n.dir.File(datadir.RefillFile),
			Returning:         n.self.Incarnation > 1,
			Broken:            n.fail,
			Admitted:          n.admittedMembers,
			Refused:           func(from membership.NodeID) { n.refused(from, remember.Protocol) },
		})
	})
	if err != nil {
		return n.storeOpenError(err)
	}
	n.store = st
	return nil
}

// voters lists the voters' whole (View.Voters): the replicas of the keys under the store's
// VoterPrefixes, the split-brain resolver's lease.
func (n *Node) voters() []membership.NodeID {
	if v := n.View(); v != nil {
		return v.voters
	}
	return nil
}

// replicaMembers lists the members whose replicas count in quorums: every member but those
// leaving, down or removed. A member that leaves gracefully stops counting as soon as it
// starts to leave, so reads and writes do not wait for it while it goes (with the default
// quorums, every member of a cluster of up to five must answer). An unreachable member
// still counts until it is downed, as in Akka. The same slice comes back while the members
// that count do not change (the store then compares nothing).
func (n *Node) replicaMembers() []membership.NodeID {
	if v := n.View(); v != nil {
		return v.replicas
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

// replicasOf returns the members that count in quorums, reusing prev's slice when the same
// members count.
func replicasOf(members []membership.Member, prev *View) []membership.NodeID {
	var was []membership.NodeID
	if prev != nil {
		was = prev.replicas
	}
	return nodesWhere(members, was, func(m membership.Member) bool { return m.Status < membership.Leaving })
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
	span := n.core.startStore(c.turnSpan(), "load")
	err := n.stateRound(ctx, func() (err error) {
		rec, found, err = n.store.GetFenced(ctx, datadir.Key(datadir.FamilyState, c.Type(), string(c.Entity)), uint64(c.Epoch))
		return err
	})
	endSpan(span, err)
	switch {
	case err != nil:
		return nil, fmt.Errorf("load the state of %s %s: %w", c.Type(), c.Entity, err)
	case !found || rec.Deleted:
		return nil, ErrNoState
	}
	return rec.Value, nil
}

// saveState is SaveState on this member's entity workers.
func (n *Node) saveState(ctx context.Context, c *EntityContext, state []byte) error {
	span := n.core.startStore(c.turnSpan(), "save")
	err := n.stateRound(ctx, func() error {
		return n.store.Write(ctx, remember.Write{Key: datadir.Key(datadir.FamilyState, c.Type(), string(c.Entity)), Value: state, Epoch: uint64(c.Epoch)})
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

package node

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/shardmesh/shardmesh/datadir"
	"github.com/shardmesh/shardmesh/engine"
	"github.com/shardmesh/shardmesh/membership"
	"github.com/shardmesh/shardmesh/remember"
	"github.com/shardmesh/shardmesh/shard"
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
}

// majorityPrefixes are the keys written and read with plain majorities (at least
// majority-min-cap): remembered entities and shards, as Pekko's remember-entities store
// writes them, and entity state with them. The plus of coordinator-state is for coordinator
// state: terms, directives, placement history, leases. With the defaults a 7-member
// cluster then saves entity state on 5 replicas, not all 7, so one slow or dead member does
// not hold every save until it is downed.
var majorityPrefixes = []string{datadir.Prefix(datadir.FamilyEntity), datadir.Prefix(datadir.FamilyShard), datadir.Prefix(datadir.FamilyState)}

// openStore opens the member's replica in <data-dir>/store.
func (n *Node) openStore(ctx context.Context) error {
	timeout := n.cfg.Store.Timeout
	if timeout == 0 {
		timeout = 5 * time.Second
	}
	var voterPrefixes []string
	if lm := n.cfg.Membership.SplitBrainResolver; lm.ActiveStrategy == membership.LeaseMajority {
		voterPrefixes = []string{datadir.Key(datadir.FamilyLease, n.resolverLeaseName(lm.LeaseMajority.LeaseName))}
	}
	st, err := remember.Open(ctx, remember.Config{
		Dir:               n.dir.Store(),
		Host:              n.host,
		Members:           n.replicaMembers,
		WriteMajorityPlus: n.cfg.Store.WriteMajorityPlus,
		ReadMajorityPlus:  n.cfg.Store.ReadMajorityPlus,
		MajorityMinCap:    n.cfg.Store.MajorityMinCap,
		MajorityPrefixes:  majorityPrefixes,
		// The split-brain resolver's lease (lease-majority) on a majority of the voters: with
		// the quorums of Members, a cluster of up to 11 members needs every member, a dead one
		// included until it is removed — which waits for the lease.
		VoterPrefixes: voterPrefixes,
		Voters:        n.voters,
		Timeout:       timeout,
		Logger:        n.log, // the store adds component=store
		Metrics:       n.cfg.Metrics,
	})
	if err != nil {
		return fmt.Errorf("open the store in %s: %w", n.dir.Store(), err)
	}
	n.store = st
	return nil
}

// voters lists the voters' whole (View.voters): the replicas of the resolver's lease.
func (n *Node) voters() []peer.ID {
	if v := n.view.Load(); v != nil {
		return v.voters
	}
	return nil
}

// votersOf decodes the peer ids of the voters' whole, reusing prev's when it is the same.
func votersOf(whole []membership.NodeID, prev *View) []peer.ID {
	if prev != nil && len(prev.voters) == len(whole) {
		same := true
		for i, id := range whole {
			if prev.voters[i].String() != string(id) {
				same = false
				break
			}
		}
		if same {
			return prev.voters
		}
	}
	out := make([]peer.ID, 0, len(whole))
	for _, id := range whole {
		if p, err := peer.Decode(string(id)); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// replicaMembers lists the members whose replicas count in quorums: every member but those
// leaving, down or removed. A member that leaves gracefully stops counting as soon as it
// starts to leave, so reads and writes do not wait for it while it goes (with the default
// quorums, every member of a cluster of up to five must answer). An unreachable member
// still counts until it is downed, as in Akka. The store copies the slice.
func (n *Node) replicaMembers() []peer.ID {
	if v := n.View(); v != nil {
		return v.replicas
	}
	return nil
}

// replicasOf decodes the peer ids of members that count in quorums, reusing prev's when the
// same members count (decoding a peer id — base58 and a multihash — showed at 4.6% of a
// store-bound profile when done per round). It returns the ids and the members they are of.
func replicasOf(members []membership.Member, prev *View) ([]peer.ID, []membership.NodeID) {
	counts := func(m membership.Member) bool { return m.Status < membership.Leaving }
	if prev != nil {
		i := 0
		for _, m := range members {
			if !counts(m) {
				continue
			}
			if i >= len(prev.replicaNodes) || prev.replicaNodes[i] != m.Node {
				i = -1
				break
			}
			i++
		}
		if i == len(prev.replicaNodes) {
			return prev.replicas, prev.replicaNodes
		}
	}
	ids := make([]peer.ID, 0, len(members))
	nodes := make([]membership.NodeID, 0, len(members))
	for _, m := range members {
		if !counts(m) {
			continue
		}
		if id, err := peer.Decode(string(m.Node)); err == nil {
			ids = append(ids, id)
			nodes = append(nodes, m.Node)
		}
	}
	return ids, nodes
}

// storeOps carries out what the engine asks of the store of remembered entities, off the
// loop: the remembers of one iteration go out as one write, and every answer comes back to
// the loop as a command.
func (n *Node) storeOps(ops []engine.StoreOp) {
	var remembers, forgets []engine.StoreOp
	for _, op := range ops {
		switch op.Kind {
		case engine.StoreRemember:
			remembers = append(remembers, op)
		case engine.StoreForget:
			forgets = append(forgets, op)
		case engine.StoreLoadEntities:
			go n.loadEntities(op)
		case engine.StoreLoadShards:
			go n.loadShards(op)
		}
	}
	if len(remembers) > 0 {
		go n.rememberEntities(remembers)
	}
	if len(forgets) > 0 {
		go n.forgetEntities(forgets)
	}
}

func (n *Node) rememberEntities(ops []engine.StoreOp) {
	ws := make([]remember.Write, 0, len(ops))
	for _, op := range ops {
		ws = append(ws, remember.Write{Key: datadir.Key(datadir.FamilyEntity, op.Type, string(op.Shard), string(op.Entity))})
		if op.NewShard {
			ws = append(ws, remember.Write{Key: datadir.Key(datadir.FamilyShard, op.Type, string(op.Shard))})
		}
	}
	err := n.recovery.timed(func() error { return n.store.Write(n.ctx, ws...) })
	if err != nil && n.ctx.Err() == nil {
		n.log.Warn("remembering entities failed; retried after shard-failure-backoff", "entities", len(ops), "err", err)
	}
	n.command(func(now time.Time) {
		type key struct {
			typ   string
			shard shard.ID
			gen   uint64
		}
		groups := map[key][]shard.EntityID{}
		var order []key
		for _, op := range ops {
			k := key{op.Type, op.Shard, op.Gen}
			if groups[k] == nil {
				order = append(order, k)
			}
			groups[k] = append(groups[k], op.Entity)
		}
		for _, k := range order {
			n.eng.EntitiesRemembered(now, k.typ, k.shard, k.gen, groups[k], err)
		}
	})
}

func (n *Node) forgetEntities(ops []engine.StoreOp) {
	ws := make([]remember.Write, len(ops))
	for i, op := range ops {
		ws[i] = remember.Write{Key: datadir.Key(datadir.FamilyEntity, op.Type, string(op.Shard), string(op.Entity)), Delete: true}
	}
	if err := n.recovery.timed(func() error { return n.store.Write(n.ctx, ws...) }); err != nil && n.ctx.Err() == nil {
		// Still remembered: the entity starts again with its shard, and passivates again.
		n.log.Warn("forgetting passivated entities failed", "entities", len(ops), "err", err)
	}
}

func (n *Node) loadEntities(op engine.StoreOp) {
	ids, err := scanIDs[shard.EntityID](n, datadir.Prefix(datadir.FamilyEntity, op.Type, string(op.Shard)))
	if err != nil && n.ctx.Err() == nil {
		n.log.Warn("loading remembered entities failed; retried after shard-failure-backoff", "type", op.Type, "shard", op.Shard, "err", err)
	}
	n.command(func(now time.Time) { n.eng.EntitiesLoaded(now, op.Type, op.Shard, op.Gen, ids, err) })
}

func (n *Node) loadShards(op engine.StoreOp) {
	ids, err := scanIDs[shard.ID](n, datadir.Prefix(datadir.FamilyShard, op.Type))
	if err != nil && n.ctx.Err() == nil {
		n.log.Warn("loading remembered shards failed; retried after waiting-for-state-timeout", "type", op.Type, "err", err)
	}
	n.command(func(now time.Time) { n.eng.ShardsLoaded(now, op.Type, ids, err) })
}

// scanIDs reads the keys under prefix from a read quorum and returns what follows it.
func scanIDs[ID ~string](n *Node, prefix string) ([]ID, error) {
	var recs []remember.Record
	err := n.recovery.timed(func() (err error) {
		recs, err = n.store.Scan(n.ctx, prefix)
		return err
	})
	ids := make([]ID, 0, len(recs))
	for _, r := range recs {
		ids = append(ids, ID(strings.TrimPrefix(r.Key, prefix)))
	}
	return ids, err
}

// ErrNoState is LoadState finding no durable state for the entity yet.
var ErrNoState = errors.New("no state stored")

// LoadState reads the entity's durable state from a quorum of replicas and fences it with
// the epoch of the incarnation's shard allocation: from now on a write of the entity's state
// from an incarnation of an earlier allocation is refused. Load once, when the incarnation
// starts (its first message), and keep the state in memory.
func (c *EntityContext) LoadState(ctx context.Context) ([]byte, error) {
	n := c.e.n
	var rec remember.Record
	var found bool
	err := n.stateRound(ctx, func() (err error) {
		rec, found, err = n.store.GetFenced(ctx, datadir.Key(datadir.FamilyState, c.Type, string(c.Entity)), uint64(c.Epoch))
		return err
	})
	switch {
	case err != nil:
		return nil, fmt.Errorf("load the state of %s %s: %w", c.Type, c.Entity, err)
	case !found || rec.Deleted:
		return nil, ErrNoState
	}
	return rec.Value, nil
}

// SaveState stores the entity's durable state on a quorum of replicas before it returns:
// acknowledge what changed only after it. A write from an incarnation whose shard has since
// moved is refused (remember.ErrFenced).
func (c *EntityContext) SaveState(ctx context.Context, state []byte) error {
	n := c.e.n
	err := n.stateRound(ctx, func() error {
		return n.store.Write(ctx, remember.Write{Key: datadir.Key(datadir.FamilyState, c.Type, string(c.Entity)), Value: state, Epoch: uint64(c.Epoch)})
	})
	if err != nil {
		return fmt.Errorf("save the state of %s %s: %w", c.Type, c.Entity, err)
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
		return n.recovery.timed(round) // the adaptive recovery budget watches store latency
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

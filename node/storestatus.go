package node

import (
	"github.com/shardmesh/shardmesh/membership"
	"github.com/shardmesh/shardmesh/remember"
)

// StoreStatus is this member's part of the replicated store, as admins see it (shardctl
// store status, stats): the shard units it hosts with their replica sets and moves, what
// it holds as a replica, and its moves' load and counters.
type StoreStatus struct {
	// ReplicationFactor is sharding.store.replication-factor as the placement applies it.
	ReplicationFactor int
	// Units are the shard units this member hosts (remember.Store.Units), sorted.
	Units []remember.UnitStatus
	// Holdings are the shard units this member holds records of as a replica, sorted, and
	// MetaKeys the metadata keys it holds.
	Holdings []remember.Holding
	MetaKeys int
	// Meta are the members that hold the cluster metadata (the voters).
	Meta []membership.NodeID
	// Moves is the load of moves here: running, queued, and the bound
	// (sharding.store.max-simultaneous-moves).
	Moves remember.MoveLoad
	// Stats are the store's counters (moves started, finished, failed, abandoned, records
	// copied, …).
	Stats remember.Stats
	// MetaGroup is this member's view of the metadata group (Raft): its part, the leader it
	// knows of, the term, the index its replica applied.
	MetaGroup remember.MetaStatus
}

// StoreStatus returns this member's part of the replicated store. It reads the store's
// state on the store's loop, not the member's.
func (n *Node) StoreStatus() StoreStatus {
	st := StoreStatus{ReplicationFactor: n.cfg.Store.ReplicationFactor, Units: n.store.Units(), Moves: n.store.MoveLoad(), Stats: n.store.Stats(),
		MetaGroup: n.store.MetaStatus()}
	st.Holdings, st.MetaKeys = n.store.Holdings()
	if p := n.placement(); p != nil {
		st.ReplicationFactor, st.Meta = p.ReplicationFactor(), p.Meta()
	}
	if st.ReplicationFactor == 0 {
		st.ReplicationFactor = remember.DefaultReplicationFactor
	}
	return st
}

// StoreHoldings returns what this member holds as a replica: the shard units it has
// records of, sorted, and how many metadata keys.
func (n *Node) StoreHoldings() ([]remember.Holding, int) { return n.store.Holdings() }

// Package metaraft runs the cluster metadata (coordinator terms, directives and pins,
// placement history, leases, audit) as one Raft group over the voters, on etcd's
// go.etcd.io/raft/v3 RawNode.
//
// A Member is one voter's replica of the group. It is a pure state machine in the way the
// store's Machine is: the caller passes in the clock (Tick) and frames from peers
// (Receive), and takes out frames to send and answers to its calls (Ready). The group's
// log, HardState and snapshots go through a small Storage seam, written synchronously
// before anything that depends on them is sent, as Raft requires. etcd's raft brings:
//
//   - Propose(data): an entry for the caller's StateMachine, answered with what its Apply
//     returned once the entry is committed and applied here;
//   - ReadIndex(): answered once this replica applied every entry committed before the
//     call (the leader confirms it still leads with a heartbeat round to a quorum), so a
//     read of the state machine then is linearizable;
//   - ChangeVoters(set): a ConfChangeV2 that enters a joint configuration and leaves it
//     automatically (Raft §6 joint consensus), answered once the group's configuration is
//     the set alone;
//   - restarts: a Member made from the storage a previous one wrote carries on from its
//     HardState, ConfState and log.
//
// Members that are not voters hold no Member (they forward metadata calls to the leader):
// the group's heartbeats flow among the voters only. docs/design/metadata-raft.md says how
// the package would replace remember/metaconfig.go.
package metaraft
